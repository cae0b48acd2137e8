/**
 * The work of `solportal import` on block lines: parse, normalize, gather them into chunk-sized
 * batches and encode each batch as one chunk file. The same code runs in-process (`--workers 1`)
 * and in the import workers (worker.ts), so both write the same bytes.
 *
 * Where a batch ends is decided before its lines are parsed (`BatchCut`, run by the thread that
 * reads the input): a batch is closed by the line that makes it full, `targetBlocks` blocks or
 * `targetBytes` of estimated encoded size, the estimate of a line being its length in bytes times
 * TEXT_BYTES_RATIO. So batches end where the input alone says, never on timing, and the next batch
 * is handed to another worker while the lines of the previous one are still being parsed.
 */
import type { Block } from '../../model.ts'
import type { NormalizationWarning } from '../../normalize/normalize.ts'
import { normalizeArchiveBytesInto } from '../../normalize/text.ts'
import type { PreparedChunk } from '../../store/cold/disk-store-options.ts'
import { estimateBlockBytes } from '../../store/cold/tail-plan.ts'
import { ChunkColumns, readChunkBlocks, type WriteOptions } from '../../store/cold/chunk-file.ts'
import { errorMessage } from '../../util/errors.ts'
import { isBundle } from '../car/bundle.ts'
import { normalizeBundleInto } from '../car/block.ts'

export interface BatchOptions {
  includeVotes: boolean
  encode: WriteOptions
}

/** What adding one line gave: its warnings. */
export interface LineResult {
  warnings: NormalizationWarning[]
}

/** blocks and estimated encoded bytes (`estimateBlockBytes`) of the blocks a batch starts with */
export interface BatchStart {
  blocks: number
  bytes: number
}

/**
 * `estimateBlockBytes` of a normalized block per byte of its archive line, votes dropped:
 * 0.315 for the whole mainnet block of data/mainnet/blocks (602 transactions, 444 not votes),
 * 0.29-0.30 for generated 1,500-transaction blocks, 0.34-0.42 for the litesvm sample's blocks;
 * with the votes kept 0.34, 0.39 and the same. One ratio for all: chunk sizes stay within about a
 * third of what the normalized estimate would give.
 */
export const TEXT_BYTES_RATIO = 0.31

/**
 * Where batches end: after the line that brings a batch to `targetBlocks` blocks or
 * `targetBytes` of estimated encoded size (tail blocks by `estimateBlockBytes`, new lines by their
 * length in bytes times TEXT_BYTES_RATIO). Decided from the input alone, before any line is parsed.
 */
export class BatchCut {
  private blocks = 0
  private bytes = 0

  constructor(
    private readonly targetBlocks: number,
    private readonly targetBytes: number,
  ) {}

  /** a new batch, beginning with these blocks (the store's unsealed tail, or none) */
  begin(start: BatchStart = { blocks: 0, bytes: 0 }): void {
    this.blocks = start.blocks
    this.bytes = start.bytes
  }

  /** A line of `length` bytes joins the batch: whether the batch is full with it. */
  add(length: number): boolean {
    this.blocks++
    this.bytes += Math.ceil(length * TEXT_BYTES_RATIO)
    return this.full
  }

  get full(): boolean {
    return this.blocks >= this.targetBlocks || this.bytes >= this.targetBytes
  }
}

/**
 * Bytes of archive lines per worker that may have been sent and not yet parsed: half the text
 * of a batch at the byte target, at most MAX_READ_AHEAD. Enough for the workers to parse batches
 * side by side: `solportal import --workers 2` of 300 generated 1,500-transaction blocks on 2
 * cores took the same time with a whole batch per worker (18.6-18.7 s, peak RSS 1.16-1.17 GB) as
 * with half (18.5-18.6 s, 1.07-1.11 GB), and longer with an eighth (18.9-19.6 s, 0.96 GB).
 */
export function readAheadBytes(targetBytes: number): number {
  return Math.min(MAX_READ_AHEAD, Math.ceil(targetBytes / TEXT_BYTES_RATIO / 2))
}

/** 64 MiB of lines per worker at most (half of a 32 MB chunk is ~52 MB of text) */
export const MAX_READ_AHEAD = 64 * 1024 * 1024

/** A failure of one line (bad JSON, not an archive line): the message, without the place; the line's number in the run. */
export class LineError extends Error {
  constructor(
    message: string,
    readonly seq: number,
  ) {
    super(message)
  }
}

/**
 * Transactions per slice of records taken into the columns while a block is normalized: a few
 * hundred records, which die in the young generation instead of living (and being copied) until
 * the whole block is normalized.
 */
export const SLICE_TRANSACTIONS = 64

export class BatchBuilder {
  /** the batch's blocks, taken into columns as they come (their record objects are not kept) */
  private columns: ChunkColumns
  /** the batch's bad line: the batch is then dropped at its end */
  private bad: LineError | null = null

  constructor(private readonly opts: BatchOptions) {
    this.columns = new ChunkColumns(opts.encode)
  }

  /**
   * Start a batch with the blocks of these chunk files (the store's unsealed tail, rewritten with
   * the first batch): their count and estimated bytes, for `BatchCut.begin`.
   */
  startWith(files: readonly string[]): BatchStart {
    const start = { blocks: 0, bytes: 0 }
    for (const f of files) {
      for (const b of readChunkBlocks(f)) {
        start.blocks++
        start.bytes += estimateBlockBytes(b)
        this.columns.add(b)
      }
    }
    return start
  }

  /**
   * Parse and normalize one archive line (its bytes; the run's line `seq`) into the batch, its
   * records taken into the columns a slice of transactions at a time as they are made (so they
   * die young).
   * Throws LineError for a bad line; the batch's later lines are then not parsed (they throw the
   * same error) and the batch is not encoded (the import stops on a bad line).
   */
  add(line: Uint8Array, seq: number): LineResult {
    if (this.bad) throw this.bad
    let first = true
    const sink = {
      every: SLICE_TRANSACTIONS,
      take: (part: Block) => {
        this.columns.addPart(part, first)
        first = false
      },
    }
    try {
      const o = { includeVotes: this.opts.includeVotes }
      // a block read from an Old Faithful CAR file (src/ingest/car/bundle.ts)
      if (isBundle(line)) return { warnings: normalizeBundleInto(line, o, sink).warnings }
      // throws only for the line itself (bad JSON, not an archive line); content problems are warnings
      return { warnings: normalizeArchiveBytesInto(line, o, sink).warnings }
    } catch (e) {
      throw (this.bad = new LineError(errorMessage(e), seq))
    }
  }

  /** whether a line of the batch failed */
  get failed(): boolean {
    return this.bad !== null
  }

  get size(): number {
    return this.columns.blockCount
  }

  /**
   * Encode the batch (non-empty) as one chunk file's bytes, sealed (full) or not (the last batch
   * of a run), and start a new batch. A batch with a bad line is dropped instead: rejects with
   * its LineError.
   */
  async encode(sealed: boolean): Promise<PreparedChunk & { sealed: boolean }> {
    const { columns, bad } = this
    this.columns = new ChunkColumns(this.opts.encode)
    this.bad = null
    // its columns hold part of the bad line
    if (bad) throw bad
    const headers = columns.blockHeaders
    const first = headers[0]
    const last = headers[headers.length - 1]
    const enc = await columns.encode()
    return {
      firstBlock: first.number,
      lastBlock: last.number,
      blockCount: headers.length,
      lastHash: last.hash,
      parts: enc.parts,
      bytes: enc.bytes,
      sha256: enc.sha256,
      sealed,
    }
  }
}
