// Hostile strings in every string field of the input (getBlock results and archive lines) never
// break or forge the JSON output: every line parses, equals the naive evaluator's, the values the
// writer emits unescaped are alphanumeric, and a value that is dropped is reported by a warning.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import fc from 'fast-check'
import { columnsOf } from '../src/catalogue.ts'
import { formatArchiveLine, readArchive } from '../src/ingest/archive.ts'
import { RECORD_KINDS, type Block, type NormalizationWarning } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { ArchiveLine, RpcTransaction } from '../src/rpc/types.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import type { BlockStore } from '../src/store/types.ts'
import { StaticStore } from '../src/store/static.ts'
import { base58Encode } from '../src/util/base58.ts'
import { datasetOf, tempDir } from './support/cold/util.ts'
import { everything } from './support/http/hostile.ts'
import { naiveQuery } from './support/naive-query.ts'
import { addressOf } from './fixtures/normalize/synth.ts'

const PAYER = addressOf('payer')
const PROG = addressOf('program')
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
const ACC = addressOf('account')
const MINT = addressOf('mint')
const OWNER = addressOf('owner')
const LOADED_W = addressOf('loaded-writable')
const LOADED_R = addressOf('loaded-readonly')
const TABLE = addressOf('table')
/** a valid 64-byte signature derived from `name` */
const sigOf = (name: string): string => base58Encode(createHash('sha512').update(name).digest())
const DATA = base58Encode(Uint8Array.from([0xf8, 0xc6, 0x9e, 0x91, 0xe1, 0x75, 0x87, 0xc8, 1, 2, 3]))

/** A getBlock-shaped block with one record of every kind and every string field set (valid). */
function baseLine(slot: number): ArchiveLine {
  const ok: RpcTransaction = {
    transaction: {
      signatures: [sigOf(`S${slot}`)],
      message: {
        accountKeys: [PAYER, PROG, ACC, MINT, TOKEN],
        header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 2 },
        recentBlockhash: addressOf(`recent${slot}`),
        instructions: [{ programIdIndex: 1, accounts: [0, 2, 5], data: DATA }],
        addressTableLookups: [{ accountKey: TABLE, writableIndexes: [0], readonlyIndexes: [1] }],
      },
    },
    meta: {
      err: null,
      fee: 5000,
      preBalances: [100, 1, 1, 1, 1, 7, 9],
      postBalances: [95, 1, 2, 1, 1, 7, 9],
      innerInstructions: [
        { index: 0, instructions: [{ programIdIndex: 4, accounts: [2, 3], data: '3Bxs', stackHeight: 2 }] },
      ],
      logMessages: [
        `Program ${PROG} invoke [1]`,
        'Program log: hello',
        `Program ${TOKEN} invoke [2]`,
        'Program data: AQ==',
        `Program ${TOKEN} consumed 10 of 200 compute units`,
        `Program ${TOKEN} success`,
        'something else',
        `Program ${PROG} consumed 100 of 300 compute units`,
        `Program ${PROG} success`,
      ],
      preTokenBalances: [
        { accountIndex: 2, mint: MINT, owner: OWNER, programId: TOKEN, uiTokenAmount: { amount: '10', decimals: 6 } },
      ],
      postTokenBalances: [
        { accountIndex: 2, mint: MINT, owner: OWNER, programId: TOKEN, uiTokenAmount: { amount: '20', decimals: 6 } },
      ],
      loadedAddresses: { writable: [LOADED_W], readonly: [LOADED_R] },
      computeUnitsConsumed: 300,
    },
    version: 0,
  }
  const failed: RpcTransaction = {
    transaction: {
      signatures: [sigOf(`F${slot}`)],
      message: {
        accountKeys: [PAYER, PROG],
        header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1 },
        recentBlockhash: addressOf(`recent${slot}`),
        instructions: [{ programIdIndex: 1, accounts: [0], data: '2' }],
      },
    },
    meta: {
      err: { InstructionError: [0, { Custom: 1 }] },
      fee: 5000,
      preBalances: [100, 1],
      postBalances: [95, 1],
      innerInstructions: [],
      logMessages: [`Program ${PROG} invoke [1]`, `Program ${PROG} failed: custom program error: 0x1`],
      preTokenBalances: [],
      postTokenBalances: [],
    },
    version: 'legacy',
  }
  return {
    slot,
    block: {
      blockhash: addressOf(`block${slot}`),
      previousBlockhash: addressOf(`block${slot - 1}`),
      parentSlot: slot - 1,
      blockHeight: slot - 100,
      blockTime: 1_700_000_000 + slot,
      transactions: [ok, failed],
      rewards: [{ pubkey: PAYER, lamports: 5, postBalance: 100, rewardType: 'Fee', commission: null }],
    },
  }
}

