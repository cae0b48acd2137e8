/**
 * Invariants of normalized blocks over every real block (votes dropped and kept) and over a
 * synthetic block with u64 values above 2^53.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { formatArchiveLine } from '../src/ingest/archive.ts'
import type { Block } from '../src/model.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { ArchiveLine, RpcTransaction } from '../src/rpc/types.ts'
import { realBlocks } from './fixtures/normalize/blocks.ts'
import { PA, PB, addressOf, invoke, log, success, synthBlock } from './fixtures/normalize/synth.ts'

function cmpAddr(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i]
  return a.length - b.length
}
const key = (tx: number, addr: number[]) => tx + ':' + addr.join('.')

function checkInvariants(name: string, line: ArchiveLine, b: Block): void {
  const raw = (line.block.transactions ?? []) as RpcTransaction[]
  // transactions strictly ascending by index
  for (let i = 1; i < b.transactions.length; i++) {
    assert.ok(b.transactions[i - 1].transactionIndex < b.transactions[i].transactionIndex, `${name}: tx order`)
  }
  const txByIndex = new Map(b.transactions.map((t) => [t.transactionIndex, t]))
  // instructions: (tx, address) strictly ascending, prefix first
  for (let i = 1; i < b.instructions.length; i++) {
    const p = b.instructions[i - 1]
    const q = b.instructions[i]
    assert.ok(
      p.transactionIndex < q.transactionIndex ||
        (p.transactionIndex === q.transactionIndex && cmpAddr(p.instructionAddress, q.instructionAddress) < 0),
      `${name}: instruction order at ${i}`,
    )
  }
  const insKeys = new Set(b.instructions.map((i) => key(i.transactionIndex, i.instructionAddress)))
  const topCu = new Map<number, bigint>()
  const topCount = new Map<number, number>()
  for (const i of b.instructions) {
    const t = txByIndex.get(i.transactionIndex)
    assert.ok(t, `${name}: instruction of a missing transaction`)
    assert.ok(i.instructionAddress.length >= 1 && i.instructionAddress.every((x) => Number.isInteger(x) && x >= 0))
    // inner instructions nest under an existing parent
    if (i.instructionAddress.length > 1) {
      assert.ok(
        insKeys.has(key(i.transactionIndex, i.instructionAddress.slice(0, -1))),
        `${name}: orphan ${key(i.transactionIndex, i.instructionAddress)}`,
      )
    } else {
      topCount.set(i.transactionIndex, (topCount.get(i.transactionIndex) ?? 0) + 1)
      if (i.computeUnitsConsumed !== null)
        topCu.set(i.transactionIndex, (topCu.get(i.transactionIndex) ?? 0n) + i.computeUnitsConsumed)
    }
    assert.equal(i.isCommitted, t.err === null)
    assert.ok(i.programId.length > 0 && i.accounts.every((a) => a.length > 0), `${name}: unresolved account`)
    // discriminators are prefixes of dataPrefix, with the exact lengths
    for (const [d, n] of [
      [i.d1, 4],
      [i.d2, 6],
      [i.d4, 10],
      [i.d8, 18],
    ] as [string | null, number][]) {
      if (d !== null) {
        assert.equal(d.length, n)
        assert.ok(i.dataPrefix.startsWith(d))
      } else assert.ok(i.dataPrefix.length < n)
    }
    assert.match(i.dataPrefix, /^0x([0-9a-f]{2}){0,16}$/)
  }
  const insPerTx = new Map<number, number>()
  for (const i of b.instructions) insPerTx.set(i.transactionIndex, (insPerTx.get(i.transactionIndex) ?? 0) + 1)
  const balPerTx = new Map<number, number>()
  for (const x of b.balances) balPerTx.set(x.transactionIndex, (balPerTx.get(x.transactionIndex) ?? 0) + 1)
  for (const t of b.transactions) {
    // one record per top-level instruction; their CU adds up to at most the transaction's
    const rt = raw[t.transactionIndex]
    assert.equal(
      topCount.get(t.transactionIndex) ?? 0,
      rt.transaction.message.instructions.length,
      `${name}: top-level count of tx ${t.transactionIndex}`,
    )
    assert.ok(
      (topCu.get(t.transactionIndex) ?? 0n) <= t.computeUnitsConsumed || t.computeUnitsConsumed === 0n,
      `${name}: CU of tx ${t.transactionIndex}`,
    )
    // every inner instruction of the node is emitted
    const innerCount = (rt.meta?.innerInstructions ?? []).reduce((s, p) => s + p.instructions.length, 0)
    assert.equal(insPerTx.get(t.transactionIndex) ?? 0, rt.transaction.message.instructions.length + innerCount)
    assert.equal(t.feePayer, t.accountKeys[0])
    assert.deepStrictEqual(t.signatures, rt.transaction.signatures)
    // balances: exactly the changed accounts
    const changed = rt.meta!.preBalances.filter((x, k) => BigInt(x) !== BigInt(rt.meta!.postBalances[k])).length
    assert.equal(balPerTx.get(t.transactionIndex) ?? 0, changed)
  }
  // logs: (tx, logIndex) strictly ascending; attributed to an existing instruction with its programId
  const insByKey = new Map(b.instructions.map((i) => [key(i.transactionIndex, i.instructionAddress), i]))
  for (let k = 0; k < b.logs.length; k++) {
    const l = b.logs[k]
    if (k > 0) {
      const p = b.logs[k - 1]
      assert.ok(
        p.transactionIndex < l.transactionIndex ||
          (p.transactionIndex === l.transactionIndex && p.logIndex < l.logIndex),
        `${name}: log order`,
      )
    }
    const ins = insByKey.get(key(l.transactionIndex, l.instructionAddress))
    assert.ok(ins, `${name}: log ${l.transactionIndex}/${l.logIndex} without instruction`)
    assert.equal(l.programId, ins.programId)
    const rawLine = raw[l.transactionIndex].meta!.logMessages![l.logIndex]
    if (l.kind === 'other') assert.equal(l.message, rawLine)
    else assert.equal(rawLine, (l.kind === 'log' ? 'Program log: ' : 'Program data: ') + l.message)
  }
  for (const list of [b.balances, b.tokenBalances]) {
    for (let k = 1; k < list.length; k++) {
      const p = list[k - 1]
      const q = list[k]
      assert.ok(
        p.transactionIndex < q.transactionIndex || (p.transactionIndex === q.transactionIndex && p.account < q.account),
        `${name}: balance order`,
      )
    }
  }
  for (const tb of b.tokenBalances) {
    assert.ok(tb.preMint !== null || tb.postMint !== null)
    assert.equal(tb.preMint === null, tb.preAmount === null)
    assert.equal(tb.postMint === null, tb.postAmount === null)
  }
  for (let k = 1; k < b.rewards.length; k++) {
    const p = b.rewards[k - 1]
    const q = b.rewards[k]
    assert.ok(
      p.pubkey < q.pubkey ||
        (p.pubkey === q.pubkey && (p.rewardType === null || (q.rewardType !== null && p.rewardType <= q.rewardType))),
    )
  }
}

for (const { name, line } of realBlocks()) {
  for (const includeVotes of [false, true]) {
    test(`invariants: ${name}${includeVotes ? ' (votes kept)' : ''}`, () => {
      const { block } = normalizeBlock(line, { includeVotes })
      checkInvariants(name, line, block)
    })
  }
}

test('u64 values above 2^53 survive archive text → parseJsonExact → normalize exactly', () => {
  const big = 18446744073709551615n // u64 max
  const big2 = 9007199254740993n // 2^53 + 1: not representable as a double
  const line = synthBlock([
    {
      top: [{ p: PA }, { p: PB }],
      logs: [
        invoke(PA, 1),
        log('x'),
        'Program PAX consumed 1 of 2 compute units',
        success(PA),
        invoke(PB, 1),
        success(PB),
      ],
    },
  ])
  const tx = line.block.transactions![0]
  const meta = tx.meta!
  meta.fee = big
  meta.computeUnitsConsumed = big2
  meta.preBalances = [big, 1n, 1, 1, 1]
  meta.postBalances = [big2, 1, 1, 1, 1]
  meta.preTokenBalances = [
    { accountIndex: 1, mint: addressOf('M'), uiTokenAmount: { amount: big.toString(), decimals: 0 } },
  ]
  meta.postTokenBalances = [
    { accountIndex: 1, mint: addressOf('M'), uiTokenAmount: { amount: big2.toString(), decimals: 0 } },
  ]
  meta.logMessages = [
    invoke(PA, 1),
    `Program ${PA} consumed ${big} of ${big} compute units`,
    success(PA),
    invoke(PB, 1),
    success(PB),
  ]
  line.block.rewards = [
    { pubkey: addressOf('R'), lamports: -9223372036854775808n, postBalance: big, rewardType: '', commission: 5 },
  ]
  const text = formatArchiveLine(line)
  assert.ok(text.includes('"fee":18446744073709551615'))
  assert.ok(text.includes('"preBalances":[18446744073709551615,1,1,1,1]'))
  const { block, warnings } = normalizeBlock(parseJsonExact(text) as ArchiveLine)
  assert.deepStrictEqual(warnings, [])
  assert.equal(block.transactions[0].fee, big)
  assert.equal(block.transactions[0].computeUnitsConsumed, big2)
  assert.deepStrictEqual(
    block.balances.map((x) => [x.pre, x.post]),
    [[big, big2]],
  )
  assert.deepStrictEqual([block.tokenBalances[0].preAmount, block.tokenBalances[0].postAmount], [big, big2])
  assert.equal(block.instructions[0].computeUnitsConsumed, big)
  assert.deepStrictEqual(block.rewards, [
    { pubkey: addressOf('R'), lamports: -9223372036854775808n, postBalance: big, rewardType: null, commission: 5 },
  ])
})

test('a malformed transaction never throws out of normalizeBlock: it is skipped with a warning', () => {
  const line = synthBlock([
    { top: [{ p: PA }], logs: [invoke(PA, 1), success(PA)] },
    { top: [{ p: PB }], logs: [invoke(PB, 1), success(PB)] },
  ])
  ;(line.block.transactions![0] as unknown as { transaction: unknown }).transaction = null
  line.block.transactions![1].meta!.fee = 'not a number'
  const { block, warnings } = normalizeBlock(line)
  // tx 0 cannot be read at all: skipped; tx 1 is kept with fee 0
  assert.deepStrictEqual(
    block.transactions.map((t) => [t.transactionIndex, t.fee]),
    [[1, 0n]],
  )
  assert.deepStrictEqual(
    block.instructions.map((i) => i.transactionIndex),
    [1],
  )
  assert.deepStrictEqual(
    warnings.map((w) => [w.slot, w.transactionIndex]),
    [
      [1000, 0],
      [1000, 1],
    ],
  )
  assert.match(warnings[0].message, /transaction skipped: no transaction.message/)
  assert.match(warnings[1].message, /meta.fee is not an integer \("not a number"\): 0 used/)
  // an instruction with an out-of-range account index: resolved to '' with a warning, rest intact
  const l2 = synthBlock([{ top: [{ p: PA }], logs: [invoke(PA, 1), success(PA)] }])
  l2.block.transactions![0].transaction.message.instructions[0].accounts = [0, 99]
  const r2 = normalizeBlock(l2)
  assert.deepStrictEqual(r2.block.instructions[0].accounts, [r2.block.transactions[0].accountKeys[0], ''])
  assert.match(r2.warnings[0].message, /account index out of range/)
  // a block without transactions or header fields
  const r3 = normalizeBlock({ slot: 5, block: {} as never })
  assert.equal(r3.block.header.number, 5)
  assert.equal(r3.block.header.height, null)
  assert.equal(r3.block.header.timestamp, 0)
  assert.ok(r3.warnings.length > 0)
})

test('fuzz: random corruption of real transactions never throws out of normalizeBlock', () => {
  const src = realBlocks()
  const small = src.filter((b) => b.name.startsWith('chainstorage/')).map((b) => b.line)
  // plus 40 transactions of the whole block (failed, v0, truncated ones included)
  const whole = src[0].line
  const picked = [9, 32, 210, 229, 440, 10, 265, ...Array.from({ length: 33 }, (_, k) => 6 + k * 13)]
  small.push({ ...whole, block: { ...whole.block, transactions: picked.map((i) => whole.block.transactions![i]) } })
  const replacements: unknown[] = [
    null,
    undefined,
    'x',
    -1,
    1.5,
    [],
    {},
    '123456789012345678901234',
    true,
    [null],
    [{}],
    'Log truncated',
  ]
  const paths = (v: unknown, prefix: (string | number)[], out: (string | number)[][], depth: number): void => {
    if (depth > 7 || v === null || typeof v !== 'object') return
    const entries = Array.isArray(v) ? v.slice(0, 6).map((x, i) => [i, x] as const) : Object.entries(v)
    for (const [k, x] of entries) {
      out.push([...prefix, k])
      paths(x, [...prefix, k], out, depth + 1)
    }
  }
  const pathsOf = small.map((l) => {
    const all: (string | number)[][] = []
    paths(l.block, [], all, 0)
    return all
  })
  fc.assert(
    fc.property(
      fc.nat(small.length - 1),
      fc.nat(),
      fc.nat(replacements.length - 1),
      fc.integer({ min: 1, max: 3 }),
      (bi, pi, ri, count) => {
        const line = structuredClone(small[bi])
        const all = pathsOf[bi]
        for (let c = 0; c < count; c++) {
          const path = all[(pi + c * 7919) % all.length]
          let target = line.block as unknown as Record<string | number, unknown>
          for (const k of path.slice(0, -1)) {
            const next = target?.[k]
            if (next === null || typeof next !== 'object') return
            target = next as Record<string | number, unknown>
          }
          target[path[path.length - 1]] = structuredClone(replacements[ri])
        }
        const r = normalizeBlock(line, { includeVotes: ri % 2 === 0 })
        assert.ok(Array.isArray(r.block.transactions))
        for (const w of r.warnings) assert.equal(typeof w.message, 'string')
      },
    ),
    { numRuns: 600 },
  )
})

test('balances and token balances of a transaction sorted by account, stable, short lists and long ones', () => {
  // 3, 24 (the insertion sort) and 40 (the copy and sort) changed accounts, keys in random order
  for (const n of [3, 24, 40]) {
    const line = synthBlock([{ top: [{ p: PA }], logs: [invoke(PA, 1), success(PA)] }])
    const tx = line.block.transactions![0] as RpcTransaction
    const extra = Array.from({ length: n }, (_, i) => addressOf(`sort-${n}-${i}`))
    const keys = [...tx.transaction.message.accountKeys, ...extra]
    tx.transaction.message.accountKeys = keys
    tx.meta!.preBalances = keys.map((_, i) => 100 + i)
    tx.meta!.postBalances = keys.map((_, i) => (i === 1 ? 100 + i : 200 + i))
    const mint = addressOf('mint')
    const tb = (i: number, amount: string) => ({ accountIndex: i, mint, uiTokenAmount: { amount, decimals: 6 } })
    tx.meta!.preTokenBalances = extra.map((_, k) => tb(5 + k, '1'))
    tx.meta!.postTokenBalances = extra.map((_, k) => tb(5 + ((k + 1) % n), '2'))
    const b = normalizeBlock(line).block
    const accounts = b.balances.map((x) => x.account)
    assert.equal(accounts.length, keys.length - 1)
    assert.deepStrictEqual(accounts, [...accounts].sort())
    assert.deepStrictEqual(new Set(accounts), new Set(keys.filter((_, i) => i !== 1)))
    for (const x of b.balances) assert.equal(x.post - x.pre, 100n)
    const tAccounts = b.tokenBalances.map((x) => x.account)
    assert.deepStrictEqual(tAccounts, [...extra].sort())
    for (const x of b.tokenBalances) assert.deepStrictEqual([x.preAmount, x.postAmount], [1n, 2n])
  }
})

test('a balance that is not an integer: 0 used, the warning names the list and the index', () => {
  const line = synthBlock([{ top: [{ p: PA }], logs: [invoke(PA, 1), success(PA)] }])
  const tx = line.block.transactions![0] as RpcTransaction
  tx.meta!.preBalances = [10, 1, 'x' as unknown as number, 1, 1]
  tx.meta!.postBalances = [5, 1, 1, 1, 1.5]
  const { block, warnings } = normalizeBlock(line)
  assert.deepStrictEqual(
    warnings.map((w) => w.message),
    ['meta.preBalances[2] is not an integer ("x"): 0 used', 'meta.postBalances[4] is not an integer (1.5): 0 used'],
  )
  assert.deepStrictEqual(
    block.balances.map((b) => [b.account, b.pre, b.post]),
    [
      [PB, 0n, 1n],
      [block.transactions[0].accountKeys[4], 1n, 0n],
      [block.transactions[0].accountKeys[0], 10n, 5n],
    ].sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
  )
})
