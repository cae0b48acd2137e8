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
 */
import { Worker } from 'node:worker_threads'
import type { OutputBlock, QueryLimits } from '../query/index.ts'
import type { ByteBudget } from './budget.ts'
import { workerExecArgv } from '../util/worker-argv.ts'
import { adoptLines } from '../util/json-bytes.ts'
import { newZlibGate, release, stopAtExit, stopZlibGates } from '../util/zlib-gate.ts'

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

/** What the response loop takes from a pooled range: an engine block with its line as bytes. */
export interface PooledBlock {
  number: number
  hash: string
  empty: boolean
  /** the JSON line and its newline */
  data: Buffer
}

export interface WorkerSetup {
  cacheBytes: number
  /** the thread's zlib gate (src/util/zlib-gate.ts), one per thread */
  zlibGate?: Int32Array
}

export interface RenderRequest {
  type: 'render'
  id: number
  stream: number
  /** the cold store's directory */
  dir: string
  from: number
  to: number
}

/** a whole range rendered in one pass, sent in batches as credits allow (`PoolStream.blocks`, streamed) */
export interface StreamRequest {
  type: 'stream'
  id: number
  stream: number
  dir: string
  from: number
  to: number
  /** output per batch (bytes, a block more at most) */
  batchBytes: number
  /** bytes it may have sent and not taken by the stream (see `credit`; a batch at least) */
  aheadBytes: number
}

export type WorkerMessage =
  | {
      type: 'open'
      stream: number
      body: unknown
      limits: Partial<QueryLimits>
      bigintsAsNumbers: boolean
    }
  | { type: 'close'; stream: number }
  | RenderRequest
  | StreamRequest
  /** `n` more bytes of a streamed range taken by its stream */
  | { type: 'credit'; id: number; n: number }
  | { type: 'cancel'; id: number }
  /** memory of batches the main thread wrote out, for the worker's next ones */
  | { type: 'spare'; buffers: ArrayBuffer[] }

export type RenderResult =
  | {
      type: 'done'
      id: number
      /**
       * the lines: a big line in a buffer of its own (moved, not copied, from the worker), the
       * small ones together in one
       */
      buffers: ArrayBuffer[]
      /** bytes of the lines (with their newlines) */
      size: number
      numbers: number[]
      hashes: string[]
      /** each block's line: the buffer it is in, and where */
      buffer: number[]
      starts: number[]
      ends: number[]
      empty: boolean[]
      /** a streamed range's last batch */
      last?: boolean
    }
  | { type: 'error'; id: number; message: string }
  /** a streamed range's worker waits for a credit */
  | { type: 'blocked'; id: number }

type Done = Extract<RenderResult, { type: 'done' }>

class RenderError extends Error {}

interface Task {
  req: RenderRequest
  owner: PoolStream
  resolve: (r: Done) => void
  reject: (e: Error) => void
  worker?: PoolWorker
}

/** a streamed range: its batches received and not taken yet, and how it ended */
interface Run {
  id: number
  owner: PoolStream
  worker: PoolWorker
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

interface PoolWorker {
  worker: Worker
  /** tasks sent and not answered */
  running: Map<number, Task>
  /** streamed ranges sent and not finished */
  runs: Map<number, Run>
  /** memory of its batches written out, to send back (see `adoptLines`), and its bytes */
  back: ArrayBuffer[]
  backBytes: number
  /** streams whose query this worker has */
  streams: Set<number>
  failed: Error | null
  /** its zlib gate */
  gate: Int32Array
}

/** memory of written batches kept to send back to a worker (its spare line buffers' bound) */
const SPARE_BACK_BYTES = 16 << 20

/** segments sent to one worker at a time (the next one is queued there while it renders) */
const PER_WORKER = 2

export class RenderPool {
  readonly threads: number
  readonly readAheadBytes: number
  readonly segmentBytes: number
  readonly minSlots: number
  readonly streamed: boolean
  readonly batchBytes: number
  private readonly cacheBytes: number
  private workers: PoolWorker[] | null = null
  private readonly queue: Task[] = []
  private nextId = 1
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
  }

  /** false when off, closed, or every worker has died (streams then render in the main thread) */
  get enabled(): boolean {
    return this.threads > 0 && !this.closed && !(this.workers !== null && this.workers.every((w) => w.failed))
  }

  /** the worker threads started so far */
  get threadHandles(): readonly Worker[] {
    return (this.workers ?? []).map((w) => w.worker)
  }

  /** streams using the pool now */
  get activeStreams(): number {
    return this.open_.size
  }

