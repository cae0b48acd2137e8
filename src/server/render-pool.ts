/**
 * Rendering of finalized ranges in worker threads (`render-worker.ts`).
 *
 * Streamed ranges (the default, `RenderPoolOptions.streamed`): one worker renders a stream's whole
 * finalized range in one pass of the engine (the same chunks, postings and compiled writers as the
 * in-thread path, set up once) and sends its lines in batches of about `batchBytes` as they fill,
 * while the stream's own thread only writes them to the socket: rendering and sending overlap.
 * The worker runs at most `readAheadBytes` (a batch at least) ahead of the blocks the stream took;
 * the bytes it sent count in the response budget until taken, and while that budget is full it
 * sends the next batch only once the stream has taken the last one. The memory of a batch goes back
 * to the worker once the response wrote it (`adoptLines`): neither thread takes fresh memory per
 * batch. A stream that ends cancels its range: the worker stops at its next block.
 *
 * Split ranges (`streamed: false`):
 * the finalized part of a dataset is immutable chunk files on disk, so any thread can open it
 * read-only. A stream response splits its finalized range into segments of consecutive slots;
 * the pool's workers render segments (several streams' segments interleaved, first come first
 * served) into Buffers of complete JSON lines, transferred back; the stream takes the blocks back
 * in block order, one at a time, exactly as the engine yields them (the same `empty` boundary
 * blocks of each segment, which the server's response loop drops as it drops the engine's), so
 * the bytes of the response are those of the in-thread path and the response budget applies
 * block by block as before.
 *
 * The stream's own thread renders too: between the workers' segments it keeps segments of its own,
 * rendered by the engine in place (under the server's render turns) when the stream reaches them,
 * while the workers render the next ones. Its share adapts: reaching a worker's segment not done
 * yet, it takes more; finding every segment asked for done (the workers had nothing left of this
 * stream), less. While it waits for a worker, its render turn goes to other streams.
 *
 * Read-ahead is bounded per stream (`readAheadBytes`, at most `2 × threads` segments rendered or
 * being rendered): a stream whose client does not read stops asking for segments, so socket
 * backpressure reaches the workers. Rendered bytes held count in the server's response budget
 * (`ByteBudget`) until the stream takes them; while it is full no segment is asked for ahead (the
 * stream renders its next slots in its own thread, waiting for room as without the pool). A stream that ends (response budget, client gone, error)
 * drops its queued segments at once; a segment a worker is rendering runs to its end and is
 * discarded (segments are small: about `segmentBytes` of output).
 *
 * Segment sizes adapt to the query: the first segments are a few slots (the first bytes go out
 * soon), the next ones aim at `segmentBytes` of output from the bytes per slot seen so far.
 *
 * The threads are a `WorkerPool` (src/util/worker-pool.ts). A worker that dies fails the segments
 * and streamed ranges it had (their streams end with an error) and is spawned again after a
 * backoff; while no worker runs, new streams render in the main thread (`enabled` is false), and
 * a pool whose workers keep dying stays so.
 */
import type { Worker } from 'node:worker_threads'
import type { QueryLimits } from '../query/index.ts'
import type { ByteBudget } from './budget.ts'
import { adoptLines } from '../util/json-bytes.ts'
import { WorkerDiedError, WorkerPool, type PoolWorker, type WorkerPoolStats } from '../util/worker-pool.ts'
import { PoolStream } from './pool-stream.ts'
import type { Done, RenderRequest, RenderResult, StreamRequest, WorkerMessage, WorkerSetup } from './render-protocol.ts'

export type {
  PooledBlock,
  RenderRequest,
  RenderResult,
  StreamRequest,
  WorkerMessage,
  WorkerSetup,
} from './render-protocol.ts'
export { PoolStream, type PoolStreamOptions } from './pool-stream.ts'

export interface RenderPoolOptions {
  /** worker threads (0: no pool) */
  threads: number
  /** cold-store cache of each worker (bytes) */
  cacheBytes?: number
  /** rendered bytes a stream may hold ahead of what it has written (bytes) */
  readAheadBytes?: number
  /** output aimed at per segment (bytes) */
  segmentBytes?: number
  /** a finalized range shorter than this many slots renders in the main thread */
  minSlots?: number
  /**
   * Streamed ranges (default): one worker renders a stream's whole finalized range in one pass
   * of the engine, sent in batches of about `batchBytes` while the stream's thread only writes
   * them out. False: the range split into segments shared by the workers and the stream's thread.
   */
  streamed?: boolean
  /** output per batch of a streamed range (bytes) */
  batchBytes?: number
}

