/**
 * The blocks of one stream response: each range [from, to] the response runs (the first one, then
 * one per head it follows, src/server/stream-protocol.ts) rendered one block per turn of the
 * RenderScheduler (src/server/budget.ts) and handed to the LineWriter; the finalized part of a
 * range through the render pool's workers when the dataset allows it (src/server/render-pool.ts).
 *
 * Lines of blocks with nothing selected are held back: such a block is written only if it is the
 * first of the response or turns out to be the last (docs/query.md §4). The engine always yields
 * the first and last block of each range it runs; a response that follows the head runs several
 * ranges, and only the very last range end may appear as an empty block.
 */
import { executeQuery } from '../query/index.ts'
import type { ExecuteOptions, OutputBlock, ParsedQuery } from '../query/index.ts'
import type { HeadInfo } from '../store/chunk.ts'
import type { RenderScheduler } from './budget.ts'
import type { Dataset } from './datasets.ts'
import type { LineWriter } from './line-writer.ts'
import type { MemoryGate } from './memory-gate.ts'
import type { PoolStream, PooledBlock, RenderPool } from './render-pool.ts'

export interface ResponseBlocksOptions {
  ds: Dataset
  out: LineWriter
  scheduler: RenderScheduler
  /** blocks the request asks for, up to the head it started with (see RenderScheduler) */
  span: number
  finalizedOnly: boolean
  /** the client went away (or its response was destroyed) */
  gone: AbortSignal
  /** true: the response ends at the next block boundary */
  shouldStop: () => boolean
  pool: RenderPool | null
  /** this response's share of the render pool; null: every block is rendered in this thread */
  pooled: PoolStream | null
  /** the server's memory limit, asked before each chunk (src/server/memory-gate.ts); null: none */
  memoryGate: MemoryGate | null
}

const NO_BYTES = Buffer.alloc(0)

export class ResponseBlocks {
  /** the last block rendered (written or held back); null before the first */
  last: HeadInfo | null = null
  /** an empty block held back */
  private pending: OutputBlock | PooledBlock | null = null
  private written = 0
  /** the turn this stream holds (see RenderScheduler); null between turns */
  private release: (() => void) | null = null
  private readonly holding: boolean | (() => boolean)
  private readonly bigintsAsNumbers: boolean

  constructor(private readonly o: ResponseBlocksOptions) {
    const pooled = o.pooled
    this.holding = pooled ? () => pooled.holding : false
    this.bigintsAsNumbers = o.ds.bigintsAsNumbers ?? false
  }

  /** render and write the blocks of [query.fromBlock, to] (fewer when the response ends early) */
  async writeRange(query: ParsedQuery, to: number): Promise<void> {
    const { out, scheduler, span, gone } = this.o
    const holding = this.holding
    const opts = {
      to,
      finalizedOnly: this.o.finalizedOnly,
      bigintsAsNumbers: this.bigintsAsNumbers,
      shouldStop: this.o.shouldStop,
      pause: this.pause,
      enterChunk: this.o.memoryGate ? this.enterChunk : undefined,
    }
    const blocks = this.rangeBlocks(query, opts)
    let done = false
    try {
      for (;;) {
        // one block rendered and handed to the socket per turn (see RenderScheduler)
        // (a stream holding blocks a render worker rendered takes its turns even when the
        // budget is full, which their bytes help fill: see PoolStream.holding)
        // (at once when no other stream waits: no promise and abort listener per block)
        this.release =
          (gone.aborted ? null : scheduler.tryAcquire(out.bytes, span, holding)) ??
          (await scheduler.acquire(out.bytes, span, gone, holding))
        if (!this.release) break
        let next: IteratorResult<OutputBlock | PooledBlock>
        let room = true
        try {
          next = await blocks.next()
          if (!next.done && !gone.aborted) room = this.add(next.value)
        } finally {
          this.release?.()
          this.release = null
        }
        if (next.done) {
          done = true
          break
        }
        if (!room) await out.drained()
        // the range's last block is out: end the engine's iteration now, without waiting for
        // another turn only to learn that nothing follows (a one-block query waits for one turn)
        if (this.last !== null && this.last.number >= to) break
      }
    } finally {
      // an early exit ends the engine's iteration (its stores' readers finish)
      if (!done) await blocks.return?.(undefined)
    }
  }

  /** the last block, when it was an empty one held back */
  async end(): Promise<void> {
    const { out, gone } = this.o
    if (this.pending && !gone.aborted && !addBlock(out, this.pending)) await out.drained()
  }