type Mutate = (line: ArchiveLine, h: string) => void
const tx = (line: ArchiveLine, i = 0) => (line.block.transactions as RpcTransaction[])[i]
const meta = (line: ArchiveLine, i = 0) => tx(line, i).meta!
const msg = (line: ArchiveLine, i = 0) => tx(line, i).transaction.message

/**
 * Where a hostile string can go: every string field of the input. `text` sites hold free text
 * (rendered escaped: the string must come out intact); the others hold values of a fixed format
 * (a bad value must not come out, and must be reported).
 */
const SITES: { name: string; text?: true; set: Mutate }[] = [
  { name: 'archive hash', set: (l, h) => (l.hash = h) },
  { name: 'blockhash', set: (l, h) => (l.block.blockhash = h) },
  { name: 'previousBlockhash', set: (l, h) => (l.block.previousBlockhash = h) },
  { name: 'signature', set: (l, h) => (tx(l).transaction.signatures[0] = h) },
  { name: 'second signature', set: (l, h) => tx(l).transaction.signatures.push(h) },
  { name: 'fee payer', set: (l, h) => (msg(l).accountKeys[0] = h) },
  { name: 'program id', set: (l, h) => (msg(l).accountKeys[1] = h) },
  { name: 'account key', set: (l, h) => (msg(l).accountKeys[2] = h) },
  { name: 'recentBlockhash', set: (l, h) => (msg(l).recentBlockhash = h) },
  { name: 'version', set: (l, h) => ((tx(l) as { version: unknown }).version = h) },
  {
    name: 'header count',
    set: (l, h) => ((msg(l).header as unknown as Record<string, unknown>).numRequiredSignatures = h),
  },
  { name: 'lookup table key', set: (l, h) => (msg(l).addressTableLookups![0].accountKey = h) },
  { name: 'lookup index', set: (l, h) => ((msg(l).addressTableLookups![0].writableIndexes as unknown[])[0] = h) },
  { name: 'loaded writable', set: (l, h) => (meta(l).loadedAddresses!.writable[0] = h) },
  { name: 'loaded readonly', set: (l, h) => (meta(l).loadedAddresses!.readonly[0] = h) },
  { name: 'instruction data', set: (l, h) => (msg(l).instructions[0].data = h) },
  { name: 'inner instruction data', set: (l, h) => (meta(l).innerInstructions![0].instructions[0].data = h) },
  { name: 'token mint', set: (l, h) => (meta(l).preTokenBalances![0].mint = h) },
  { name: 'token owner', set: (l, h) => (meta(l).postTokenBalances![0].owner = h) },
  { name: 'token program', set: (l, h) => (meta(l).preTokenBalances![0].programId = h) },
  { name: 'token amount', set: (l, h) => (meta(l).postTokenBalances![0].uiTokenAmount.amount = h) },
  { name: 'reward pubkey', set: (l, h) => (l.block.rewards![0].pubkey = h) },
  { name: 'reward type', text: true, set: (l, h) => (l.block.rewards![0].rewardType = h) },
  { name: 'log line', text: true, set: (l, h) => (meta(l).logMessages![1] = 'Program log: ' + h) },
  { name: 'data line', text: true, set: (l, h) => (meta(l).logMessages![3] = 'Program data: ' + h) },
  { name: 'other line', text: true, set: (l, h) => (meta(l).logMessages![6] = h) },
  { name: 'failure text', text: true, set: (l, h) => (meta(l, 1).logMessages![1] = `Program ${PROG} failed: ${h}`) },
  { name: 'err', text: true, set: (l, h) => (meta(l, 1).err = { InstructionError: [0, { Custom: h }] }) },
]

