/**
 * The render threads `serve` starts by default and the split of its cold cache between the main
 * thread and them: plain numbers, here so that the command checks its flags without loading the
 * render pool.
 */

/**
 * Worker threads by default: none. Their memory is bounded (rendered segments count in the response
 * budget: 8 concurrent wide streams with 1 thread peaked at 340-430 MiB RSS, against 3.6 GB with 2
 * threads before), and a stream's own thread renders its share; but on the 2-core box, shared with
 * other work (load average 6-11), 1 thread measured 0.45-0.85x of the in-thread MB/s
 * (bench/parallel.bench.ts, server and client in separate processes) and more CPU per MB than
 * none: two isolates collect garbage and compile, and a worker's code takes several runs to warm
 * up. On a machine with idle cores, the cores less one (at most 8) is the setting to measure.
 */
export function defaultRenderThreads(): number {
  return 0
}

/**
 * The cold cache of each thread that opens a dataset, the main thread's and each worker's: the one
 * budget `totalBytes` (serve --cache-mb) split between them, 1 MiB at least each. Split ranges: evenly
 * (every thread renders). Streamed ranges: the workers render every finalized range of `minSlots`
 * or more, the main thread only shorter ones, so it keeps an eighth and the workers share the rest
 * (the fee-payer query of the compare bench, 73 MB of output, reads its columns again on every run
 * in a cache of 96 MiB, not in one of 144).
 */
export function cacheShares(totalBytes: number, threads: number, streamed = true): { main: number; worker: number } {
  const MiB = 1024 * 1024
  const n = Math.max(0, threads)
  if (n === 0) return { main: Math.max(MiB, totalBytes), worker: 0 }
  if (!streamed) {
    const each = Math.max(MiB, Math.floor(totalBytes / (n + 1)))
    return { main: each, worker: each }
  }
  const main = Math.max(MiB, Math.floor(totalBytes / 8))
  return { main, worker: Math.max(MiB, Math.floor((totalBytes - main) / n)) }
}
