/**
 * The block decoding threads collect their young generation between blocks (src/ingest/block-worker.ts,
 * `youngCollector` of src/util/gc-tuning.ts), and report their own times per answer (ran on a core,
 * waited for one, garbage collection: src/util/thread-clock.ts) for the tail bench's breakdown.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { test } from 'node:test'
import { mainnetAnswer } from './support/mainnet-answer.ts'
import { GCProfiler } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { DecodeMarks } from '../src/ingest/block-decode.ts'
import { BlockWorkerPool } from '../src/ingest/block-workers.ts'
import { youngCollector } from '../src/util/gc-tuning.ts'
import { threadTimes } from '../src/util/thread-clock.ts'

test('youngCollector: a function that scavenges the young generation, without leaving a global gc anywhere', () => {
  const hadGc = typeof (globalThis as { gc?: unknown }).gc
  const collect = youngCollector()
  assert.equal(typeof collect, 'function')
  const p = new GCProfiler()
  p.start()
  collect!()
  const kinds = p.stop().statistics.map((s) => s.gcType)
  assert.deepStrictEqual(kinds, ['Scavenge'])
  assert.equal(runInNewContext('typeof gc'), 'undefined', 'a new context has no gc')
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, hadGc)
})

test('threadTimes: this thread’s run time grows as it computes', () => {
  const a = threadTimes()
  if (a === null) return // not Linux
  let x = 0
  const until = performance.now() + 30
  while (performance.now() < until) x += Math.sqrt(x + 1)
  const b = threadTimes()!
  assert.ok(x > 0)
  assert.ok(b.run - a.run > 5, `ran ${b.run - a.run} ms`)
  assert.ok(b.wait >= a.wait)
})

test('a decoding thread collects its young generation once between two answers, and reports its own times', async () => {
  const { answer, archived } = mainnetAnswer()
  const pool = new BlockWorkerPool({ threads: 1 })
  try {
    const marks: DecodeMarks[] = []
    for (let i = 0; i < 3; i++) {
      const env = await pool.decode(Buffer.from(answer), archived.slot)
      assert.equal(env.result?.kind, 'normalized')
      marks.push((env.result as { marks: DecodeMarks }).marks)
    }
    // none before the first answer; one after each (when the thread was idle a while, or else
    // just before decoding the next answer)
    assert.deepStrictEqual(
      marks.map((m) => m.idleCollections),
      [0, 1, 1],
    )
    for (const m of marks.slice(1)) assert.ok(m.idleGc! > 0)
    for (const m of marks) {
      assert.equal(typeof m.gc, 'number')
      if (threadTimes() === null) continue
      assert.ok(m.run! > 0 && m.wait! >= 0, JSON.stringify(m))
    }
  } finally {
    await pool.close()
  }
})

test('youngCollector in a process started with --expose-gc: its gc used, still there for later contexts', async () => {
  const code = `
    import { youngCollector } from './src/util/gc-tuning.ts'
    import { runInNewContext } from 'node:vm'
    const collect = youngCollector()
    collect()
    console.log(JSON.stringify([typeof collect, typeof globalThis.gc, runInNewContext('typeof gc')]))
  `
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: join(import.meta.dirname, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c))
  const [status] = (await once(child, 'close')) as [number]
  assert.equal(status, 0)
  assert.deepStrictEqual(JSON.parse(out.trim()), ['function', 'function', 'function'])
})
