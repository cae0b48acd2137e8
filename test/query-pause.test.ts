/**
 * The engine's `pause`: a block of thousands of rows (and a chunk's filters) is rendered in pieces
 * with pauses between them, the output unchanged; a pause answering false ends the iteration.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { executeQuery, parseQuery, type ExecuteOptions } from '../src/query/index.ts'
import { StaticStore } from '../src/store/static.ts'
import { everything } from './support/http/hostile.ts'
import { randomBlocks } from './support/random-blocks.ts'

const blocks = randomBlocks(5, { blocks: 6, maxTx: 200, skipRate: 0 })
const store = new StaticStore(blocks, 4)
const first = blocks[0].header.number
const last = blocks[blocks.length - 1].header.number

async function run(body: Record<string, unknown>, extra: Partial<ExecuteOptions> = {}): Promise<string[]> {
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: false, ...extra })) {
    out.push(b.line)
  }
  return out
}

test('pauses inside blocks leave the output unchanged', async () => {
  const queries = [
    everything(first),
    {
      fromBlock: first,
      fields: { instruction: { programId: true, accounts: true }, transaction: { fee: true } },
      instructions: [{ isCommitted: true, transaction: true, innerInstructions: true }],
    },
  ]
  for (const body of queries) {
    const plain = await run(body)
    let pauses = 0
    let yields = 0
    const paused: string[] = []
    for await (const b of executeQuery(store, parseQuery(body), {
      to: last,
      finalizedOnly: false,
      sliceMs: 0,
      pause: async () => {
        pauses++
        await new Promise<void>((resolve) => setImmediate(resolve))
        return true
      },
    })) {
      yields++
      paused.push(b.line)
    }
    assert.deepEqual(paused, plain)
    // many pauses per yielded block: the work of one block is cut into pieces
    assert.ok(pauses > 4 * yields, `${pauses} pauses for ${yields} blocks`)
  }
})

test('without pause or with a long slice, no pause is taken', async () => {
  let pauses = 0
  const lines = await run(everything(first), { sliceMs: 60_000, pause: async () => (pauses++, true) })
  assert.equal(pauses, 0)
  assert.deepEqual(lines, await run(everything(first)))
})

test('a pause answering false ends the iteration without the block under way', async () => {
  const all = await run(everything(first))
  let pauses = 0
  const got = await run(everything(first), { sliceMs: 0, pause: async () => ++pauses < 40 })
  assert.equal(pauses, 40)
  assert.ok(got.length < all.length, `${got.length} of ${all.length} blocks`)
  assert.deepEqual(got, all.slice(0, got.length))
})