  /** segments queued or being rendered, all streams */
  get pendingSegments(): number {
    let n = this.queue.length
    for (const w of this.workers ?? []) n += w.running.size
    return n
  }

  /** streamed ranges a worker renders (or holds, waiting for its stream to take), all streams */
  get pendingRuns(): number {
    let n = 0
    for (const w of this.workers ?? []) n += w.runs.size
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

  /** @internal: a segment to render */
  submit(owner: PoolStream, from: number, to: number): { task: Task; promise: Promise<Done> } {
    const req: RenderRequest = { type: 'render', id: this.nextId++, stream: owner.id, dir: owner.dir, from, to }
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
    this.workers ??= this.start()
    const alive = this.workers.filter((w) => !w.failed)
    if (alive.length === 0) return null
    const w = alive.reduce((a, b) => (b.running.size + b.runs.size < a.running.size + a.runs.size ? b : a))
    this.openOn(w, owner)
    const id = this.nextId++
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
    w.runs.set(id, run)
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
    w.worker.postMessage(req satisfies WorkerMessage)
    return run
  }

  /** @internal: the bytes of the run its stream took (`owed`) credited: the worker may send as many more */
  credit(run: Run): void {
    const n = run.owed
    run.owed = 0
    run.blocked = false
    if (n > 0 && !run.finished) run.worker.worker.postMessage({ type: 'credit', id: run.id, n } satisfies WorkerMessage)
    this.sendBack(run.worker)
  }

  /** the memory of the worker's batches written out since the last time, back to it */
  private sendBack(w: PoolWorker): void {
    if (w.back.length === 0 || w.failed) return
    const buffers = w.back
    w.back = []
    w.backBytes = 0
    this.stats.returned += buffers.length
    w.worker.postMessage({ type: 'spare', buffers } satisfies WorkerMessage, buffers)
  }

  /** a batch's memory is written out: kept for the worker (up to the size of its spare buffers) */
  private written(w: PoolWorker, ab: ArrayBuffer): void {
    if (w.failed) return
    w.back.push(ab)
    w.backBytes += ab.byteLength
    while (w.backBytes > SPARE_BACK_BYTES) w.backBytes -= w.back.shift()!.byteLength
  }

  /** @internal: the stream is done with the run (its worker stops it if it still renders) */
  endRun(run: Run): void {
    if (run.worker.runs.delete(run.id)) {
      if (!run.finished) run.worker.worker.postMessage({ type: 'cancel', id: run.id } satisfies WorkerMessage)
      run.finished = true
    }
    this.sendBack(run.worker)
  }

  private openOn(w: PoolWorker, owner: PoolStream): void {
    if (w.streams.has(owner.id)) return
    w.streams.add(owner.id)
    w.worker.postMessage({ type: 'open', stream: owner.id, ...owner.query } satisfies WorkerMessage)
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
    for (const w of this.workers ?? []) {
      if (!w.streams.delete(owner.id)) continue
      w.worker.postMessage({ type: 'close', stream: owner.id } satisfies WorkerMessage)
    }
  }

  private start(): PoolWorker[] {
    const setup: WorkerSetup = { cacheBytes: this.cacheBytes }
    const ws: PoolWorker[] = []
    for (let i = 0; i < this.threads; i++) {
      const gate = newZlibGate()
      const worker = new Worker(new URL('./render-worker.mjs', import.meta.url), {
        workerData: { ...setup, zlibGate: gate },
        execArgv: workerExecArgv(),
      })
      // ended at exit or by close(), the thread is never inside zlib (src/util/zlib-gate.ts)
      stopAtExit(gate)
      worker.once('exit', () => release(gate))
      const pw: PoolWorker = {
        worker,
        running: new Map(),
        runs: new Map(),
        back: [],
        backBytes: 0,
        streams: new Set(),
        failed: null,
        gate,
      }
      worker.unref()
      worker.on('message', (r: RenderResult) => this.answer(pw, r))
      const fail = (e: Error) => {
        pw.failed ??= e
        for (const t of pw.running.values()) t.reject(new RenderError(`render worker failed: ${e.message}`))
        pw.running.clear()
        for (const run of pw.runs.values()) {
          run.error = new RenderError(`render worker failed: ${e.message}`)
          run.finished = true
          run.notify?.()
        }
        pw.runs.clear()
        this.pump()
      }
      worker.on('error', fail)
      worker.on('exit', (code) => fail(new Error(`exited with code ${code}`)))
      ws.push(pw)
    }
    return ws
  }

  private answer(w: PoolWorker, r: RenderResult): void {
    const run = w.runs.get(r.id)
    if (r.type === 'blocked') {
      if (!run) return
      run.blocked = true
      if (run.owed > 0 && !run.owner.budgetFull) this.credit(run)
      return
    }
    if (run) {
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
          w.runs.delete(r.id)
        }
      } else {
        run.error = new RenderError(`render worker: ${r.message}`)
        run.finished = true
        w.runs.delete(r.id)
      }
      run.notify?.()
      run.notify = null
      return
    }
    const t = w.running.get(r.id)
    w.running.delete(r.id)
    if (t) {
      if (r.type === 'done') {
        this.stats.segments++
        this.stats.bytes += r.size
        t.resolve(r)
      } else t.reject(new RenderError(`render worker: ${r.message}`))
    }
    this.pump()
  }

  private pump(): void {
    if (this.queue.length === 0 || this.closed) return
    this.workers ??= this.start()
    const alive = this.workers.filter((w) => !w.failed)
    if (alive.length === 0) {
      for (const t of this.queue.splice(0)) t.reject(new RenderError('no render worker is running'))
      return
    }
    for (let round = 0; round < PER_WORKER && this.queue.length > 0; round++) {
      // the least busy workers first
      for (const w of alive.sort((a, b) => a.running.size - b.running.size)) {
        if (this.queue.length === 0) return
        if (w.running.size > round) continue
        const t = this.queue.shift()!
        this.openOn(w, t.owner)
        t.worker = w
        w.running.set(t.req.id, t)
        w.worker.postMessage(t.req satisfies WorkerMessage)
      }
    }
  }

  /** stop the workers (open streams fail) */
  async close(): Promise<void> {
    this.closed = true
    for (const t of this.queue.splice(0)) t.reject(new RenderError('render pool closed'))
    const ws = this.workers ?? []
    this.workers = null
    stopZlibGates(ws.map((w) => w.gate))
    await Promise.all(ws.map((w) => w.worker.terminate()))
  }
}

