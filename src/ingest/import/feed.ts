/**
 * The batches of an import: lines go to the backend's open batch (in the ring of lines shared
 * with the workers, line-ring.ts, or as buffers of their own within the read-ahead), a batch is
 * closed by the line that fills it (batch.ts `BatchCut`) and the next line opens the next one at
 * once; the encoded chunks are written to the store in batch order. At most two batches per
 * worker are in hand at a time (one being filled, one encoded): the input is not read further
 * ahead.
 */
import type { NormalizationWarning } from '../../normalize/normalize.ts'
import type { DiskColdStore } from '../../store/cold/disk-store.ts'
import { joinPieces } from '../archive.ts'
import { BatchCut, LineError, type LineResult } from './batch.ts'
import type { LineRing } from './line-ring.ts'
import { ImportError, type EncodedBatch, type ImportBackend, type ImportResult } from './types.ts'

/** a batch being filled: its new blocks (not those of the tail) */
interface OpenBatch {
  id: number
  first: number
  last: number
  count: number
}

/** a line sent, not acknowledged yet: its bytes, and whether it is in the ring */
interface SentLine {
  seq: number
  ack: Promise<LineResult>
  bytes: number
  inRing: boolean
}

export interface FeedOptions {
  store: DiskColdStore
  backend: ImportBackend
  /** where lines go to the workers (one too long for it goes as a buffer of its own) */
  ring: LineRing | null
  /** bytes of lines sent and not yet acknowledged, at most (at least one line is sent) */
  readAhead: number
  workers: number
  /** the store's unsealed tail files, rewritten with the first batch (so they end up sealed) */
  tail: readonly string[]
  /** counts of what became durable */
  res: ImportResult
  onBatch?: (r: Readonly<ImportResult>) => void
  /** a warning of the line at `where` */
  onWarning: (where: string, w: NormalizationWarning) => void
}

export class BatchFeed {
  /** lines acknowledged */
  normalized = 0
  private seq = 0
  private nextId = 0
  private open: OpenBatch | null = null
  /** lines sent, not acknowledged yet, oldest first */
  private readonly sent: SentLine[] = []
  private inFlight = 0
  /** the place (file:line) of each line sent and not yet acknowledged, for errors */
  private readonly places = new Map<number, string>()
  private writer: Promise<void> = Promise.resolve()
  /** writes of closed batches, in order (at most two batches per worker in hand: bounded memory) */
  private readonly writes: Promise<void>[] = []
  private readonly cut: BatchCut

  constructor(private readonly o: FeedOptions) {
    this.cut = new BatchCut(o.store.targetBlocks, o.store.targetBytes)
  }

  private placed(e: unknown): unknown {
    return e instanceof LineError ? new ImportError(`${this.places.get(e.seq) ?? 'a line'}: ${e.message}`) : e
  }

  private closeBatch(b: OpenBatch, sealed: boolean): void {
    const { backend, store, tail, res } = this.o
    backend.end(b.id, sealed)
    const chunk = backend.chunk(b.id)
    chunk.catch(() => undefined) // awaited in order below
    this.writer = this.writer.then(async () => {
      let c: EncodedBatch
      try {
        c = await chunk
      } catch (e) {
        throw this.placed(e)
      }
      await store.appendEncoded(c, { sealed: c.sealed, replacesTail: b.id === 0 && tail.length > 0 })
      res.imported += b.count
      res.firstBlock ??= b.first
      res.lastBlock = b.last
      this.o.onBatch?.(res)
    })
    this.writer.catch(() => undefined) // awaited below
    this.writes.push(this.writer)
  }

  /** wait for the ack of the oldest line sent */
  private async settle(): Promise<void> {
    const { seq: s, ack, bytes: n, inRing } = this.sent.shift()!
    this.inFlight -= n
    let r: LineResult
    try {
      r = await ack
    } catch (e) {
      throw this.placed(e)
    } finally {
      // the worker read the line before it answered: its place in the ring may be reused
      if (inRing) this.o.ring!.release()
    }
    const where = this.places.get(s)!
    this.places.delete(s)
    this.normalized++
    for (const w of r.warnings) this.o.onWarning(where, w)
  }

  /**
   * send a line to the open batch (opening the next one when none is), closing the batch when
   * the line fills it: the next line goes to the next batch at once, on the worker with the
   * fewest batches in hand
   */
  async send(slot: number, pieces: Buffer[], length: number, where: string, textLength = length): Promise<void> {
    const { backend, ring, readAhead } = this.o
    if (!this.open) {
      while (this.writes.length >= 2 * this.o.workers) await this.writes.shift()
      this.open = { id: this.nextId++, first: slot, last: slot, count: 0 }
      this.cut.begin(await backend.start(this.open.id, this.open.id === 0 ? this.o.tail : []))
    }
    const open = this.open
    // a place in the ring, once older lines are released; a line longer than the ring goes as a
    // buffer of its own, within the read-ahead
    const ringed = ring !== null && length <= ring.size
    let at = ringed ? ring.room(length) : -1
    while (this.sent.length > 0 && (ringed ? at < 0 : this.inFlight + length > readAhead)) {
      await this.settle()
      if (ringed) at = ring.room(length)
    }
    const line = at >= 0 ? ring!.place(pieces, length, at) : joinPieces(pieces)
    const s = this.seq++
    const ack = backend.line(open.id, s, line) // (its buffer may be transferred: not read after)
    ack.catch(() => undefined) // awaited in order by settle
    this.places.set(s, where)
    this.sent.push({ seq: s, ack, bytes: length, inRing: at >= 0 })
    this.inFlight += length
    open.last = slot
    open.count++
    if (this.cut.add(textLength)) {
      this.closeBatch(open, true)
      this.open = null
    }
  }

  /** the input ended: the last lines acknowledged, the last batch (unsealed) closed, all written */
  async finish(): Promise<void> {
    while (this.sent.length) await this.settle()
    if (this.open) this.closeBatch(this.open, false)
    this.open = null
    for (const w of this.writes) await w
  }

  /** after a failure: what was complete before it is kept (a failed worker fails its batches at once) */
  async settled(): Promise<void> {
    await Promise.allSettled(this.writes)
  }
}