const INJECTION = 'Evil"},"injected":true,"x":"'
const hostile = fc.oneof(
  fc.constantFrom(
    INJECTION,
    '  ',
    ' 12 ',
    '0x10',
    'a"b',
    'back\\slash',
    '\\',
    '\u0000',
    'nul\u0000 ctrl\u001f del\u007f',
    'line\nbreak\r\n',
    '\u2028\u2029',
    '\ud800',
    'lone \udc00 low',
    '🦀 café ✓',
    '</script>',
    'x'.repeat(70_000),
    '"'.repeat(5_000),
    '11111111111111111111111111111111' + '"',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
  fc.string({
    unit: fc.constantFrom('"', '\\', '\n', '\u0000', '\ud800', '\udfff', '\u2028', 'a', '1', '{', '}', ',', ':', '0x'),
    minLength: 1,
    maxLength: 30,
  }),
)

/** every field of every kind selected, every record requested, every block */
const QUERY = { ...everything(0), includeAllBlocks: true }

async function engineLines(store: BlockStore, to: number): Promise<string[]> {
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(QUERY), { to, finalizedOnly: false, bigintsAsNumbers: false })) {
    out.push(b.line)
  }
  return out
}

const PLAIN = /^[0-9A-Za-z]*$/

/** the values the writer emits without escaping are plain alphanumeric ASCII */
function assertSafeColumns(block: Block): void {
  for (const v of [block.header.hash, block.header.parentHash]) assert.match(v, PLAIN)
  for (const kind of RECORD_KINDS) {
    for (const row of block[`${kind}s` as keyof Block] as unknown as Record<string, unknown>[]) {
      for (const def of columnsOf(kind)) {
        const v = row[def.name]
        if (v == null) continue
        if (def.type === 'safeAscii') assert.match(v as string, PLAIN, `${kind}.${def.name}`)
        if (def.type === 'safeAsciiList') for (const x of v as string[]) assert.match(x, PLAIN, `${kind}.${def.name}`)
        if (def.type === 'version') assert.ok(v === 'legacy' || typeof v === 'number', `version ${String(v)}`)
        if (def.name === 'loadedAddresses' || def.name === 'addressTableLookups') {
          // structural writers: addresses and small integers only
          assert.match(JSON.stringify(v), /^[\][{}",:0-9A-Za-z]*$/, `${kind}.${def.name}`)
        }
      }
    }
  }
}

function containsString(v: unknown, s: string): boolean {
  if (typeof v === 'string') return v.includes(s)
  if (Array.isArray(v)) return v.some((x) => containsString(x, s))
  if (v !== null && typeof v === 'object') return Object.values(v).some((x) => containsString(x, s))
  return false
}

/** one case: the block with hostile `h` at `site`, normalized and queried */
async function check(site: (typeof SITES)[number], h: string, line: ArchiveLine): Promise<void> {
  site.set(line, h)
  const { block, warnings } = normalizeBlock(line)
  assertSafeColumns(block)
  // warnings are single-line text (they go to logs): no raw line breaks or control characters
  for (const w of warnings as NormalizationWarning[]) {
    assert.doesNotMatch(w.message + (w.signature ?? ''), /[\u0000-\u001f]/)
  }
  const [got] = await engineLines(new StaticStore([block]), line.slot)
  const [exp] = naiveQuery([block], QUERY, { to: line.slot })
  assert.equal(got, exp.line)
  const parsed = JSON.parse(got)
  assert.ok(!containsString(Object.keys(parsed), 'injected'), 'forged member')
  // never lost silently: the value comes out, or a warning says what was dropped
  const kept = containsString(parsed, h)
  assert.ok(kept || warnings.length > 0, `${site.name}: dropped without a warning`)
  // free text comes out intact (a line break inside a log line may fail the log walk: warned above)
  if (site.text && !/[\n\r\u2028\u2029]/.test(h))
    assert.ok(kept, `${site.name}: ${JSON.stringify(h).slice(0, 80)} lost`)
}

test('JSON injection through a quote in accountKeys[0] gives a warning, valid JSON, no forged member', async () => {
  const line = baseLine(1000)
  msg(line).accountKeys[0] = INJECTION
  const { block, warnings } = normalizeBlock(line)
  // the transaction is skipped with a warning naming slot, index, signature and the value
  assert.equal(block.transactions.length, 1)
  assert.equal(block.transactions[0].transactionIndex, 1)
  const w = warnings.find((x) => x.transactionIndex === 0)
  assert.ok(w, 'no warning for transaction 0')
  assert.equal(w.slot, 1000)
  assert.equal(w.signature, sigOf('S1000'))
  assert.equal(
    w.message,
    `transaction skipped: message.accountKeys[0] is not a 32-byte base58 address: ${JSON.stringify(INJECTION)}`,
  )
  const [got] = await engineLines(new StaticStore([block]), 1000)
  assert.ok(!('injected' in JSON.parse(got)), 'forged member')
})

test('hostile strings in every field, through the normalizer: output parses and equals the naive evaluator', async () => {
  let slot = 10_000
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...SITES), hostile, async (site, h) => {
      await check(site, h, baseLine(++slot))
    }),
    { numRuns: 300 },
  )
})