interface Segment {
  from: number
  to: number
  /** rendered by this thread when reached (streamed through `local`), not by a worker */
  local: boolean
  /** the rendered bytes once done, until the segment is taken or dropped */
  result: Done | null
  /** bytes of `result` not yet handed on (counted in `heldBytes` and the response budget) */
  held: number
  dropped: boolean
  task: Task | null
  promise: Promise<Done> | null
}

/** How a stream renders the parts of its range kept in this thread, and waits for the workers. */
export interface PoolStreamOptions {
  /** checked after each block, as the engine does: true ends the stream there */
  shouldStop?: () => boolean
  /**
   * The engine's blocks of [from, to] rendered in this thread: given, this thread renders a share
   * of the range itself (segments between the workers' ones, the share adapted so that neither
   * side waits for the other); absent, the workers render all of it.
   */
  local?: (from: number, to: number) => AsyncIterable<OutputBlock>
  /**
   * Called instead of waiting on a segment a worker has not finished: the caller gives up its
   * render turn meanwhile (see RenderScheduler) and takes it back; false: the consumer is gone.
   */
  wait?: (rendered: Promise<unknown>) => Promise<boolean>
}

/** the share of a range this thread renders: bounds and step of its adjustment */
const MAX_LOCAL_SHARE = 0.9
const SHARE_STEP = 0.04

export class PoolStream {
  /** segments asked for, in block order (the one being taken is no longer here) */
  private readonly ahead: Segment[] = []
  /** the first slot not in a segment yet */
  private next = 0
  /** slots and bytes of the segments rendered so far (the bytes-per-slot estimate) */
  private slotsSeen = 0
  private bytesSeen = 0
  /**
   * share of the range rendered in this thread (when it renders: `PoolStreamOptions.local`), and
   * the slots owed to it by the worker segments asked for so far
   */
  localShare: number
  private localCredit = 0
  private ended = false
  /** bytes of rendered segments not yet taken (the one being taken included) */
  heldBytes = 0
  /** streamed ranges asked for and not done with */
  private readonly runs = new Set<Run>()

  constructor(
    private readonly pool: RenderPool,
    readonly id: number,
    readonly dir: string,
    readonly query: { body: unknown; limits: Partial<QueryLimits>; bigintsAsNumbers: boolean },
    /** the response budget: rendered bytes held count there, and no segment is asked for while it is full */
    private readonly budget: ByteBudget | null = null,
  ) {
    this.localShare = 1 / (pool.threads + 1)
  }

  /**
   * whether the stream holds rendered bytes (the next block's, or a segment's behind the part it
   * renders itself): its turns are granted even while the response budget is full, since taking
   * its next blocks is what lets those bytes go (else streams holding the budget would wait for it)
   */
  get holding(): boolean {
    return this.heldBytes > 0
  }

