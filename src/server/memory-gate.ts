/**
 * The server's memory limit (`serve --memory-limit-mb`): back-pressure on the work that takes
 * memory by the chunk.
 *
 * A stream response holds the chunk it renders from (its decoded columns, the rows it selected,
 * the JSON tokens of its fields: tens of MB for a query reading whole columns of mainnet-sized
 * blocks) until it has written that chunk's blocks, and its client may be slow to take them. N such
 * streams hold N chunks: the decode cache (`--cache-mb`) bounds what is kept between queries, not
 * what streams hold. And the JavaScript heap runs above its live size by a factor V8 derives from
 * how fast it collects against how fast the program allocates: on a machine whose cores are busy
 * with other work, the collections fall behind and the heap grows further.
 *
 * `MemoryGate.enter` is asked before a stream starts its next chunk. Under the soft limit (3/4 of
 * the limit) it answers at once. Above it, a full garbage collection runs (at most one per
 * `gcIntervalMs`), and the stream waits, holding no chunk, until the process' resident memory is
 * back under the soft limit or no stream holds a chunk any more: the streams holding one finish it
 * and free it, and one stream at least always moves on, so a waiting stream never waits for ever.
 * Rendering ahead stops there; the response's other bounds (write timeout, response time) still
 * apply. 0 turns the gate off.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

export interface MemoryGateOptions {
  /** the process' resident memory, bytes (default process.memoryUsage.rss) */
  rss?: () => number
  /** a full collection of this thread's heap (default: V8's gc, taken without exposing it) */
  gc?: (() => void) | null
  /** the least time between two collections asked for by the gate, ms (default 1000) */
  gcIntervalMs?: number
  /** how often a waiting stream checks again, ms (default 20) */
  pollMs?: number
}

/** `serve --memory-limit-mb` with the default --cache-mb (192) */
export const DEFAULT_MEMORY_LIMIT_MB = 1024

/** the soft limit: a quarter of the limit is left for what a chunk's work takes once begun */
export const SOFT_LIMIT_SHARE = 0.75

export class MemoryGate {
  /** streams holding a chunk */
  private holders = 0
  private lastGc = 0
  private readonly soft: number
  private readonly rss: () => number
  private readonly gc: (() => void) | null
  private readonly gcIntervalMs: number
  private readonly pollMs: number
  /** streams that waited, and the collections the gate ran (metrics, tests) */
  readonly stats = { waits: 0, collections: 0 }

  /** `limitBytes`: the resident memory to stay under; 0 = no gate */
  constructor(
    readonly limitBytes: number,
    opts: MemoryGateOptions = {},
  ) {
    this.soft = limitBytes * SOFT_LIMIT_SHARE
    this.rss = opts.rss ?? (() => process.memoryUsage.rss())
    this.gc = opts.gc !== undefined ? opts.gc : limitBytes > 0 ? fullCollector() : null
    this.gcIntervalMs = opts.gcIntervalMs ?? 1_000
    this.pollMs = opts.pollMs ?? 20
  }

  /** streams holding a chunk now */
  get holding(): number {
    return this.holders
  }

  /**
   * Wait for the right to start a chunk; resolves to its release (call it once the chunk's
   * blocks are written, or the iteration ended), or null when `signal` aborted meanwhile.
   */
  async enter(signal?: AbortSignal): Promise<(() => void) | null> {
    const now = this.tryEnter()
    if (now) return now
    this.stats.waits++
    while (this.holders > 0 && this.rss() > this.soft) {
      if (signal?.aborted) return null
      await new Promise((r) => setTimeout(r, this.pollMs))
      this.collect()
    }
    return signal?.aborted ? null : this.take()
  }

  /** the right to start a chunk at once, or null when the stream must wait (`enter`) */
  tryEnter(): (() => void) | null {
    if (this.limitBytes === 0 || this.rss() <= this.soft) return this.take()
    // over it: the heap collected (a lone stream too: its garbage is what grows then)
    this.collect()
    return this.holders === 0 || this.rss() <= this.soft ? this.take() : null
  }

  private take(): () => void {
    this.holders++
    let released = false
    return () => {
      if (released) return
      released = true
      this.holders--
    }
  }

  /** a full collection, unless one ran within gcIntervalMs */
  private collect(): void {
    if (!this.gc) return
    const now = performance.now()
    if (now - this.lastGc < this.gcIntervalMs) return
    this.gc()
    this.lastGc = performance.now()
    this.stats.collections++
  }
}

/**
 * V8's full collection of the calling thread's heap, or null when V8 does not offer it: taken from
 * a fresh context created while `--expose-gc` is set, the flag cleared again at once (no other
 * context gets a global `gc`).
 */
function fullCollector(): (() => void) | null {
  const own = (globalThis as { gc?: unknown }).gc
  if (typeof own === 'function') return own as () => void
  try {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as () => void) : null
  } catch {
    return null
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}
