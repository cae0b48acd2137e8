/**
 * A pool of worker threads running one script: spawning (lazily, up to `size`), request ids and
 * the requests each worker holds, the least busy pick, transfer lists, a graceful close, counters,
 * and one policy for a worker that dies. The block decoders (src/ingest/block-workers.ts), the
 * render workers (src/server/render-pool.ts), the read-ahead thread (src/store/cold/prefetch.ts)
 * and the import workers run on it.
 *
 * A request is a message with an `id` the pool gives (`request`); the worker's message carrying
 * that id settles it. Any other message (several answers to one job, progress, a port of its own)
 * goes to `onMessage`, and the owner keeps its own books for those (`onDeath` tells it when).
 *
 * When a worker dies (an uncaught exception, out of memory, `process.exit`, terminated by
 * someone else), and the pool is not closing:
 *
 * 1. every request it held is rejected at once with a `WorkerDiedError` naming the worker
 *    ("render worker 2 exited (code 1)", "block decoding worker 1 failed: out of memory");
 *    `onDeath` then lets the owner fail what else it had given that worker. Nothing is resent:
 *    the pool cannot know whether a job is safe to run twice, its owner decides.
 * 2. its slot is spawned again after a backoff: `backoffMs` after the first death, doubled for
 *    each further death within `windowMs`, at most `maxBackoffMs`. Meanwhile the other workers
 *    take the requests; when none is running, requests wait for the respawn.
 * 3. restarts are bounded: a death that makes more than `maxRestarts` within `windowMs` (the
 *    whole pool) fails the pool for good. `failure` is then set, every pending, waiting and later
 *    request is rejected with it, and `onFailure` is called once (its owner reports it: a worker
 *    that keeps dying is a bug or a host out of memory, not something to retry forever).
 *    `maxRestarts: 0` fails the pool at the first death (workers holding state that dies with
 *    them, as the import's batches).
 *
 * `close` rejects what is pending, stops the threads' zlib calls (src/util/zlib-gate.ts: a thread
 * ended inside zlib's setup aborts the process) and terminates them.
 */
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads'
import { newZlibGate, release, stopAtExit, stopZlibGate, stopZlibGates } from './zlib-gate.ts'
import { workerExecArgv } from './worker-argv.ts'

/** a request settled by a worker's death (or by the pool failing, or closing) */
export class WorkerDiedError extends Error {
  override name = 'WorkerDiedError'
}

export interface RestartPolicy {
  /** deaths tolerated within `windowMs`, the whole pool; one more fails the pool */
  maxRestarts: number
  windowMs: number
  /** delay before a dead worker's slot is spawned again, doubled per recent death */
  backoffMs: number
  maxBackoffMs: number
}

export const DEFAULT_RESTARTS: RestartPolicy = {
  maxRestarts: 5,
  windowMs: 10 * 60_000,
  backoffMs: 1000,
  maxBackoffMs: 30_000,
}

/** one running worker of a pool */
export interface PoolWorker<S> {
  /** its slot, 0-based (the name counts from 1) */
  readonly slot: number
  /** e.g. "render worker 2" */
  readonly name: string
  readonly thread: Worker
  /** the owner's state for this worker (`WorkerPoolOptions.setup`) */
  readonly state: S
  /** its zlib gate, when the pool gives one (`zlibGate`) */
  readonly gate: Int32Array | null
  /** requests sent to it and not settled */
  readonly pending: number
  /** false once it died or the pool closed */
  readonly alive: boolean
}

