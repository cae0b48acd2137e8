/**
 * A large answer decoded by two threads, each from its own half of the bytes
 * (src/ingest/block-cut.ts): the parts joined are the block decoded whole, with the block's
 * transaction positions, also when the cut text appears where no transaction starts (a nested
 * value, a log line), around u64 edges and escapes; a part reads only its own half.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeBlockAnswer, normalizeIntact, type DecodedEnvelope } from '../src/ingest/block-decode.ts'
import { locateCut } from '../src/ingest/block-cut.ts'
import { BlockWorkerPool } from '../src/ingest/block-workers.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { checkBlockShape } from '../src/ingest/rpc/shape.ts'
import { fullBlockParams } from '../src/ingest/rpc/client.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { splitTransactions } from '../src/rpc/split.ts'
import type { RpcBlock } from '../src/rpc/types.ts'
import { lazyBlock, type PackedBlock } from '../src/store/packed-block.ts'

const PATH = ['result']

/** the reference: the whole answer parsed at once */
function whole(bytes: Buffer, slot: number): DecodedEnvelope {
  const body = parseJsonExact(bytes.toString('utf8')) as { result?: unknown }
  const problem = checkBlockShape(body.result)
  if (problem !== null) return { result: { kind: 'malformed', problem } }
  return { result: normalizeIntact(slot, body.result as RpcBlock, (l) => normalizeBlock(l)) }
}

/** the two parts decoded here, one after the other, as the two threads do */
function parts(bytes: Buffer, slot: number): DecodedEnvelope[] {
  return [0, 1].map((index) => decodeBlockAnswer(bytes, slot, {}, false, undefined, { index, of: 2 }))
}

/** the parts' blocks concatenated (as the join reads them back), or the whole answer a part fell back to */
function joined(ps: DecodedEnvelope[]): unknown {
  for (const p of ps) if (p.result?.kind !== 'normalized' || !p.result.part) return p
  const [a, b] = ps.map((p) => p.result as { block: Block; warnings: unknown[]; part: { from: number; to: number } })
  assert.equal(a.part.from, 0)
  assert.equal(b.part.from, a.part.to, 'the positions follow each other')
  const block = { ...a.block }
  for (const k of ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const)
    (block[k] as unknown[]) = (a.block[k] as unknown[]).concat(b.block[k])
  return { result: { kind: 'normalized', block, warnings: [...a.warnings, ...b.warnings] } }
}

function spansOf(text: string): number[] {
  const s = splitTransactions(text, PATH)
  assert.ok(s)
  return s.spans
}