class RenderError extends Error {}

/** a segment to render, queued until a worker has room (`submit`, `pump`) */
export interface Task {
  req: Omit<RenderRequest, 'id'>
  owner: PoolStream
  resolve: (r: Done) => void
  reject: (e: Error) => void
  worker?: RenderWorker
}

/** a streamed range: its batches received and not taken yet, and how it ended */
export interface Run {
  id: number
  owner: PoolStream
  worker: RenderWorker
  batches: Done[]
  /** the last batch came */
  finished: boolean
  error: Error | null
  /** resolves the wait for the next batch (or the end) */
  notify: (() => void) | null
  /** bytes the stream took and not yet credited to the worker */
  owed: number
  /** the worker waits for a credit */
  blocked: boolean
}

/** what the pool keeps of each worker (its segments under way are the worker pool's requests) */
interface WorkerState {
  /** streamed ranges sent and not finished */
  runs: Map<number, Run>
  /** memory of its batches written out, to send back (see `adoptLines`), and its bytes */
  back: ArrayBuffer[]
  backBytes: number
  /** streams whose query this worker has */
  streams: Set<number>
}

type RenderWorker = PoolWorker<WorkerState>

/** memory of written batches kept to send back to a worker (its spare line buffers' bound) */
const SPARE_BACK_BYTES = 16 << 20

/** segments sent to one worker at a time (the next one is queued there while it renders) */
const PER_WORKER = 2

/**
 * a dead render worker is spawned again after 5 s (doubled per further death, worker-pool.ts): the
 * main thread renders meanwhile, there is no hurry
 */
const RESPAWN_BACKOFF_MS = 5000

export class RenderPool {
  readonly threads: number
  readonly readAheadBytes: number
  readonly segmentBytes: number
  readonly minSlots: number
  readonly streamed: boolean
  readonly batchBytes: number
  private readonly cacheBytes: number
  private readonly pool: WorkerPool<WorkerState, RenderRequest, RenderResult>
  /** the workers were started (on first use) */
  private started = false
  /** in `start` */
  private starting = false
  private readonly queue: Task[] = []
  private nextStream = 1
  private closed = false
  private readonly open_ = new Set<PoolStream>()
  /**
   * counters: segments rendered by the workers, their bytes, segments dropped by streams that
   * ended, segments the streams rendered in their own thread; streamed ranges started, and buffers
   * of their batches sent back to the workers once written (segments and bytes count their batches)
   */
  readonly stats = { segments: 0, bytes: 0, discarded: 0, local: 0, runs: 0, returned: 0 }

  constructor(opts: RenderPoolOptions) {
    this.threads = Math.max(0, Math.floor(opts.threads))
    this.cacheBytes = opts.cacheBytes ?? 64 * 1024 * 1024
    this.readAheadBytes = opts.readAheadBytes ?? 8 * 1024 * 1024
    this.segmentBytes = opts.segmentBytes ?? 1024 * 1024
    this.minSlots = opts.minSlots ?? 8
    this.streamed = opts.streamed ?? true
    this.batchBytes = opts.batchBytes ?? Math.min(this.segmentBytes, 256 * 1024)
    this.pool = new WorkerPool<WorkerState, RenderRequest, RenderResult>({
      name: 'render worker',
      size: this.threads,
      url: new URL('./render-worker.mjs', import.meta.url),
      zlibGate: true,
      setup: (_slot, gate) => ({
        workerData: { cacheBytes: this.cacheBytes, zlibGate: gate ?? undefined } satisfies WorkerSetup,
        state: { runs: new Map(), back: [], backBytes: 0, streams: new Set() },
      }),
      // (as before the pool: its `unref` came before the listeners, which ref the thread again)
      ref: 'always',
      restarts: { backoffMs: RESPAWN_BACKOFF_MS },
      load: (w) => w.pending + w.state.runs.size,
      onMessage: (w, r) => this.answer(w, r),
      onDeath: (w, e) => this.died(w, e),
      // (a respawned worker: the segments queued meanwhile)
      onSpawn: () => this.starting || this.pump(),
    })
  }

  /** false when off, closed, or no worker runs (streams then render in the main thread) */
  get enabled(): boolean {
    return this.threads > 0 && !this.closed && this.pool.usable && (!this.started || this.pool.workers.length > 0)
  }