export interface WorkerPoolOptions<S, In, Out> {
  /** how its workers are named in errors: "render worker" */
  name: string
  /** workers at most */
  size: number
  /** the worker's script */
  url: URL
  /**
   * Per spawn: the worker's `workerData` (given the zlib gate, when `zlibGate`), objects to
   * transfer with it, and the owner's state for that worker.
   */
  setup?: (slot: number, gate: Int32Array | null) => { workerData?: unknown; transferList?: Transferable[]; state: S }
  resourceLimits?: ResourceLimits
  /** give each worker a zlib gate (closed before the thread is ended) */
  zlibGate?: boolean
  /**
   * Whether a worker keeps the process alive: `always` (Node's default), `never`, or `busy`
   * (while it holds requests)
   */
  ref?: 'always' | 'never' | 'busy'
  restarts?: Partial<RestartPolicy>
  /** spawn every slot at once (default: a slot is spawned when a pick needs it) */
  eager?: boolean
  /** how busy a worker is, for the least busy pick (default: its pending requests) */
  load?: (w: PoolWorker<S>) => number
  /** the request id a message answers, if any (default: its `id`) */
  idOf?: (m: Out) => number | undefined
  /** a message that settles no request */
  onMessage?: (w: PoolWorker<S>, m: Out) => void
  /** a worker spawned (after a death too) */
  onSpawn?: (w: PoolWorker<S>) => void
  /** a worker died; its requests are rejected already */
  onDeath?: (w: PoolWorker<S>, err: WorkerDiedError) => void
  /** the pool failed for good (restarts exhausted) */
  onFailure?: (err: WorkerDiedError) => void
  /** (types only) */
  _in?: In
}

export interface WorkerPoolStats {
  /** workers started, respawns included */
  spawned: number
  /** workers that died (not those the pool closed) */
  died: number
  /** requests sent and not settled, and those waiting for a worker */
  pending: number
  /** workers holding at least one request */
  busy: number
  /** workers running */
  alive: number
}

interface Pending<Out> {
  resolve: (m: Out) => void
  reject: (e: Error) => void
}

class Running<S, Out> implements PoolWorker<S> {
  readonly requests = new Map<number, Pending<Out>>()
  alive = true
  constructor(
    readonly slot: number,
    readonly name: string,
    readonly thread: Worker,
    readonly state: S,
    readonly gate: Int32Array | null,
  ) {}
  get pending(): number {
    return this.requests.size
  }
}

interface Waiting<In, Out> {
  msg: In
  transfer: readonly Transferable[] | undefined
  not: PoolWorker<unknown> | undefined
  p: Pending<Out>
}

type Slot<S, Out> = {
  worker: Running<S, Out> | null
  /** earliest respawn (ms, performance.now) */
  notBefore: number
  timer: NodeJS.Timeout | null
}

export class WorkerPool<S = undefined, In extends { id?: number } = { id?: number }, Out = unknown> {
  private readonly slots: Slot<S, Out>[]
  private readonly policy: RestartPolicy
  private readonly waiting: Waiting<In, Out>[] = []
  /** times of the deaths within the window */
  private deaths: number[] = []
  private nextId = 1
  private closed = false
  private counts = { spawned: 0, died: 0 }
  /** set once the pool failed for good */
  failure: WorkerDiedError | null = null

  constructor(private readonly opts: WorkerPoolOptions<S, In, Out>) {
    this.slots = Array.from({ length: Math.max(0, opts.size) }, () => ({ worker: null, notBefore: 0, timer: null }))
    this.policy = { ...DEFAULT_RESTARTS, ...opts.restarts }
    if (opts.eager) this.spawnAll()
  }

  get size(): number {
    return this.slots.length
  }

  get stats(): WorkerPoolStats {
    let pending = this.waiting.length
    let busy = 0
    let alive = 0
    for (const s of this.slots) {
      if (s.worker === null) continue
      alive++
      pending += s.worker.pending
      if (s.worker.pending > 0) busy++
    }
    return { ...this.counts, pending, busy, alive }
  }

  /** the workers running now, in slot order */
  get workers(): PoolWorker<S>[] {
    const out: PoolWorker<S>[] = []
    for (const s of this.slots) if (s.worker !== null) out.push(s.worker)
    return out
  }

  /** whether requests can be taken: not closed, not failed */
  get usable(): boolean {
    return !this.closed && this.failure === null && this.slots.length > 0
  }

