/**
 * The threads that parse and normalize blocks get a larger young generation (`parseWorkerLimits`),
 * on top of any limit given by the caller.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { test } from 'node:test'
import { Worker } from 'node:worker_threads'
import { PARSE_YOUNG_GENERATION_MB, parseWorkerLimits } from '../src/util/worker-argv.ts'

test('parseWorkerLimits: a 96 MB young generation, the caller limits kept and winning', () => {
  assert.equal(PARSE_YOUNG_GENERATION_MB, 96)
  assert.deepStrictEqual(parseWorkerLimits(), { maxYoungGenerationSizeMb: 96 })
  assert.deepStrictEqual(parseWorkerLimits({ maxOldGenerationSizeMb: 48 }), {
    maxYoungGenerationSizeMb: 96,
    maxOldGenerationSizeMb: 48,
  })
  assert.deepStrictEqual(parseWorkerLimits({ maxYoungGenerationSizeMb: 8 }), { maxYoungGenerationSizeMb: 8 })
})

test('a worker thread started with them runs with that young generation', async () => {
  const w = new Worker(
    "require('node:worker_threads').parentPort.postMessage(require('node:worker_threads').resourceLimits)",
    { eval: true, resourceLimits: parseWorkerLimits() },
  )
  const [limits] = (await once(w, 'message')) as [{ maxYoungGenerationSizeMb: number }]
  assert.equal(limits.maxYoungGenerationSizeMb, 96)
  await w.terminate()
})
