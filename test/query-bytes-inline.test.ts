/**
 * The compiled byte writers copy the cold store's stored forms inline (plain, dictionary and list
 * tokens 8 bytes at a time or in one `set`, 64-bit integers as digits in place, instruction
 * addresses): values at the edges of each of those paths render byte for byte as the in-memory
 * store renders them, with u64 quoted and as numbers.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formTag, LineBuf } from '../src/util/json-bytes.ts'
import { listStep } from '../src/query/render.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import type { Block } from '../src/model.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { datasetOf } from './support/cold/util.ts'
import { everything } from './support/http/hostile.ts'
import { randomBlocks } from './support/random-blocks.ts'

/** u64 values around the digit writer's branches: 10, 2^32, 2^53 and 2^64 */
const U64 = [
  0n,
  9n,
  10n,
  4294967295n,
  4294967296n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 63n,
  2n ** 64n - 1n,
]
/** i64 values: negative ones and those around 2^32 take the exact path */
const I64 = [0n, 1n, -1n, 4294967295n, 4294967296n, -4294967296n, 2n ** 53n, -(2n ** 63n), 2n ** 63n - 1n]
/** token lengths around the 8-byte copy and the one-`set` copy (160 bytes) */
const TEXTS = [
  '',
  'a',
  'ab',
  'abc',
  'abcd',
  'abcde',
  'x'.repeat(157),
  'y'.repeat(158),
  'z'.repeat(159),
  'w'.repeat(3000),
  'quote " backslash \\ tab \t nl \n ctrl \u0001 del \u007f',
  'é ü 漢字 😀 '.repeat(20),
]

function edgeBlocks(): Block[] {
  const blocks = randomBlocks(77, { blocks: 12, maxTx: 12 })
  let k = 0
  let rk = 0
  for (const b of blocks) {
    for (const t of b.transactions) {
      t.fee = U64[k % U64.length]
      t.computeUnitsConsumed = U64[(k + 3) % U64.length]
      k++
    }
    for (const ins of b.instructions) {
      ins.computeUnitsConsumed = k % 4 === 0 ? null : U64[k % U64.length]
      ins.error = k % 3 === 0 ? null : TEXTS[k % TEXTS.length]
      if (k % 5 === 0) ins.accounts = []
      if (k % 7 === 0) ins.instructionAddress = [k % 300, 2 ** 31 + k, 0, 9, 10]
      k++
    }
    for (const l of b.logs) {
      l.message = TEXTS[k++ % TEXTS.length]
    }
    for (const x of b.balances) {
      x.pre = U64[k++ % U64.length]
      x.post = U64[k % U64.length]
    }
    for (const x of b.tokenBalances) {
      x.preAmount = k % 4 === 0 ? null : U64[k % U64.length]
      x.postAmount = U64[k++ % U64.length]
    }
    // a reward per i64 value in the first block, its pubkeys in order (src/normalize: sorted by pubkey)
    if (rk === 0)
      b.rewards = I64.map((v, j) => ({
        pubkey: 'Reward' + String(j).padStart(2, '0'),
        lamports: v,
        postBalance: U64[j % U64.length],
        rewardType: j % 2 === 0 ? null : 'Staking',
        commission: j % 3 === 0 ? null : j,
      }))
    for (const r of b.rewards) {
      r.lamports = I64[rk++ % I64.length]
      r.postBalance = U64[k++ % U64.length]
    }
  }
  assert.ok(rk >= I64.length, `${rk} rewards`)
  return blocks
}

async function lines(store: BlockStore, body: Record<string, unknown>, bigintsAsNumbers: boolean, to: number) {
  const out: { line: string; bytes?: Buffer; data?: Buffer }[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to, finalizedOnly: false, bigintsAsNumbers })) {
    out.push({ line: b.line, bytes: b.bytes, data: (b as { data?: Buffer }).data })
  }
  return out
}

