/**
 * Rendering of finalized ranges in worker threads (`render-worker.ts`).
 *
 * The finalized part of a dataset is immutable chunk files on disk, so any thread can open it
 * read-only. A stream response splits its finalized range into segments of consecutive slots;
 * the pool's workers render segments (several streams' segments interleaved, first come first
 * served) into Buffers of complete JSON lines, transferred back; the stream takes the blocks back
 * in block order, one at a time, exactly as the engine yields them (the same `empty` boundary
 * blocks of each segment, which the server's response loop drops as it drops the engine's), so
 * the bytes of the response are those of the in-thread path and the response budget applies
 * block by block as before.
 *
 * Read-ahead is bounded per stream (`readAheadBytes`, at most `2 × threads` segments rendered or
 * being rendered): a stream whose client does not read stops asking for segments, so socket
 * backpressure reaches the workers. A stream that ends (response budget, client gone, error)
 * drops its queued segments at once; a segment a worker is rendering runs to its end and is
 * discarded (segments are small: about `segmentBytes` of output).
 *
 * Segment sizes adapt to the query: the first segments are a few slots (the first bytes go out
 * soon), the next ones aim at `segmentBytes` of output from the bytes per slot seen so far.
 */
import { Worker } from 'node:worker_threads'
import type { QueryLimits } from '../query/index.ts'
import { workerExecArgv } from '../util/worker-argv.ts'

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
}

/**
 * Worker threads by default: none. The pool is opt-in (`serve --render-threads N`) until its memory
 * is bounded: with 2 threads, 8 concurrent wide streams reached 3.6 GB RSS (array buffers of
 * transferred segments held by the main thread), against 0.7 GB without the pool; and on 2 cores
 * the workers only compete with the main thread for the same CPU (bench/parallel.bench.ts measured
 * 0.5-0.9x of the in-thread MB/s there). On a machine with idle cores, the cores less one (at most
 * 8) is the setting to measure.
 */
export function defaultRenderThreads(): number {
  return 0
}

/**
 * The cold cache of each thread that opens a dataset (the main thread and every worker): the one
 * budget `totalBytes` (serve --cache-mb) split evenly, 1 MiB at least
 */
