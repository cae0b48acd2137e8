// The zlib gate (src/util/zlib-gate.ts): once its owner stops it, a thread's zlib call under way
// finishes and no other starts, so the thread can be ended outside zlib (ended inside zlib's
// setup of a compressor, Node aborts the whole process).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import { newZlibGate, stopZlibGate } from '../src/util/zlib-gate.ts'
import { workerExecArgv } from '../src/util/worker-argv.ts'

test('stopped, a thread finishes its zlib call and starts no other; it then ends cleanly', async () => {
  const gate = newZlibGate()
  const counts = new Int32Array(new SharedArrayBuffer(4))
  const w = new Worker(new URL('./fixtures/zlib-gate-worker.mjs', import.meta.url), {
    workerData: { gate, counts },
    execArgv: workerExecArgv(),
  })
  try {
    for (let waited = 0; Atomics.load(counts, 0) < 3 && waited < 60_000; waited += 10) await sleep(10)
    assert.ok(Atomics.load(counts, 0) >= 3, 'the thread compresses')
    assert.equal(stopZlibGate(gate, 10_000), true, 'idle in time')
    assert.equal(Atomics.load(gate, 1), 0, 'not inside zlib')
    const n = Atomics.load(counts, 0)
    await sleep(200)
    assert.equal(Atomics.load(counts, 0), n, 'no zlib call after the stop')
  } finally {
    assert.equal(await w.terminate(), 1)
  }
})