  /** the worker threads running */
  get threadHandles(): readonly Worker[] {
    return this.pool.workers.map((w) => w.thread)
  }

  /** the worker threads' counters (spawned, died, segments pending, workers busy) */
  get workerStats(): WorkerPoolStats {
    return this.pool.stats
  }

  /** streams using the pool now */
  get activeStreams(): number {
    return this.open_.size
  }

  /** segments queued or being rendered, all streams */
  get pendingSegments(): number {
    let n = this.queue.length
    for (const w of this.pool.workers) n += w.pending
    return n
  }

  /** streamed ranges a worker renders (or holds, waiting for its stream to take), all streams */
  get pendingRuns(): number {
    let n = 0
    for (const w of this.pool.workers) n += w.state.runs.size
    return n
  }

  /** bytes rendered and not yet taken by their streams, all streams */
  get heldBytes(): number {
    let n = 0
    for (const s of this.open_) n += s.heldBytes
    return n
  }

  /** whether a finalized range [from, to] of a query is worth the pool */
  wants(from: number, to: number): boolean {
    return this.enabled && to - from + 1 >= this.minSlots
  }

  /**
   * A stream over the pool for one response: `body` is the query as the client sent it (parsed
   * again in each worker that renders for it), `dir` the cold store directory of the dataset.
   */
  stream(
    dir: string,
    body: unknown,
    limits: Partial<QueryLimits>,
    bigintsAsNumbers: boolean,
    budget: ByteBudget | null = null,
  ): PoolStream {
    const s = new PoolStream(this, this.nextStream++, dir, { body, limits, bigintsAsNumbers }, budget)
    this.open_.add(s)
    return s
  }

  /** the workers, started on first use */
  private start(): readonly RenderWorker[] {
    this.started = true
    this.starting = true
    try {
      this.pool.spawnAll()
    } finally {
      this.starting = false
    }
    return this.pool.workers
  }

  /** @internal: a segment to render */
  submit(owner: PoolStream, from: number, to: number): { task: Task; promise: Promise<Done> } {
    const req: Omit<RenderRequest, 'id'> = { type: 'render', stream: owner.id, dir: owner.dir, from, to }
    let task!: Task
    const promise = new Promise<Done>((resolve, reject) => {
      task = { req, owner, resolve, reject }
    })
    if (this.closed) task.reject(new RenderError('render pool closed'))
    else {
      this.queue.push(task)
      this.pump()
    }
    return { task, promise }
  }

  /**
   * @internal: a streamed range [from, to] of `owner`, on the least busy worker; null when no
   * worker runs
   */
  startRun(owner: PoolStream, from: number, to: number): Run | null {
    if (this.closed) return null
    this.start()
    const w = this.pool.pick()
    if (w === null) return null
    this.openOn(w, owner)
    const id = this.pool.newId()
    const run: Run = {
      id,
      owner,
      worker: w,
      batches: [],
      finished: false,
      error: null,
      notify: null,
      owed: 0,
      blocked: false,
    }
    w.state.runs.set(id, run)
    this.stats.runs++
    const req: StreamRequest = {
      type: 'stream',
      id,
      stream: owner.id,
      dir: owner.dir,
      from,
      to,
      batchBytes: this.batchBytes,
      aheadBytes: this.readAheadBytes,
    }
    this.pool.post(w, req satisfies WorkerMessage)
    return run
  }

  /** @internal: the bytes of the run its stream took (`owed`) credited: the worker may send as many more */
  credit(run: Run): void {
    const n = run.owed
    run.owed = 0
    run.blocked = false
    if (n > 0 && !run.finished) this.pool.post(run.worker, { type: 'credit', id: run.id, n } satisfies WorkerMessage)
    this.sendBack(run.worker)
  }

  /** the memory of the worker's batches written out since the last time, back to it */
  private sendBack(w: RenderWorker): void {
    const s = w.state
    if (s.back.length === 0 || !w.alive) return
    const buffers = s.back
    s.back = []
    s.backBytes = 0
    this.stats.returned += buffers.length
    this.pool.post(w, { type: 'spare', buffers } satisfies WorkerMessage, buffers)
  }

  /** a batch's memory is written out: kept for the worker (up to the size of its spare buffers) */
  private written(w: RenderWorker, ab: ArrayBuffer): void {
    if (!w.alive) return
    const s = w.state
    s.back.push(ab)
    s.backBytes += ab.byteLength
    while (s.backBytes > SPARE_BACK_BYTES) s.backBytes -= s.back.shift()!.byteLength
  }