export function workerCacheBytes(totalBytes: number, threads: number): number {
  return Math.max(1024 * 1024, Math.floor(totalBytes / (Math.max(0, threads) + 1)))
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

export type RenderResult =
  | {
      type: 'done'
      id: number
      bytes: ArrayBuffer
      numbers: number[]
      hashes: string[]
      /** end offset of each block's line (newline included) in `bytes` */
      ends: number[]
      empty: boolean[]
    }
  | { type: 'error'; id: number; message: string }

type Done = Extract<RenderResult, { type: 'done' }>

class RenderError extends Error {}

interface Task {
  req: RenderRequest
  owner: PoolStream
  resolve: (r: Done) => void
  reject: (e: Error) => void
  worker?: PoolWorker
}

interface PoolWorker {
  worker: Worker
  /** tasks sent and not answered */
  running: Map<number, Task>
  /** streams whose query this worker has */
  streams: Set<number>
  failed: Error | null
}

/** segments sent to one worker at a time (the next one is queued there while it renders) */
const PER_WORKER = 2

export class RenderPool {
  readonly threads: number
  readonly readAheadBytes: number
  readonly segmentBytes: number
  readonly minSlots: number
  private readonly cacheBytes: number
  private workers: PoolWorker[] | null = null
  private readonly queue: Task[] = []
  private nextId = 1
  private nextStream = 1
  private closed = false
  private readonly open_ = new Set<PoolStream>()
  /** counters: segments rendered, their bytes, segments dropped by streams that ended */
  readonly stats = { segments: 0, bytes: 0, discarded: 0 }

  constructor(opts: RenderPoolOptions) {
    this.threads = Math.max(0, Math.floor(opts.threads))
    this.cacheBytes = opts.cacheBytes ?? 64 * 1024 * 1024
    this.readAheadBytes = opts.readAheadBytes ?? 8 * 1024 * 1024
    this.segmentBytes = opts.segmentBytes ?? 1024 * 1024
    this.minSlots = opts.minSlots ?? 8
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
  stream(dir: string, body: unknown, limits: Partial<QueryLimits>, bigintsAsNumbers: boolean): PoolStream {
    const s = new PoolStream(this, this.nextStream++, dir, { body, limits, bigintsAsNumbers })
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
      const worker = new Worker(new URL('./render-worker.mjs', import.meta.url), {
        workerData: setup,
        execArgv: workerExecArgv(),
      })
      const pw: PoolWorker = { worker, running: new Map(), streams: new Set(), failed: null }
      worker.unref()
      worker.on('message', (r: RenderResult) => this.answer(pw, r))
      const fail = (e: Error) => {
        pw.failed ??= e
        for (const t of pw.running.values()) t.reject(new RenderError(`render worker failed: ${e.message}`))
        pw.running.clear()
        this.pump()
      }
      worker.on('error', fail)
      worker.on('exit', (code) => fail(new Error(`exited with code ${code}`)))
      ws.push(pw)
    }
    return ws
  }

  private answer(w: PoolWorker, r: RenderResult): void {
    const t = w.running.get(r.id)
    w.running.delete(r.id)
    if (t) {
      if (r.type === 'done') {
        this.stats.segments++
        this.stats.bytes += r.bytes.byteLength
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
        if (!w.streams.has(t.owner.id)) {
          w.streams.add(t.owner.id)
          w.worker.postMessage({ type: 'open', stream: t.owner.id, ...t.owner.query } satisfies WorkerMessage)
        }
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
    await Promise.all(ws.map((w) => w.worker.terminate()))
  }
}

interface Segment {
  from: number
  to: number
  /** the rendered bytes once done, until the segment is taken or dropped */
  result: Done | null
  dropped: boolean
  task: Task
  promise: Promise<Done>
}

export class PoolStream {
  private readonly ahead: Segment[] = []
  /** slots and bytes of the segments rendered so far (the bytes-per-slot estimate) */
  private slotsSeen = 0
  private bytesSeen = 0
  private ended = false
  /** bytes of rendered segments not yet taken (the one being taken included) */
  heldBytes = 0

  constructor(
    private readonly pool: RenderPool,
    readonly id: number,
    readonly dir: string,
    readonly query: { body: unknown; limits: Partial<QueryLimits>; bigintsAsNumbers: boolean },
  ) {}

  private bytesPerSlot(): number {
    return this.slotsSeen === 0 ? 0 : this.bytesSeen / this.slotsSeen
  }

  /** bytes held plus those expected of the segments asked for and not rendered yet */
  private expected(): number {
    const per = this.bytesPerSlot()
    let n = this.heldBytes
    for (const s of this.ahead) if (s.result === null) n += per * (s.to - s.from + 1)
    return n
  }

  /** ask for segments from `next` on while the read-ahead has room; returns the next slot not asked for */
  private fill(next: number, to: number): number {
    const pool = this.pool
    // before the first segment is back (nothing known of the query's bytes per slot): one slot
    // per worker; then about segmentBytes per segment (at most 4,096 slots)
    const maxSegments = this.slotsSeen === 0 ? pool.threads : 2 * pool.threads
    while (
      next <= to &&
      this.ahead.length < maxSegments &&
      (this.ahead.length === 0 || this.expected() < pool.readAheadBytes)
    ) {
      const per = this.bytesPerSlot()
      const slots =
        this.slotsSeen === 0 ? 1 : Math.max(1, Math.min(4096, per === 0 ? 4096 : Math.floor(pool.segmentBytes / per)))
      const { task, promise } = pool.submit(this, next, Math.min(to, next + slots - 1))
      const seg: Segment = { from: task.req.from, to: task.req.to, result: null, dropped: false, task, promise }
      promise.then(
        (r) => {
          this.slotsSeen += seg.to - seg.from + 1
          this.bytesSeen += r.bytes.byteLength
          if (seg.dropped) return
          seg.result = r
          this.heldBytes += r.bytes.byteLength
        },
        () => {},
      )
      this.ahead.push(seg)
      next = seg.to + 1
    }
    return next
  }

  private drop(seg: Segment): void {
    if (seg.dropped) return
    seg.dropped = true
    if (seg.result !== null) this.heldBytes -= seg.result.bytes.byteLength
    seg.result = null
    this.pool.cancel(seg.task)
  }

  /**
   * The engine's blocks of [from, to] (a finalized range), rendered by the workers; `shouldStop`
   * is checked after each block, as the engine does.
   */
  async *blocks(from: number, to: number, shouldStop?: () => boolean): AsyncGenerator<PooledBlock> {
    let next = from
    try {
      for (;;) {
        next = this.fill(next, to)
        const seg = this.ahead[0]
        if (!seg) return
        const r = await seg.promise
        const data = Buffer.from(r.bytes)
        try {
          let start = 0
          for (let i = 0; i < r.numbers.length; i++) {
            const end = r.ends[i]
            yield { number: r.numbers[i], hash: r.hashes[i], empty: r.empty[i], data: data.subarray(start, end) }
            start = end
            if (shouldStop?.()) return
          }
        } finally {
          this.ahead.shift()
          this.drop(seg)
        }
      }
    } finally {
      // ended early: what was asked for ahead is not needed
      for (const s of this.ahead.splice(0)) this.drop(s)
    }
  }

  /** the response is over: queued segments are dropped, the workers forget the query */
  close(): void {
    if (this.ended) return
    this.ended = true
    for (const s of this.ahead.splice(0)) this.drop(s)
    this.pool.release(this)
  }
}