  private bytesPerSlot(): number {
    return this.slotsSeen === 0 ? 0 : this.bytesSeen / this.slotsSeen
  }

  /** bytes held plus those expected of the worker segments asked for and not rendered yet */
  private expected(): number {
    const per = this.bytesPerSlot()
    let n = this.heldBytes
    for (const s of this.ahead) if (!s.local && s.result === null) n += per * (s.to - s.from + 1)
    return n
  }

  private workerSegments(): number {
    let n = 0
    for (const s of this.ahead) if (!s.local) n++
    return n
  }

  /** ask for segments up to `to` while the read-ahead has room */
  private fill(to: number, local: boolean): void {
    const pool = this.pool
    // before the first segment is back (nothing known of the query's bytes per slot): one slot
    // per worker; then about segmentBytes per segment (at most 4,096 slots)
    const maxSegments = this.slotsSeen === 0 ? pool.threads : 2 * pool.threads
    while (this.next <= to) {
      const workers = this.workerSegments()
      if (workers >= maxSegments || (workers > 0 && this.expected() >= pool.readAheadBytes)) return
      const per = this.bytesPerSlot()
      const slots =
        this.slotsSeen === 0 ? 1 : Math.max(1, Math.min(4096, per === 0 ? 4096 : Math.floor(pool.segmentBytes / per)))
      if (this.budget?.full && this.ahead.length > 0) return
      if (this.budget?.full && local) {
        // the responses' memory is used up: no rendering ahead; this thread renders the next
        // slots when its turn comes, as without the pool (and waits for room the same way)
        this.push(this.next, Math.min(to, this.next + slots - 1), true)
        return
      }
      if (local && this.localShare > 0) {
        // this thread's part first: it renders that while the worker renders the next segment
        this.localCredit += (slots * this.localShare) / (1 - this.localShare)
        const mine = Math.floor(this.localCredit)
        if (mine > 0) {
          this.localCredit -= mine
          this.push(this.next, Math.min(to, this.next + mine - 1), true)
          if (this.next > to) return
        }
      }
      this.push(this.next, Math.min(to, this.next + slots - 1), false)
    }
  }

  private push(from: number, to: number, local: boolean): void {
    this.next = to + 1
    if (local) {
      this.ahead.push({ from, to, local, result: null, held: 0, dropped: false, task: null, promise: null })
      return
    }
    const { task, promise } = this.pool.submit(this, from, to)
    const seg: Segment = { from, to, local, result: null, held: 0, dropped: false, task, promise }
    promise.then(
      (r) => {
        this.seen(seg.to - seg.from + 1, r.size)
        if (seg.dropped) return
        seg.result = r
        seg.held = r.size
        this.heldBytes += seg.held
        this.budget?.take(seg.held)
        // this stream's turns may now be granted while the budget is full (`holding`)
        this.budget?.wake()
      },
      () => {},
    )
    this.ahead.push(seg)
  }

  private seen(slots: number, bytes: number): void {
    this.slotsSeen += slots
    this.bytesSeen += bytes
  }

  /** `n` bytes of a segment handed on (or dropped) */
  private unhold(seg: Segment, n: number): void {
    seg.held -= n
    this.heldBytes -= n
    this.budget?.release(n)
  }

  private drop(seg: Segment): void {
    if (seg.dropped) return
    seg.dropped = true
    if (seg.held > 0) this.unhold(seg, seg.held)
    seg.result = null
    if (seg.task) this.pool.cancel(seg.task)
  }

  /** this thread waited for a worker: it takes a bigger share; the workers waited: a smaller one */
  private adjust(by: number): void {
    this.localShare = Math.min(MAX_LOCAL_SHARE, Math.max(0, this.localShare + by * SHARE_STEP))
  }

  /**
   * The engine's blocks of [from, to] (a finalized range), rendered by the workers, and by this
   * thread for its share when `opts.local` is given.
   */
  blocks(from: number, to: number, opts: PoolStreamOptions = {}): AsyncGenerator<PooledBlock | OutputBlock> {
    if (this.pool.streamed) {
      // (the range's generator itself, not wrapped in another: one promise less per block)
      const run = this.pool.startRun(this, from, to)
      if (run) {
        this.runs.add(run)
        return this.streamed(run, opts)
      }
    }
    return this.split(from, to, opts)
  }

