/**
 * When V8 starts marking the old generation of this process's heaps (every thread's), for the
 * live follower (src/ingest/realtime/).
 *
 * V8 starts an incremental mark-compact "soon" (from a task) once the old generation's room left
 * below its limit is smaller than the young generation's capacity. A server's main thread has a
 * small old generation (~13 MB here, limit ~36 MB) beside a young generation grown to 33 MB, so
 * that condition holds right after every mark-compact: the main thread marked and compacted
 * continuously, about once per mainnet-sized block (bench/tail.bench.ts: ~12-20 ms of main-thread
 * GC per block), in the middle of the path from a block's answer to the clients' lines.
 * `--incremental-marking-soft-trigger=80` starts it instead once the old generation is at 80 %
 * of its limit (and `--incremental-marking-hard-trigger=95` at once past 95 %), as for a large
 * heap. Measured on the shared 2-core machine (`TAIL_CLIENTS=100 TAIL_THREADS=2 npm run bench --
 * tail`, load average 4-5, alternating with the code without it): main-thread GC 9-11 ms per
 * block against 14-22 ms, and 5-8 against 8-19 ms with the flags given at start (`--import`).
 *
 * The flags are V8's, process-wide, set at run time (`v8.setFlagsFromString`): they only change
 * when marking starts, read at each such decision.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let tuned = false

/** apply the marking start thresholds above (once per process) */
export function tuneIncrementalMarking(): void {
  if (tuned) return
  setFlagsFromString('--incremental-marking-soft-trigger=80')
  setFlagsFromString('--incremental-marking-hard-trigger=95')
  tuned = true
}

/** whether `tuneIncrementalMarking` ran in this process */
export function incrementalMarkingTuned(): boolean {
  return tuned
}

/**
 * A function that collects the calling thread's young generation at once (a scavenge), or null
 * when V8 does not offer one. For the block decoding threads (src/ingest/block-worker.ts), between
 * blocks.
 *
 * V8's `gc` function is only installed in contexts created while `--expose-gc` is set: in a process
 * started with it, this context's own is used; otherwise the flag is set, a fresh context's `gc`
 * taken, and the flag cleared again, so that no other context (other threads' included) gets a
 * global `gc`.
 */
export function youngCollector(): (() => void) | null {
  const minor = (gc: unknown) => (typeof gc === 'function' ? () => (gc as MinorGc)({ type: 'minor' }) : null)
  const own = (globalThis as { gc?: unknown }).gc
  if (typeof own === 'function') return minor(own)
  try {
    setFlagsFromString('--expose-gc')
    return minor(runInNewContext('gc'))
  } catch {
    return null
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}

type MinorGc = (o: { type: 'minor' }) => void

/**
 * How much V8 lets the old generation grow past what a full collection left live, percent, in a
 * serving process (`serve --heap-growing-percent`, `boundHeapGrowth`); 0: V8's own factor.
 *
 * V8 sets the next full collection's limit at the live size times a factor between 1.1 and 4 that
 * it derives from how fast its collections ran against how fast the program allocates. A server's
 * main thread holds its cold cache (--cache-mb of decoded columns, live) and renders a wide
 * range's rows into garbage fast, so its heap runs well above its live size before a collection.
 * A fixed factor bounds it, at the cost of more full collections (each marking the whole cache):
 * bench/memory.bench.ts, 200 generated 1,500-transaction blocks (instr_and_logs, hard,
 * instr_and_logs), same runs: 25 % peaked at 541-565 MiB against 596-625 MiB with V8's factor,
 * idle or beside 2 busy loops, but took 1.3-1.5x the wall time; 50 % and 100 % saved nothing
 * (bench/results/memory.md). Hence the default: V8's own factor; 25 for a tighter machine.
 */
export const SERVE_HEAP_GROWING_PERCENT = 0

/**
 * Fix V8's heap growing factor at 1 + `percent`/100 for this process (every thread; read at each
 * full collection, so it applies from the next one). 0 leaves V8's own dynamic factor.
 */
export function boundHeapGrowth(percent: number = SERVE_HEAP_GROWING_PERCENT): void {
  setFlagsFromString(`--heap-growing-percent=${Math.max(0, Math.floor(percent))}`)
}
