/**
 * The two threads that decode the parts of one large answer (src/ingest/block-worker.ts
 * `answerForPair`): the one done first hands its part to the other, which answers with the block
 * (both parts' buffers, in order), so that the main thread receives one answer per block.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { MessageChannel, Worker } from 'node:worker_threads'
import type { DecodedEnvelope } from '../src/ingest/block-decode.ts'
import type { FromBlockWorker, ToBlockWorker } from '../src/ingest/block-worker.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { lazyBlock, storedBytes, unpackBlock, type PackedBlock } from '../src/store/packed-block.ts'
import { mainnetAnswer } from './support/mainnet-answer.ts'

function answerOf(w: Worker, id: number): Promise<FromBlockWorker> {
  return new Promise((resolve) => {
    const on = (m: FromBlockWorker) => {
      if (m.id !== id) return
      w.off('message', on)
      resolve(m)
    }
    w.on('message', on)
  })
}

test('of two threads decoding the parts of an answer, one hands its part over and the other answers with the joined block', async () => {
  const { answer, archived } = mainnetAnswer()
  const expected = normalizeBlock(archived)
  const bytes = new Uint8Array(new SharedArrayBuffer(answer.length))
  bytes.set(answer)
  const url = new URL('../src/ingest/block-worker.mjs', import.meta.url)
  const workers = [new Worker(url, { workerData: {} }), new Worker(url, { workerData: {} })]
  try {
    for (let round = 0; round < 3; round++) {
      const flag = new Int32Array(new SharedArrayBuffer(8))
      const { port1, port2 } = new MessageChannel()
      const answers = [port1, port2].map((port, index) => {
        const id = round * 2 + index
        const msg: ToBlockWorker = { id, slot: archived.slot, bytes, part: { index, of: 2 }, pair: { port, flag } }
        const p = answerOf(workers[index], id)
        workers[index].postMessage(msg, [port])
        return p
      })
      const got = await Promise.all(answers)
      const handedOff = got.filter((m) => 'handedOff' in m)
      const joined = got.filter((m) => 'env' in m) as { env: DecodedEnvelope }[]
      assert.equal(handedOff.length, 1, JSON.stringify(got.map((m) => Object.keys(m))))
      assert.equal(joined.length, 1)
      const r = joined[0].env.result as { kind: string; block: PackedBlock; warnings: unknown[] }
      assert.equal(r.kind, 'normalized')
      assert.ok(Array.isArray(r.block.packed) && r.block.packed.length === 2, 'both parts, not joined in the thread')
      assert.equal(storedBytes(r.block)[0], 0xfe, 'stored as parts')
      assert.deepStrictEqual(unpackBlock(storedBytes(r.block)), expected.block)
      assert.deepStrictEqual(lazyBlock(r.block), expected.block)
      assert.deepStrictEqual(r.warnings, expected.warnings)
      assert.deepStrictEqual(Atomics.load(flag, 0), 2)
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()))
  }
})
