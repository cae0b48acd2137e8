/**
 * A gate between a worker thread's synchronous zlib calls and the end of that thread.
 *
 * Node aborts the whole process ("close before init") when a thread is ended while zlib sets up a
 * compressor or decompressor: between the native handle's creation and its init, inside
 * `brotliCompressSync` and the like. Threads are ended by `worker.terminate()` (an import failing
 * while another worker compresses) and at process exit. The gate is two shared integers: [0] set
 * once the owner is stopping the thread, [1] set while the thread is inside a zlib call. The thread
 * marks itself busy before it checks for the stop (so the owner either sees the call under way or
 * the thread sees the stop), and once stopped it never enters zlib again; the owner sets the stop,
 * waits for the call under way (milliseconds), then ends the thread.
 *
 * (The read-ahead thread, plain JavaScript without the TypeScript loader, has the same protocol
 * written out in src/store/cold/inflate-worker.mjs.)
 */

/** this thread's gate, when its owner gave it one (`installZlibGate`) */
let gate: Int32Array | null = null

/** a new gate, for the owner to keep and to hand to the thread (e.g. in its workerData) */
export function newZlibGate(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(8))
}

/** in the thread, at start: its zlib calls go through `gate` from now on */
export function installZlibGate(g: Int32Array | undefined): void {
  gate = g ?? null
}

/** runs the zlib call `fn` unless the owner is stopping this thread (then it waits to be ended) */
export function gatedZlib<T>(fn: () => T): T {
  const g = gate
  if (g === null) return fn()
  Atomics.store(g, 1, 1)
  if (Atomics.load(g, 0) === 1) {
    Atomics.store(g, 1, 0)
    Atomics.notify(g, 1)
    for (;;) Atomics.wait(g, 0, 1, 100)
  }
  try {
    return fn()
  } finally {
    Atomics.store(g, 1, 0)
    Atomics.notify(g, 1)
  }
}

/**
 * In the owner: stops the thread's zlib calls for good, waiting (up to `maxMs`) for the one under
 * way; the thread may then be ended. Returns whether it was idle in time.
 */
export function stopZlibGate(g: Int32Array, maxMs = 2000): boolean {
  Atomics.store(g, 0, 1)
  const until = performance.now() + maxMs
  while (Atomics.load(g, 1) === 1) {
    const left = until - performance.now()
    if (left <= 0) return false
    Atomics.wait(g, 1, 1, Math.min(left, 50))
  }
  return true
}

/**
 * `stopZlibGate` for several threads: all are told to stop first, then each is waited for, so
 * that they finish their calls under way together rather than one after the other.
 */
export function stopZlibGates(gates: Iterable<Int32Array>): void {
  for (const g of gates) Atomics.store(g, 0, 1)
  for (const g of gates) stopZlibGate(g)
}

/** gates of threads that may still run when the process exits (`stopAtExit`) */
const atExit = new Set<Int32Array>()

/**
 * Stops `g` (all such gates at once, then waits for each) when the process exits: Node ends the
 * threads still running then, unref'd ones included. `release` once the thread has ended.
 */
export function stopAtExit(g: Int32Array): void {
  if (atExit.size === 0) process.once('exit', stopAllAtExit)
  atExit.add(g)
}

export function release(g: Int32Array): void {
  atExit.delete(g)
  if (atExit.size === 0) process.off('exit', stopAllAtExit)
}

function stopAllAtExit(): void {
  stopZlibGates(atExit)
  atExit.clear()
}
