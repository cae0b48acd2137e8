/**
 * The work of `solportal import` on block lines: parse, normalize, gather them into chunk-sized
 * batches and encode each batch as one chunk file. The same code runs in-process (`--workers 1`)
 * and in the import workers (import-worker.ts), so both write the same bytes.
 *
 * A batch is closed by the block that makes it full (`targetBlocks` blocks, or `targetBytes` of
 * `estimateBlockBytes`), so where batches end depends only on the blocks, never on timing.
 */
import type { Block } from '../../model.ts'
import type { NormalizationWarning } from '../../normalize/normalize.ts'
import { normalizeArchiveTextInto } from '../../normalize/text.ts'
import { BLOCK_BASE_BYTES, estimateBlockBytes, estimateRecordBytes, type PreparedChunk } from '../../store/cold.ts'
import { ChunkColumns, readChunkBlocks, type WriteOptions } from '../../store/cold/chunk-file.ts'
import { errorMessage } from '../../util/errors.ts'

export interface BatchOptions {
  includeVotes: boolean
  targetBlocks: number
  targetBytes: number
  encode: WriteOptions
}

/** What adding one line gave: its warnings, and whether it closed the batch. */
export interface LineResult {
  warnings: NormalizationWarning[]
  full: boolean
}

/** A failure of one line (bad JSON, not an archive line): the message, without the place. */
export class LineError extends Error {}

/**
 * Transactions per slice of records taken into the columns while a block is normalized: a few
 * hundred records, which die in the young generation instead of living (and being copied) until
 * the whole block is normalized.
 */
export const SLICE_TRANSACTIONS = 64

export class BatchBuilder {
  /** the batch's blocks, taken into columns as they come (their record objects are not kept) */
  private columns: ChunkColumns
  private bytes = 0

  constructor(private readonly opts: BatchOptions) {
    this.columns = new ChunkColumns(opts.encode)
  }

  /** Start a batch with the blocks of these chunk files (the store's unsealed tail, rewritten with the first batch). */
  startWith(files: readonly string[]): void {
    for (const f of files) for (const b of readChunkBlocks(f)) this.push(b)
  }

  private push(b: Block): boolean {
    this.bytes += estimateBlockBytes(b)
    this.columns.add(b)
    return this.full()
  }

  private full(): boolean {
    return this.columns.blockCount >= this.opts.targetBlocks || this.bytes >= this.opts.targetBytes
  }

  /**
   * Parse and normalize one archive line into the batch, its records taken into the columns a
   * slice of transactions at a time as they are made (so they die young). Throws LineError for a
   * bad line, after which the batch is not to be encoded (the import stops on a bad line).
   */
  add(text: string): LineResult {
    let first = true
    const sink = {
      every: SLICE_TRANSACTIONS,
      take: (part: Block) => {
        this.bytes += estimateRecordBytes(part) + (first ? BLOCK_BASE_BYTES : 0)
        this.columns.addPart(part, first)
        first = false
      },
    }
    let r
    try {
      // throws only for the line itself (bad JSON, not an archive line); content problems are warnings
      r = normalizeArchiveTextInto(text, { includeVotes: this.opts.includeVotes }, sink)
    } catch (e) {
      throw new LineError(errorMessage(e))
    }
    return { warnings: r.warnings, full: this.full() }
  }

  get size(): number {
    return this.columns.blockCount
  }

  /** Encode the batch (non-empty) as one chunk file's bytes and start a new batch. */
  async encode(): Promise<PreparedChunk & { sealed: boolean }> {
    const columns = this.columns
    const sealed = this.full()
    this.columns = new ChunkColumns(this.opts.encode)
    this.bytes = 0
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
