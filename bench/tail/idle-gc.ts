/**
 * Micro-bench: a block decoding thread's half of a mainnet-sized answer (generated, ~1,500
 * transactions; `decodeBlockAnswer` with a `DecodePart`, packing included, parts 0 and 1 in turn)
 * in a worker thread with the decoding threads' young generation (`parseWorkerLimits`), with and
 * without collecting the young generation between answers (`youngCollector`, as
 * src/ingest/block-worker.ts does), in alternating workers.
 *
 *   npx tsx bench/tail/idle-gc.ts
 *
 * Prints per mode the median and max wall ms of a half (the thread has a core of its own when the
 * box is idle: wall is its CPU), the garbage collection inside the halves (ms in all, halves with
 * any), the collection between answers (median ms), and the thread's CPU per half all included;
 * `IDLE_GC_HALVES` (default 40) halves per worker, `IDLE_GC_ROUNDS` (default 2) workers per mode.
 */
import { once } from 'node:events'
import { loadavg } from 'node:os'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { GCProfiler } from 'node:v8'

const HALVES = Number(process.env.IDLE_GC_HALVES ?? 40)
const ROUNDS = Number(process.env.IDLE_GC_ROUNDS ?? 2)
const WARM_UP = 4

interface Result {
  wall: number[]
  gc: number[]
  between: number[]
  cpu: number
}

if (isMainThread) {
  const { mainnetAnswer } = await import('./answer.ts')
  const { parseWorkerLimits } = await import('../../src/util/worker-argv.ts')
  const load0 = loadavg()
  const { bytes: body, slot } = await mainnetAnswer()
  // the answer in shared memory, as the RPC client reads a large one
  const shared = new Uint8Array(new SharedArrayBuffer(body.byteLength))
  shared.set(body)
  const entry = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}) })`
  const results = new Map<string, Result[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['without', 'with']) {
      const w = new Worker(entry, {
        eval: true,
        workerData: { bytes: shared, slot, collect: mode === 'with' },
        resourceLimits: parseWorkerLimits(),
      })
      const [r] = (await once(w, 'message')) as [Result]
      await w.terminate()
      results.set(mode, [...(results.get(mode) ?? []), r])
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
  const load1 = loadavg()
  console.log(
    `one answer of ${(shared.byteLength / 1e6).toFixed(1)} MB, ${HALVES} halves per worker, ${ROUNDS} workers per mode; load average ${load0.map((x) => x.toFixed(2)).join(' ')} at start, ${load1.map((x) => x.toFixed(2)).join(' ')} at end`,
  )
  console.log(
    '| young generation collected between answers | half wall p50 ms | half wall max ms | GC inside the halves, ms in all (halves with any) | collection between answers p50 ms | thread CPU per half ms |',
  )
  console.log('|---|---|---|---|---|---|')
  for (const [mode, rs] of results) {
    const wall = rs.flatMap((r) => r.wall)
    const gc = rs.flatMap((r) => r.gc)
    const between = rs.flatMap((r) => r.between)
    const cpu = rs.reduce((s, r) => s + r.cpu, 0) / wall.length
    console.log(
      `| ${mode} | ${median(wall).toFixed(1)} | ${Math.max(...wall).toFixed(1)} | ${gc.reduce((a, b) => a + b, 0).toFixed(0)} (${gc.filter((g) => g > 0.5).length} of ${gc.length}) | ${mode === 'with' ? median(between).toFixed(2) : '-'} | ${cpu.toFixed(1)} |`,
    )
  }
} else {
  const { decodeBlockAnswer } = await import('../../src/ingest/block-decode.ts')
  const { youngCollector } = await import('../../src/util/gc-tuning.ts')
  const { bytes, slot, collect } = workerData as { bytes: Uint8Array; slot: number; collect: boolean }
  const young = collect ? youngCollector() : null
  const out: Result = { wall: [], gc: [], between: [], cpu: 0 }
  for (let i = 0; i < HALVES + WARM_UP; i++) {
    const cpu0 = process.cpuUsage()
    const p = new GCProfiler()
    p.start()
    const t0 = performance.now()
    decodeBlockAnswer(bytes, slot, {}, true, undefined, { index: i % 2, of: 2 })
    const wall = performance.now() - t0
    const gcMs = p.stop().statistics.reduce((s, g) => s + g.cost / 1000, 0)
    const t1 = performance.now()
    young?.()
    const between = performance.now() - t1
    if (i < WARM_UP) continue
    // this thread's CPU: the process's, the main thread waiting for our message meanwhile
    const c = process.cpuUsage(cpu0)
    out.cpu += (c.user + c.system) / 1000
    out.wall.push(wall)
    out.gc.push(gcMs)
    out.between.push(between)
  }
  parentPort!.postMessage(out)
}