test('an answer cut in two halves of its bytes decodes, in each half alone, to the block decoded whole', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 40, intervalMs: 0, initialBlocks: 2, skipRate: 0, seed: 9 })
  const pool = new BlockWorkerPool({ threads: 2, splitMinBytes: 1, inlineMaxBytes: 0 })
  try {
    const slot = node.firstSlot
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: fullBlockParams(slot, 'confirmed') }),
    })
    const text = Buffer.from(await res.arrayBuffer()).toString('utf8')
    const check = async (t: string, what: string, cutUsed: boolean): Promise<DecodedEnvelope[]> => {
      const bytes = Buffer.from(t)
      const want = whole(bytes, slot)
      assert.equal(want.result?.kind, 'normalized', what)
      const ps = parts(bytes, slot)
      assert.deepStrictEqual(joined(ps), want, what)
      if (cutUsed)
        assert.ok(
          ps.every((p) => p.result?.kind === 'normalized' && p.result.part),
          `${what}: cut`,
        )
      const env = await pool.decode(Buffer.from(bytes), slot)
      const r = env.result
      assert.ok(r?.kind === 'normalized', what)
      assert.deepStrictEqual(lazyBlock(r.block as PackedBlock), (want.result as { block: Block }).block, what)
      assert.deepStrictEqual(r.warnings, (want.result as { warnings: unknown[] }).warnings, what)
      return ps
    }

    // as the node sent it: cut at the first transaction after the middle
    const c = locateCut(Buffer.from(text), PATH)
    assert.ok(c, 'a cut')
    const spans = spansOf(text)
    const k = spans.findIndex((s, i) => i % 2 === 0 && Buffer.byteLength(text.slice(0, s)) === c.cut) / 2
    assert.ok(k > 10 && k < 30, `cut at transaction ${k} of 40`)
    const ps = await check(text, 'plain', true)
    const p1 = ps[1].result as { part: { from: number; to: number }; block: Block }
    assert.equal(p1.part.from, k)
    assert.equal(p1.block.transactions[0].transactionIndex, k, 'the block’s positions')

    // the cut text in a nested value near the middle: the cut lands there, a part's pieces do not
    // parse, and that part decodes the whole answer
    const nested = ',"zz":[{"a":1},{"transaction":{"x":[1]}},{"transaction":2}]'
    let landed = false
    for (let j = k; j < 40 && !landed; j++) {
      const at = spans[2 * j] + 1
      const t = text.slice(0, at) + nested.slice(1) + ',' + text.slice(at)
      const nc = locateCut(Buffer.from(t), PATH)
      const from = Buffer.byteLength(text.slice(0, at))
      if (!nc || nc.cut < from || nc.cut >= from + nested.length) continue
      landed = true
      const got = await check(t, 'nested at the cut', false)
      assert.ok(
        got.some((p) => p.result?.kind === 'normalized' && !p.result.part),
        'a part fell back to the whole answer',
      )
    }
    assert.ok(landed, 'a nested value placed where the cut is looked for')
    // the same nested value elsewhere in either half: that half's guess does not parse, and its
    // part decodes the whole answer
    for (const j of [3, k + 3]) {
      const at = spans[2 * j + 1] - 1
      await check(text.slice(0, at) + nested + text.slice(at), `nested in transaction ${j}`, false)
    }

    // a log line holding the cut text, escapes and a u64 edge next to the cut, on both sides
    const edit = (t: string, j: number, from: string, to: string): string => {
      const s = spansOf(t)
      const at = t.indexOf(from, s[2 * j])
      assert.ok(at >= 0 && at < s[2 * j + 1], `${from} in transaction ${j}`)
      return t.slice(0, at) + to + t.slice(at + from.length)
    }
    let t = text
    const log = JSON.stringify('Program log: },{"transaction":{\\"x\\"} \\" é ' + '\u2028')
    for (const j of [k - 1, k]) {
      t = edit(t, j, '"logMessages": [', `"logMessages": [${log},`)
      t = edit(t, j, '"preBalances": [', '"preBalances": [18446744073709551615,9007199254740993,')
      t = edit(t, j, '"postBalances": [', '"postBalances": [18446744073709551615,9007199254740993,')
    }
    await check(t, 'logs, escapes, u64 edges', true)

    // a part reads only its own half: a transaction after the cut that is not JSON leaves part 0
    // as it is, part 1 finds it (the whole answer is not JSON), and so does the pool
    const broken = Buffer.from(edit(text, k + 2, '"meta": ', '"meta"::'))
    const [a, b] = [0, 1].map((index) => () => decodeBlockAnswer(broken, slot, {}, false, undefined, { index, of: 2 }))
    const pa = a().result
    assert.ok(pa?.kind === 'normalized' && pa.part, 'part 0 decoded from its own bytes')
    assert.deepStrictEqual([pa.part.from, pa.part.to], [0, k])
    assert.throws(b)
    await assert.rejects(pool.decode(broken, slot))
    // and one before the cut: part 1 as it is, part 0 finds it
    const early = Buffer.from(edit(text, 2, '"meta": ', '"meta"::'))
    const pb = decodeBlockAnswer(early, slot, {}, false, undefined, { index: 1, of: 2 }).result
    assert.ok(pb?.kind === 'normalized' && pb.part, 'part 1 decoded from its own bytes')
    assert.equal(pb.part.from, k)
    assert.throws(() => decodeBlockAnswer(early, slot, {}, false, undefined, { index: 0, of: 2 }))

    // one transaction: no cut, each part the exact way
    const one = spansOf(text)
    const single = text.slice(0, one[0]) + text.slice(one[0], one[1]) + text.slice(one[one.length - 1])
    assert.equal(locateCut(Buffer.from(single), PATH), null)
    await check(single, 'one transaction', true)
  } finally {
    await pool.close()
    await node.stop()
  }
})
