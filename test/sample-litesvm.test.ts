/**
 * Structural invariants of the committed sample data/sample/litesvm.jsonl.gz (real programs executed by
 * litesvm, packed into getBlock-shaped blocks). The sample is not regenerated here.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { base58Decode } from '../src/util/base58.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import {
  readArchive,
  validateArchive,
  validateTx,
  newStats,
  accountList,
  type Json,
} from '../scripts/sample/validate.ts'

const lines = readArchive('data/sample/litesvm.jsonl.gz')
const stats = newStats()
const problems = validateArchive(lines, stats)
const txs: Json[] = lines.flatMap((l) => l.block.transactions)

test('every block, transaction and log walk is structurally valid', () => {
  assert.deepEqual(problems.slice(0, 20), [])
})

test('chain: ~300 blocks from slot 300,000,000 with contiguous parents and a few skipped slots', () => {
  assert.ok(lines.length >= 250 && lines.length <= 400, `${lines.length} blocks`)
  assert.equal(lines[0].slot, 300_000_000)
  const skipped = lines.at(-1).slot - lines[0].slot + 1 - lines.length
  assert.ok(skipped > 0 && skipped < lines.length / 5, `${skipped} skipped slots`)
  for (const l of lines) {
    assert.equal(typeof l.block.blockTime, 'number')
    assert.ok(l.block.blockTime > 1_735_689_600 && l.block.blockTime < 1_767_225_600, 'blockTime in 2025')
    const n = l.block.transactions.length
    assert.ok(n >= 5 && n <= 45, `slot ${l.slot}: ${n} transactions`)
    const fee = l.block.rewards.filter((r: Json) => r.rewardType === 'Fee')
    assert.equal(fee.length, 1, `slot ${l.slot}: one Fee reward`)
    assert.ok(fee[0].lamports > 0 && fee[0].postBalance > fee[0].lamports)
  }
})

test('block hashes and signatures are well-formed base58 of 32 and 64 bytes', () => {
  for (const l of lines) assert.match(l.hash, /^[1-9A-HJ-NP-Za-km-z]{43,44}$/)
  for (const t of txs.slice(0, 500))
    for (const s of t.transaction.signatures) assert.match(s, /^[1-9A-HJ-NP-Za-km-z]{86,88}$/)
})

test('all required programs are present, at the top level', () => {
  const top = new Map<string, number>()
  for (const t of txs) {
    const keys = accountList(t)
    for (const ix of t.transaction.message.instructions)
      top.set(keys[ix.programIdIndex], (top.get(keys[ix.programIdIndex]) ?? 0) + 1)
  }
  for (const p of [
    '11111111111111111111111111111111',
    'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
    'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
    'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
    'ComputeBudget111111111111111111111111111111',
    'AddressLookupTab1e1111111111111111111111111',
  ])
    assert.ok((top.get(p) ?? 0) > 0, `${p} missing`)
})

test('token instructions cover the basic SPL Token / Token-2022 set, for both programs', () => {
  // first data byte = instruction tag: 20 InitializeMint2, 7 MintTo, 3 Transfer, 12 TransferChecked, 4 Approve,
  // 8 Burn, 9 CloseAccount, 6 SetAuthority, 18 InitializeAccount3
  const tags = {
    TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA: new Set<number>(),
    TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb: new Set<number>(),
  } as Record<string, Set<number>>
  const firstByte = (d: string) => base58Decode(d)[0]
  for (const t of txs) {
    if (t.meta.err !== null) continue
    const keys = accountList(t)
    for (const ix of t.transaction.message.instructions) {
      const set = tags[keys[ix.programIdIndex]]
      if (set && ix.data.length > 0) set.add(firstByte(ix.data))
    }
  }
  for (const [program, set] of Object.entries(tags))
    for (const tag of [20, 7, 3, 12, 4, 8, 9, 6, 18])
      assert.ok(set.has(tag), `${program}: no instruction with tag ${tag}`)
})

test('failed transactions: custom errors, inside CPIs, with never-run instructions after them', () => {
  assert.ok(stats.failed >= 50, `${stats.failed} failed`)
  assert.ok(stats.failedInCpi >= 10, `${stats.failedInCpi} failed inside a CPI`)
  assert.ok(stats.failedWithSkipped >= 10, `${stats.failedWithSkipped} with skipped top-level instructions`)
  for (const t of txs.filter((x) => x.meta.err !== null)) {
    const [k, kind] = t.meta.err.InstructionError
    assert.ok(Number.isInteger(k) && k < t.transaction.message.instructions.length)
    assert.ok(kind !== undefined)
    // nothing but the fee moved
    const changed = t.meta.preBalances
      .map((b: number, i: number) => (b !== t.meta.postBalances[i] ? i : -1))
      .filter((i: number) => i >= 0)
    assert.deepEqual(changed, [0])
    assert.deepEqual(t.meta.preTokenBalances, t.meta.postTokenBalances)
  }
})

test('nested CPI: inner instructions at stack height 2 under ATA creation and lookup-table extension', () => {
  assert.ok(stats.inner > 1000, `${stats.inner} inner instructions`)
  assert.equal(stats.maxStackHeight, 2)
  const ata = txs.find(
    (t) =>
      t.meta.err === null &&
      t.meta.innerInstructions.some(
        (g: Json) =>
          accountList(t)[t.transaction.message.instructions[g.index].programIdIndex] ===
          'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
      ),
  )
  assert.ok(ata, 'an ATA creation with inner instructions')
})

test('v0 transactions with address lookup tables resolve loaded addresses', () => {
  assert.ok(stats.v0 > 100 && stats.v0 < stats.txs, `${stats.v0} v0 of ${stats.txs}`)
  assert.ok(stats.withLoaded >= 20, `${stats.withLoaded} with loaded addresses`)
  const t = txs.find((x) => x.meta.loadedAddresses.writable.length > 0)!
  const keys = accountList(t)
  assert.ok(t.meta.preBalances.length === keys.length && keys.length > t.transaction.message.accountKeys.length)
})

test('version 1 transactions from block 120 on: transactionConfig, no lookups, executed by litesvm', () => {
  assert.ok(stats.v1 >= 100, `${stats.v1} v1`)
  const first = lines.findIndex((l) => l.block.transactions.some((t: Json) => t.version === 1))
  assert.equal(first, 120)
  const v1 = txs.filter((t) => t.version === 1)
  assert.ok(v1.every((t) => t.transaction.message.transactionConfig.computeUnitLimit > 0))
  assert.ok(v1.some((t) => t.transaction.message.transactionConfig.priorityFee === null))
  assert.ok(v1.some((t) => t.transaction.message.transactionConfig.priorityFee > 0))
  assert.ok(v1.some((t) => t.transaction.message.transactionConfig.heapSize !== null))
  assert.ok(
    v1.some((t) => t.meta.err !== null),
    'a failed v1 transaction',
  )
  assert.ok(
    v1.some((t) => t.meta.logMessages.some((m: string) => m.startsWith('Program log: Memo'))),
    'a v1 transaction running the Memo program',
  )
  // the compute unit limit the message declares is the meter the programs ran under
  const t = v1.find((x) => x.meta.logMessages.some((m: string) => CONSUMED_OF.test(m)))!
  const [, used, of] = CONSUMED_OF.exec(t.meta.logMessages.find((m: string) => CONSUMED_OF.test(m)))!
  const limit = t.transaction.message.transactionConfig.computeUnitLimit
  assert.ok(
    Number(of) <= limit && Number(of) > limit - 1000 && Number(used) <= Number(of),
    `${used} of ${of}, ${limit}`,
  )
})

const CONSUMED_OF = /^Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr consumed (\d+) of (\d+) compute units$/

test('fees follow the runtime rules: 5000 per signature plus priority fee', () => {
  let withPriority = 0
  for (const t of txs) {
    const keys = accountList(t)
    const signatureFees = 5000n * BigInt(t.transaction.message.header.numRequiredSignatures)
    if (t.version === 1) {
      // a v1 message declares its total priority fee
      const fee = t.transaction.message.transactionConfig.priorityFee
      assert.equal(BigInt(t.meta.fee), signatureFees + BigInt(fee ?? 0))
      continue
    }
    let limit: number | undefined
    let price = 0n
    for (const ix of t.transaction.message.instructions) {
      if (keys[ix.programIdIndex] !== 'ComputeBudget111111111111111111111111111111') continue
      const b = base58Decode(ix.data)
      const dv = new DataView(b.buffer)
      if (b[0] === 2) limit = dv.getUint32(1, true)
      if (b[0] === 3) price = dv.getBigUint64(1, true)
    }
    const priority = limit === undefined ? 0n : (price * BigInt(limit) + 999_999n) / 1_000_000n
    if (priority > 0n) withPriority++
    assert.equal(BigInt(t.meta.fee), 5000n * BigInt(t.transaction.message.header.numRequiredSignatures) + priority)
  }
  assert.ok(withPriority > 100)
})

test('token balances: pre/post match the token accounts of the account list', () => {
  let withTokens = 0
  for (const t of txs) {
    const n = accountList(t).length
    for (const tb of [...t.meta.preTokenBalances, ...t.meta.postTokenBalances]) {
      assert.ok(tb.accountIndex < n)
      assert.ok(
        ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb'].includes(
          tb.programId,
        ),
      )
      const { amount, decimals, uiAmount, uiAmountString } = tb.uiTokenAmount
      assert.equal(uiAmount, amount === '0' ? null : Number(uiAmountString))
      const [int, frac = ''] = uiAmountString.split('.')
      assert.ok(frac.length <= decimals && !frac.endsWith('0'), uiAmountString)
      assert.equal(BigInt(int + frac.padEnd(decimals, '0')), BigInt(amount))
    }
    if (t.meta.postTokenBalances.length > 0) withTokens++
  }
  assert.ok(withTokens > 1000)
})

test('the validator rejects broken data (it can fail)', () => {
  const tx = structuredClone(txs.find((t) => t.meta.innerInstructions.length > 0))
  const bad: string[] = []
  tx.meta.innerInstructions[0].instructions[0].stackHeight = 3
  tx.transaction.message.instructions[0].accounts.push(99)
  tx.meta.postBalances.pop()
  validateTx(tx, 'broken', bad)
  assert.ok(
    bad.some((m) => m.includes('stackHeight 3')),
    bad.join('\n'),
  )
  assert.ok(bad.some((m) => m.includes('out of range')))
  assert.ok(bad.some((m) => m.includes('balance lists')))
  const chain = structuredClone(lines.slice(0, 3))
  chain[2].block.previousBlockhash = chain[0].hash
  assert.ok(validateArchive(chain).some((m) => m.includes('previousBlockhash')))
})

test('the normalizer takes the sample like mainnet: no warnings, every transaction and instruction kept', () => {
  let instructions = 0
  let transactions = 0
  let failingTopLevel = 0
  let uncommitted = 0
  for (const line of lines) {
    const r = normalizeBlock(line)
    assert.deepEqual(r.warnings, [], `slot ${line.slot}`)
    instructions += r.block.instructions.length
    transactions += r.block.transactions.length
    for (const ix of r.block.instructions) {
      if (ix.error !== null && ix.instructionAddress.length === 1) failingTopLevel++
      if (!ix.isCommitted) uncommitted++
    }
  }
  assert.equal(transactions, stats.txs)
  // every failed transaction has exactly one failing top-level instruction, with the error text of its log
  assert.equal(failingTopLevel, stats.failed)
  assert.ok(uncommitted > stats.failed)
  assert.equal(instructions, stats.topLevel + stats.inner)
})