  /** `blocks` in segments (split ranges) */
  private async *split(from: number, to: number, opts: PoolStreamOptions): AsyncGenerator<PooledBlock | OutputBlock> {
    const { shouldStop, local, wait } = opts
    this.next = from
    try {
      for (;;) {
        this.fill(to, local !== undefined)
        const seg = this.ahead.shift()
        if (!seg) return
        if (seg.local) {
          this.pool.stats.local++
          for await (const b of local!(seg.from, seg.to)) {
            this.seen(0, (b.bytes?.length ?? 0) + 1)
            yield b
            if (shouldStop?.()) return
            this.fill(to, true)
          }
          this.seen(seg.to - seg.from + 1, 0)
          continue
        }
        if (local !== undefined && this.next <= to) {
          // reaching a worker's segment: not done yet, this thread renders too little; done with
          // every segment asked for (the worker had nothing left of this stream), too much
          if (seg.result === null) this.adjust(1)
          else if (this.ahead.every((s) => s.local || s.result !== null)) this.adjust(-1)
        }
        try {
          if (seg.result === null && wait && !(await wait(seg.promise!))) return
          const r = await seg.promise!
          for (let i = 0; i < r.numbers.length; i++) {
            const start = r.starts[i]
            const data = Buffer.from(r.buffers[r.buffer[i]], start, r.ends[i] - start)
            this.unhold(seg, data.length)
            yield { number: r.numbers[i], hash: r.hashes[i], empty: r.empty[i], data }
            if (shouldStop?.()) return
          }
        } finally {
          this.drop(seg)
        }
      }
    } finally {
      // ended early: what was asked for ahead is not needed
      for (const s of this.ahead.splice(0)) this.drop(s)
    }
  }

  /** @internal: whether the response budget is full */
  get budgetFull(): boolean {
    return this.budget?.full ?? false
  }

  /** @internal: a batch of a streamed range came: held (and counted in the response budget) until taken */
  received(r: Done): void {
    this.heldBytes += r.size
    this.budget?.take(r.size)
    // this stream's turns may now be granted while the budget is full (`holding`)
    this.budget?.wake()
  }

  /**
   * The blocks of a streamed range as its worker sends them. The batches taken are credited to the
   * worker, so it renders at most `readAheadBytes` (a batch at least) ahead of the blocks taken;
   * while the response budget is full, the credit is kept back until the stream has nothing left
   * (then the worker sends one batch at a time: the stream moves, nothing more is held).
   */
  private async *streamed(run: Run, opts: PoolStreamOptions): AsyncGenerator<PooledBlock> {
    const { shouldStop, wait } = opts
    const step = Math.max(1, this.pool.readAheadBytes >> 2)
    let batch: Done | null = null
    let i = 0
    try {
      for (;;) {
        if (batch === null || i >= batch.numbers.length) {
          batch = null
          if (run.batches.length === 0) {
            if (run.error) throw run.error
            if (run.finished) return
            // nothing left to take: the worker may send its next batch
            if (run.owed > 0) this.pool.credit(run)
            const came = new Promise<void>((resolve) => (run.notify = resolve))
            if (wait) {
              if (!(await wait(came))) return
            } else await came
            continue
          }
          batch = run.batches.shift()!
          i = 0
          run.owed += batch.size
          // credited a quarter of the read-ahead at a time (a message to the worker per batch
          // cost the main thread ~2 ms of a 10 MB response), or at once when the worker waits
          if ((run.owed >= step || run.blocked) && !this.budget?.full) this.pool.credit(run)
          // (a batch may hold no block: the range's end)
          continue
        }
        const r = batch
        const start = r.starts[i]
        const data = Buffer.from(r.buffers[r.buffer[i]], start, r.ends[i] - start)
        const number = r.numbers[i]
        const hash = r.hashes[i]
        const empty = r.empty[i]
        i++
        this.heldBytes -= data.length
        this.budget?.release(data.length)
        yield { number, hash, empty, data }
        if (shouldStop?.()) return
      }
    } finally {
      let n = 0
      if (batch) for (; i < batch.numbers.length; i++) n += batch.ends[i] - batch.starts[i]
      this.heldBytes -= n
      this.budget?.release(n)
      this.endRun(run)
    }
  }

  /** the stream is done with a streamed range: what was received and not taken is dropped, the worker stops */
  private endRun(run: Run): void {
    this.runs.delete(run)
    this.pool.endRun(run)
    let n = 0
    for (const b of run.batches.splice(0)) n += b.size
    this.heldBytes -= n
    this.budget?.release(n)
  }

  /** the response is over: queued segments are dropped, the workers forget the query */
  close(): void {
    if (this.ended) return
    this.ended = true
    for (const s of this.ahead.splice(0)) this.drop(s)
    // (a streamed range whose blocks were never asked for)
    for (const run of this.runs) this.endRun(run)
    this.pool.release(this)
  }
}