  /** @internal: the stream is done with the run (its worker stops it if it still renders) */
  endRun(run: Run): void {
    if (run.worker.state.runs.delete(run.id)) {
      if (!run.finished) this.pool.post(run.worker, { type: 'cancel', id: run.id } satisfies WorkerMessage)
      run.finished = true
    }
    this.sendBack(run.worker)
  }

  private openOn(w: RenderWorker, owner: PoolStream): void {
    if (w.state.streams.has(owner.id)) return
    w.state.streams.add(owner.id)
    this.pool.post(w, { type: 'open', stream: owner.id, ...owner.query } satisfies WorkerMessage)
  }

  /** @internal: a segment no longer needed: dropped when still queued (a running one finishes) */
  cancel(task: Task): void {
    const i = this.queue.indexOf(task)
    if (i < 0) return
    this.queue.splice(i, 1)
    this.stats.discarded++
    task.reject(new RenderError('segment dropped'))
  }

  /** @internal: the stream ended; its queued segments are dropped, its workers forget its query */
  release(owner: PoolStream): void {
    if (!this.open_.delete(owner)) return
    for (const w of this.pool.workers) {
      if (!w.state.streams.delete(owner.id)) continue
      this.pool.post(w, { type: 'close', stream: owner.id } satisfies WorkerMessage)
    }
  }

  /** a worker died (its segments are rejected already): its streamed ranges fail too */
  private died(w: RenderWorker, e: WorkerDiedError): void {
    for (const run of w.state.runs.values()) {
      run.error = new RenderError(e.message)
      run.finished = true
      run.notify?.()
    }
    w.state.runs.clear()
    this.pump()
  }

  /** a batch of a streamed range, or its worker waiting for a credit */
  private answer(w: RenderWorker, r: RenderResult): void {
    const run = w.state.runs.get(r.id)
    if (r.type === 'blocked') {
      if (!run) return
      run.blocked = true
      if (run.owed > 0 && !run.owner.budgetFull) this.credit(run)
      return
    }
    if (!run) return
    if (r.type === 'done') {
      this.stats.segments++
      this.stats.bytes += r.size
      // once the response writer gave back every line of a buffer (`recycleLine`), the memory
      // goes back to the worker for its next batches (no fresh memory per batch on either side)
      const taken = new Array<number>(r.buffers.length).fill(0)
      for (let i = 0; i < r.numbers.length; i++) taken[r.buffer[i]] += r.ends[i] - r.starts[i]
      for (let k = 0; k < r.buffers.length; k++) adoptLines(r.buffers[k], taken[k], (ab) => this.written(w, ab))
      run.batches.push(r)
      run.owner.received(r)
      if (r.last) {
        run.finished = true
        w.state.runs.delete(r.id)
      }
    } else {
      run.error = new RenderError(`render worker: ${r.message}`)
      run.finished = true
      w.state.runs.delete(r.id)
    }
    run.notify?.()
    run.notify = null
  }

  /** a segment's answer */
  private rendered(t: Task, r: RenderResult): void {
    if (r.type === 'done') {
      this.stats.segments++
      this.stats.bytes += r.size
      t.resolve(r)
    } else t.reject(new RenderError(`render worker: ${r.type === 'error' ? r.message : r.type}`))
    this.pump()
  }

  private pump(): void {
    if (this.queue.length === 0 || this.closed) return
    const alive = [...this.start()]
    if (alive.length === 0) {
      const why = this.pool.failure?.message ?? 'no render worker is running'
      for (const t of this.queue.splice(0)) t.reject(new RenderError(why))
      return
    }
    for (let round = 0; round < PER_WORKER && this.queue.length > 0; round++) {
      // the least busy workers first
      for (const w of alive.sort((a, b) => a.pending - b.pending)) {
        if (this.queue.length === 0) return
        if (w.pending > round) continue
        const t = this.queue.shift()!
        this.openOn(w, t.owner)
        t.worker = w
        this.pool.request(t.req, { to: w }).then(
          (r) => this.rendered(t, r),
          (e: Error) => t.reject(new RenderError(e.message)),
        )
      }
    }
  }

  /** stop the workers (open streams fail) */
  async close(): Promise<void> {
    this.closed = true
    for (const t of this.queue.splice(0)) t.reject(new RenderError('render pool closed'))
    const closed = new WorkerDiedError('render pool closed')
    for (const w of this.pool.workers) this.died(w, closed)
    await this.pool.close()
  }
}