  /** a rendered block: written, or held back when empty; false: wait for `drained()` */
  private add(b: OutputBlock | PooledBlock): boolean {
    this.last = { number: b.number, hash: b.hash }
    if (b.empty && this.written > 0) {
      this.pending = b
      return true
    }
    this.pending = null
    this.written++
    const room = addBlock(this.o.out, b)
    // the writer has the bytes now: drop the string, so the engine's and writeRange's suspended
    // frames (which keep `b` while the stream waits for its next turn) do not hold a block's JSON
    // (MBs) per waiting stream
    if ('data' in b) b.data = NO_BYTES
    else {
      b.line = ''
      b.bytes = undefined
    }
    return room
  }

  /**
   * A long block (a big chunk's filters, a block of thousands of rows) pauses every slice: the
   * event loop runs (new requests are read), and the turn goes to a smaller response waiting for
   * one (see RenderScheduler.shouldYield)
   */
  private readonly pause = async (): Promise<boolean> => {
    const { out, scheduler, span, gone } = this.o
    await new Promise<void>((resolve) => setImmediate(resolve))
    if (gone.aborted) return false
    if (!scheduler.shouldYield(out.bytes)) return true
    this.release?.()
    this.release = null
    this.release = await scheduler.acquire(out.bytes, span, gone, true)
    return this.release !== null
  }

  /**
   * The memory limit's right to start a chunk (MemoryGate): at once, or waited for without the
   * render turn (`wait`), so that the streams holding chunks take their turns and free them.
   */
  private readonly enterChunk = async (): Promise<(() => void) | null> => {
    const gate = this.o.memoryGate!
    const now = gate.tryEnter()
    if (now) return now
    let leave: (() => void) | null = null
    const entered = gate.enter(this.o.gone).then((l) => (leave = l))
    if (await this.wait(entered)) return leave
    ;(leave as (() => void) | null)?.()
    return null
  }

  /** waiting for a render worker's segment: the turn goes to another stream meanwhile */
  private readonly wait = async (rendered: Promise<unknown>): Promise<boolean> => {
    const { out, scheduler, span, gone } = this.o
    this.release?.()
    this.release = null
    await rendered.then(
      () => {},
      () => {},
    )
    if (gone.aborted) return false
    this.release = await scheduler.acquire(out.bytes, span, gone, true)
    return this.release !== null
  }

  /**
   * The engine's blocks of [query.fromBlock, opts.to]: the finalized part through the render pool
   * when it is long enough (segments rendered by the workers, and by this thread for its share),
   * the rest (or all of it) in this thread. `add` drops the extra header-only boundary blocks
   * either way.
   */
  private rangeBlocks(query: ParsedQuery, opts: ExecuteOptions): AsyncGenerator<OutputBlock | PooledBlock> {
    const { ds, pool, pooled } = this.o
    const to = query.toBlock !== undefined && query.toBlock < opts.to ? query.toBlock : opts.to
    if (pooled && pool) {
      const fin = ds.store.finalizedHead()
      const coldTo = fin ? Math.min(to, fin.number) : -1
      if (coldTo >= query.fromBlock && pool.wants(query.fromBlock, coldTo))
        return this.pooledBlocks(query, opts, pooled, coldTo, to)
    }
    // the engine's own iteration (no generator in between: a block costs one resumption less)
    return executeQuery(ds.store, query, opts)
  }

  /** `rangeBlocks` through the render pool: blocks up to `coldTo` (finalized), then the rest up to `to` here */
  private async *pooledBlocks(
    query: ParsedQuery,
    opts: ExecuteOptions,
    pooled: PoolStream,
    coldTo: number,
    to: number,
  ): AsyncGenerator<OutputBlock | PooledBlock> {
    const ds = this.o.ds
    const from = query.fromBlock
    let stopped = false
    const stop = opts.shouldStop
    const shouldStop = stop && (() => (stopped = stop()))
    const local = (a: number, b: number) =>
      executeQuery(ds.store, { ...query, fromBlock: a }, { ...opts, to: b, shouldStop })
    yield* pooled.blocks(from, coldTo, { shouldStop, local, wait: this.wait })
    if (stopped || coldTo >= to) return
    yield* executeQuery(ds.store, { ...query, fromBlock: coldTo + 1 }, opts)
  }
}

/** a block's line to the writer, as the engine or a render worker made it; false: wait for `drained()` */
function addBlock(out: LineWriter, b: OutputBlock | PooledBlock): boolean {
  return 'data' in b ? out.addBytes(b.data) : out.addLine(b.bytes ?? b.line)
}