test('hostile strings through archive files and the on-disk store', async () => {
  // every site with a few fixed and random hostile strings, one block each
  const cases = fc.sample(fc.tuple(fc.constantFrom(...SITES), hostile), { numRuns: 120, seed: 42 })
  for (const site of SITES) cases.push([site, INJECTION], [site, '\ud800"\\\n'])
  const dir = tempDir('solportal-hostile-')
  const file = join(dir, 'hostile.jsonl')
  const direct: Block[] = []
  const text: string[] = []
  let slot = 50_000
  for (const [site, h] of cases) {
    const line = baseLine(++slot)
    site.set(line, h)
    text.push(formatArchiveLine(line))
    direct.push(normalizeBlock(structuredClone(line)).block)
  }
  writeFileSync(file, text.join('\n') + '\n')
  const viaArchive: Block[] = []
  for await (const line of readArchive(file)) {
    const { block } = normalizeBlock(line)
    assertSafeColumns(block)
    viaArchive.push(block)
  }
  assert.deepStrictEqual(viaArchive, direct)
  const exp = naiveQuery(viaArchive, QUERY, { to: slot }).map((b) => b.line)
  for (const store of [new StaticStore(viaArchive, 16), await datasetOf(viaArchive, { targetBlocks: 32 })]) {
    const got = await engineLines(store, slot)
    assert.equal(got.length, exp.length)
    for (let i = 0; i < got.length; i++) {
      assert.equal(got[i], exp[i])
      JSON.parse(got[i])
    }
  }
})

// the checks above are only as good as their sites: each one must reach the output when valid
test('every site reaches the output when its value is valid', async () => {
  const { block, warnings } = normalizeBlock(baseLine(7))
  assert.deepStrictEqual(warnings, [])
  const [got] = await engineLines(new StaticStore([block]), 7)
  const parsed = JSON.parse(got)
  for (const v of [PAYER, PROG, ACC, MINT, OWNER, TOKEN, LOADED_W, LOADED_R, TABLE, DATA, '3Bxs', sigOf('S7')]) {
    assert.ok(containsString(parsed, v), `missing ${v}`)
  }
  for (const v of ['hello', 'AQ==', 'something else', 'custom program error: 0x1', 'Fee']) {
    assert.ok(containsString(parsed, v), `missing ${v}`)
  }
  assert.equal(parsed.transactions.length, 2)
  assert.equal(parsed.rewards.length, 1)
  assert.equal(parsed.tokenBalances.length, 1)
  assert.equal(parsed.logs.length, 3)
})
