// The zlib gate (src/util/zlib-gate.ts): once its owner stops it, a thread's zlib call under way
// finishes and no other starts, so the thread can be ended outside zlib (ended inside zlib's
// setup of a compressor, Node aborts the whole process).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { spawnSync } from 'node:child_process'
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

test('stopAtExit: a process exiting while an unref’d thread compresses stops the thread outside zlib first, and exits 0', () => {
  const gateUrl = new URL('../src/util/zlib-gate.ts', import.meta.url).href
  const argvUrl = new URL('../src/util/worker-argv.ts', import.meta.url).href
  const workerUrl = new URL('./fixtures/zlib-gate-worker.mjs', import.meta.url).href
  const script = `
    import { Worker } from 'node:worker_threads'
    const { newZlibGate, stopAtExit } = await import(${JSON.stringify(gateUrl)})
    const { workerExecArgv } = await import(${JSON.stringify(argvUrl)})
    const gate = newZlibGate()
    const counts = new Int32Array(new SharedArrayBuffer(4))
    const w = new Worker(new URL(${JSON.stringify(workerUrl)}), { workerData: { gate, counts }, execArgv: workerExecArgv() })
    w.unref()
    stopAtExit(gate)
    // after stopAtExit's own listener: what the thread's gate says once it has run
    process.on('exit', () => process.stdout.write(JSON.stringify({ stop: gate[0], busy: gate[1], calls: counts[0] })))
    const until = Date.now() + 60000
    while (Atomics.load(counts, 0) < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 5))
  `
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  assert.equal(r.status, 0, r.stderr)
  const seen = JSON.parse(r.stdout) as { stop: number; busy: number; calls: number }
  assert.ok(seen.calls >= 2, 'the thread was compressing')
  assert.deepEqual([seen.stop, seen.busy], [1, 0], 'stopped and outside zlib when the process ended it')
})