  /** every slot not running and free to spawn (past its backoff) started now */
  spawnAll(): void {
    if (!this.usable) return
    const now = performance.now()
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i]
      if (s.worker === null && s.timer === null && s.notBefore <= now) this.spawn(i)
    }
  }

  /** an id no request of this pool has (for the owner's own jobs) */
  newId(): number {
    return this.nextId++
  }

  private load(w: Running<S, Out>): number {
    return this.opts.load ? this.opts.load(w) : w.requests.size
  }

  /**
   * The worker to give work to: a slot not started yet (or respawnable now) is started first,
   * else the least busy running worker other than `not`; null when none is running.
   */
  pick(not?: PoolWorker<unknown>): PoolWorker<S> | null {
    if (!this.usable) return null
    const now = performance.now()
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i]
      if (s.worker === null && s.timer === null && s.notBefore <= now) return this.spawn(i)
    }
    let best: Running<S, Out> | null = null
    for (const s of this.slots) {
      const w = s.worker
      if (w === null || w === not) continue
      if (best === null || this.load(w) < this.load(best)) best = w
    }
    return best
  }

  private spawn(i: number): Running<S, Out> {
    const o = this.opts
    const gate = o.zlibGate ? newZlibGate() : null
    const setup = o.setup ? o.setup(i, gate) : { state: undefined as S }
    const thread = new Worker(o.url, {
      workerData: setup.workerData,
      transferList: setup.transferList as Transferable[] | undefined,
      execArgv: workerExecArgv(),
      resourceLimits: o.resourceLimits,
    })
    const w = new Running<S, Out>(i, `${o.name} ${i + 1}`, thread, setup.state, gate)
    this.slots[i].worker = w
    this.counts.spawned++
    if (gate !== null) {
      // ended at exit or by close(), the thread is never inside zlib (src/util/zlib-gate.ts)
      stopAtExit(gate)
      thread.once('exit', () => release(gate))
    }
    thread.on('message', (m: Out) => this.message(w, m))
    thread.on('error', (e) => this.died(w, new WorkerDiedError(`${w.name} failed: ${e.message}`)))
    thread.on('exit', (code) => this.died(w, new WorkerDiedError(`${w.name} exited (code ${code})`)))
    // (after the listeners: adding one refs the thread again)
    if (o.ref === 'never' || o.ref === 'busy') thread.unref()
    o.onSpawn?.(w)
    this.flush()
    return w
  }

  private message(w: Running<S, Out>, m: Out): void {
    const id = this.opts.idOf ? this.opts.idOf(m) : (m as { id?: number } | null)?.id
    const p = id === undefined ? undefined : w.requests.get(id)
    if (p === undefined) {
      this.opts.onMessage?.(w, m)
      return
    }
    w.requests.delete(id!)
    if (w.requests.size === 0 && this.opts.ref === 'busy') w.thread.unref()
    p.resolve(m)
  }

  private died(w: Running<S, Out>, err: WorkerDiedError): void {
    if (!w.alive) return
    w.alive = false
    const slot = this.slots[w.slot]
    if (slot.worker === w) slot.worker = null
    void w.thread.terminate()
    if (this.closed) return
    this.counts.died++
    const requests = [...w.requests.values()]
    w.requests.clear()
    for (const p of requests) p.reject(err)
    this.opts.onDeath?.(w, err)
    const now = performance.now()
    this.deaths = this.deaths.filter((t) => now - t < this.policy.windowMs)
    this.deaths.push(now)
    if (this.deaths.length > this.policy.maxRestarts) {
      const { maxRestarts, windowMs } = this.policy
      const why = `${this.opts.name}s keep dying (${this.deaths.length} within ${Math.round(windowMs / 1000)} s; last: ${err.message})`
      // (no restart allowed: the death itself is the failure)
      this.fail(maxRestarts === 0 ? err : new WorkerDiedError(why))
      return
    }
    const p = this.policy
    const delay = Math.min(p.maxBackoffMs, p.backoffMs * 2 ** (this.deaths.length - 1))
    slot.notBefore = now + delay
    slot.timer = setTimeout(() => {
      slot.timer = null
      if (this.usable && slot.worker === null) this.spawn(w.slot)
    }, delay)
    slot.timer.unref()
  }

  private fail(err: WorkerDiedError): void {
    if (this.failure !== null) return
    this.failure = err
    for (const w of this.shutdown(err)) this.opts.onDeath?.(w, err)
    this.opts.onFailure?.(err)
  }

  /**
   * Rejects the waiting and pending requests with `err`, and ends the workers (each out of zlib
   * first); returns them
   */
  private shutdown(err: WorkerDiedError): Running<S, Out>[] {
    for (const q of this.waiting.splice(0)) q.p.reject(err)
    const ws: Running<S, Out>[] = []
    for (const s of this.slots) {
      if (s.timer !== null) clearTimeout(s.timer)
      s.timer = null
      if (s.worker !== null) ws.push(s.worker)
      s.worker = null
    }
    for (const w of ws) {
      w.alive = false
      const requests = [...w.requests.values()]
      w.requests.clear()
      for (const p of requests) p.reject(err)
    }
    stopZlibGates(ws.flatMap((w) => (w.gate ? [w.gate] : [])))
    for (const w of ws) void w.thread.terminate()
    return ws
  }

  /** requests waiting for a worker, sent now that one runs */
  private flush(): void {
    while (this.waiting.length > 0) {
      const q = this.waiting[0]
      const w = this.pick(q.not)
      if (w === null) return
      this.waiting.shift()
      this.sendTo(w as Running<S, Out>, q.msg, q.transfer, q.p)
    }
  }

  private sendTo(w: Running<S, Out>, msg: In, transfer: readonly Transferable[] | undefined, p: Pending<Out>): void {
    const id = msg.id!
    w.requests.set(id, p)
    if (this.opts.ref === 'busy') w.thread.ref()
    try {
      w.thread.postMessage(msg, transfer as Transferable[] | undefined)
    } catch (e) {
      w.requests.delete(id)
      p.reject(e instanceof Error ? e : new Error(String(e)))
    }
  }

  /**
   * Sends `msg` (given a new `id`) to `to`, else to the least busy worker other than `not`
   * (waiting for a respawn when none runs), and resolves with the worker's message of that id.
   */
  request(
    msg: Omit<In, 'id'>,
    opts: { transfer?: readonly Transferable[]; to?: PoolWorker<S>; not?: PoolWorker<S> } = {},
  ): Promise<Out> {
    const m = { ...msg, id: this.nextId++ } as In
    return new Promise<Out>((resolve, reject) => {
      const p = { resolve, reject }
      if (this.closed) return reject(new WorkerDiedError(`${this.opts.name}s are closed`))
      if (this.failure) return reject(this.failure)
      const to = opts.to as Running<S, Out> | undefined
      if (to !== undefined) {
        if (!to.alive) return reject(new WorkerDiedError(`${to.name} is not running`))
        return this.sendTo(to, m, opts.transfer, p)
      }
      const w = this.pick(opts.not)
      if (w !== null) return this.sendTo(w as Running<S, Out>, m, opts.transfer, p)
      this.waiting.push({ msg: m, transfer: opts.transfer, not: opts.not, p })
      // a request waiting for a respawn keeps the process alive, as one sent does
      for (const s of this.slots) s.timer?.ref()
    })
  }

  /** a message that is no request (no answer awaited) to worker `w`, when it runs */
  post(w: PoolWorker<S>, msg: unknown, transfer?: readonly Transferable[]): boolean {
    if (!w.alive) return false
    w.thread.postMessage(msg, transfer as Transferable[] | undefined)
    return true
  }

  /**
   * Stops the running workers' zlib calls for good (src/util/zlib-gate.ts), waiting up to `maxMs`
   * for those under way, without ending the threads; returns whether all were idle in time.
   */
  stopZlib(maxMs = 2000): boolean {
    const gates: Int32Array[] = []
    for (const w of this.workers) if (w.gate) gates.push(w.gate)
    for (const g of gates) Atomics.store(g, 0, 1)
    let idle = true
    for (const g of gates) idle = stopZlibGate(g, maxMs) && idle
    return idle
  }

  /** rejects what is pending, and ends the workers (each out of zlib first) */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const ws = this.shutdown(new WorkerDiedError(`${this.opts.name}s are closed`))
    await Promise.all(ws.map((w) => w.thread.terminate()))
  }
}
