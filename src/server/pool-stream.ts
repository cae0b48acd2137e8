/**
 * One response's stream over the render pool (render-pool.ts): the blocks of its finalized ranges
 * as the workers render them, streamed (one worker renders the range, sent in batches credited as
 * the stream takes them) or split (segments shared by the workers and this thread, the share
 * adapted so that neither waits for the other), with the rendered bytes held counted in the
 * response budget until taken.
 */
import type { OutputBlock, QueryLimits } from '../query/index.ts'
import type { ByteBudget } from './budget.ts'
import type { RenderPool, Run, Task } from './render-pool.ts'
import type { Done, PooledBlock } from './render-protocol.ts'

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