test('values at the edges of the inline copies render as the in-memory store renders them', async () => {
  const blocks = edgeBlocks()
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const cold = await datasetOf(blocks, { targetBlocks: 5 })
  const memory = new StaticStore(blocks, 5)

  // the columns come with their stored form: the writers copy them inline
  const tags = new Set<string>()
  for await (const c of cold.chunks(first, last, false)) {
    for (const [kind, field] of [
      ['transaction', 'fee'],
      ['transaction', 'signatures'],
      ['transaction', 'feePayer'],
      ['instruction', 'data'],
      ['instruction', 'instructionAddress'],
      ['instruction', 'computeUnitsConsumed'],
      ['reward', 'lamports'],
    ] as const) {
      const form = c.table(kind).tokens!(field, false)?.form
      assert.ok(form !== undefined, `${kind}.${field} has a stored form`)
      tags.add(formTag(form)[0])
    }
  }
  assert.deepEqual([...tags].sort(), ['a', 'd', 'i', 'l', 'p'])

  for (const body of [
    everything(first),
    { ...everything(first), includeAllBlocks: true },
    { fromBlock: first, fields: { log: { message: true } }, logs: [{}] },
  ]) {
    for (const bigints of [false, true]) {
      const want = await lines(memory, body, bigints, last)
      const got = await lines(cold, body, bigints, last)
      assert.ok(want.length > 0)
      assert.equal(got.length, want.length)
      for (let i = 0; i < got.length; i++) {
        assert.ok(got[i].bytes instanceof Buffer, 'rendered as bytes')
        assert.equal(got[i].bytes!.toString('utf8'), want[i].line, `line ${i}, bigintsAsNumbers ${bigints}`)
      }
    }
  }
  // lines of 64 KiB and more are handed over by the line buffer (the next goes to a new buffer):
  // every line held to the end keeps its bytes, and comes with its newline
  const held = await lines(cold, everything(first), false, last)
  assert.ok(held.filter((l) => l.bytes!.length >= 65536).length >= 3, 'large lines')
  assert.ok(held.filter((l) => l.bytes!.length < 65536).length >= 1, 'small lines')
  const want = await lines(memory, everything(first), false, last)
  for (let i = 0; i < held.length; i++) {
    assert.equal(held[i].bytes!.toString('utf8'), want[i].line)
    assert.equal(held[i].data!.toString('utf8'), want[i].line + '\n')
  }
  // the texts, the u64 and the i64 values above all appear in the output
  const all = held.map((l) => l.line).join('\n')
  for (const t of TEXTS) assert.ok(all.includes(JSON.stringify(t)), JSON.stringify(t).slice(0, 40))
  for (const v of U64) assert.ok(all.includes(`"${v}"`), `${v}`)
  for (const v of I64) assert.ok(all.includes(`"lamports":"${v}"`), `${v}`)
  await cold.close()
})

test('a list longer than the line buffer, of tokens of several lengths, renders whole (room made once per list)', async () => {
  // listStep: the longest token of a dictionary and its comma (token k: [toff[k], toff[k + 1] - 1))
  assert.equal(listStep(new Uint32Array([0, 3, 11, 13])), 8)
  assert.equal(listStep(new Uint32Array([0])), 0)
  const blocks = randomBlocks(91, { blocks: 4, maxTx: 6 })
  // lists of 2,000-6,000 accounts (the line buffer starts at 64 KiB), their lengths 1 to 120 bytes,
  // the longest ones in rows of their own, and lists of one long or one short account
  let k = 0
  const account = (j: number) => String.fromCharCode(65 + (j % 26)) + String(j).padStart(1 + (j % 7) * (j % 17), '9')
  for (const b of blocks) {
    for (const ins of b.instructions) {
      const n = k % 4 === 0 ? 2000 + ((k * 977) % 4000) : k % 4 === 1 ? 1 : 3
      ins.accounts = Array.from({ length: n }, (_, j) => account(j * 7 + k))
      if (k % 9 === 5) ins.accounts = ['L'.repeat(120)]
      k++
    }
  }
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const cold = await datasetOf(blocks, { targetBlocks: 2 })
  const memory = new StaticStore(blocks, 5)
  const body = { fromBlock: first, fields: { instruction: { accounts: true, data: true } }, instructions: [{}] }
  const want = await lines(memory, body, false, last)
  const got = await lines(cold, body, false, last)
  assert.ok(
    got.some((l) => l.bytes!.length > 200_000),
    'lines far above 64 KiB',
  )
  assert.equal(got.length, want.length)
  for (let i = 0; i < got.length; i++) assert.equal(got[i].bytes!.toString('utf8'), want[i].line, `line ${i}`)
  await cold.close()
})

test('lines taken from a line buffer keep their bytes: consecutive small lines share a buffer, large ones and full buffers move on', () => {
  const o = new LineBuf(64)
  const taken: { view: Buffer; want: string }[] = []
  let seed = 7
  const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
  let total = 0
  for (let k = 0; total < 3 << 20; k++) {
    // mostly small lines, some around and above the 64 KiB handover, written in pieces (the buffer
    // grows in the middle of a line that starts after others)
    const r = rand()
    const len =
      r < 0.8 ? Math.floor(rand() * 3000) : r < 0.9 ? 65536 - 2 + Math.floor(rand() * 4) : Math.floor(rand() * 200_000)
    const piece = Buffer.from(String.fromCharCode(97 + (k % 26)).repeat(1000))
    o.begin()
    let want = ''
    let left = len
    while (left > 0) {
      const n = Math.min(left, piece.length)
      o.copy(piece, 0, n)
      want += piece.toString('latin1', 0, n)
      left -= n
    }
    o.uint(k)
    want += k
    // an untaken line (a block left out) is overwritten by the next
    if (k % 7 === 3) continue
    taken.push({ view: o.takeLine(), want: want + '\n' })
    total += len
  }
  let shared = 0
  for (let i = 0; i < taken.length; i++) {
    assert.equal(taken[i].view.toString('latin1'), taken[i].want, `line ${i}`)
    const prev = taken[i - 1]?.view
    if (prev && prev.buffer === taken[i].view.buffer && prev.byteOffset + prev.length === taken[i].view.byteOffset)
      shared++
  }
  assert.ok(shared > taken.length / 2, `${shared} of ${taken.length} lines follow the previous one in its buffer`)
})
