/**
 * The shapes of `solportal import` (pipeline.ts `runImport`): its options and result, the input it
 * reads lines from (archive and CAR files, input.ts, or a node), and the backend that parses,
 * normalizes and encodes its batches (backend.ts in this thread, worker-backend.ts in threads).
 */
import type { ResourceLimits } from 'node:worker_threads'
import type { PreparedChunk } from '../../store/cold/disk-store.ts'
import type { FormatVersion } from '../../store/cold/chunk-file.ts'
import type { BatchStart, LineResult } from './batch.ts'

export interface ImportOptions {
  includeVotes?: boolean
  targetBlocks?: number
  targetBytes?: number
  compress?: boolean
  /** chunk file format version (default the current one; older ones for benches comparing formats) */
  formatVersion?: FormatVersion
  /** print progress (default: when stderr is a TTY, else a line every 10 s) */
  progress?: 'tty' | 'lines' | 'none'
  /** stop (after making the current batch durable) when this resolves / aborts */
  signal?: AbortSignal
  /** warnings printed individually (the rest are counted); default 20 */
  maxWarnings?: number
  /** called after each batch became durable */
  onBatch?: (r: Readonly<ImportResult>) => void
  /**
   * threads that parse, normalize and encode (default `defaultWorkers()`: the available
   * parallelism, at most 8); 1 = all in this thread. The chunk files are the same either way.
   */
  workers?: number
  /** limits of each worker thread (tests: a worker running out of memory) */
  workerResourceLimits?: ResourceLimits
  /** Old Faithful CAR inputs: check each node's sha256 against its CID */
  verify?: boolean
  /** Old Faithful CAR URLs: told when a broken download resumes */
  onResume?: (offset: number, reason: string) => void
  /** wraps the batches' backend (tests: watch or hold what the workers are given and answer) */
  wrapBackend?: (b: ImportBackend) => ImportBackend
  /** where the lines come from instead of archive files (`import --rpc`: src/cli/commands/import-rpc.ts) */
  input?: ImportInput
}

/** the lines an import reads: archive files, or a node (src/cli/commands/import-rpc.ts) */
export interface ImportInput {
  /**
   * the lines in ascending slot order, each as its bytes in pieces (valid until the next line is
   * asked for) and its place for messages; `resumeAfter`: the dataset's last block (-1: none)
   */
  lines(resumeAfter: number, signal?: AbortSignal): AsyncIterable<InputItem>
  /** progress: units done of `total` (bytes of the files, slots of the range) */
  done(): number
  total(): number
  /** appended to each progress line */
  status?(): string
}

/** a line of an input, or a block of an Old Faithful CAR file */
export interface InputItem {
  /** the line's bytes in pieces (empty for a CAR block) */
  pieces: Buffer[]
  /** its place, for messages */
  where: string
  /** a CAR block: its slot, hash and the bundle the workers normalize (src/ingest/car) */
  car?: { slot: number; hash: string; bundle: Buffer }
  /** a line of a file that a CAR file follows: its block's hash is the next file's parent */
  carNext?: boolean
}

export interface ImportResult {
  imported: number
  skipped: number
  warnings: number
  firstBlock: number | null
  lastBlock: number | null
  interrupted: boolean
  seconds: number
  /** worker threads used (1: none, all in this thread) */
  workers: number
}

export class ImportError extends Error {}

/** Where batches are parsed, normalized and encoded: in this thread, or in worker threads. */
export interface ImportBackend {
  /**
   * open batch `id` (the next one), beginning with the blocks of these chunk files: their count
   * and estimated bytes
   */
  start(id: number, tail: readonly string[]): Promise<BatchStart>
  /**
   * add a line (its bytes: a view of the ring of lines, which stays in use until the line's
   * result is settled, or a buffer the backend may keep or transfer) to the open batch `id`: its
   * warnings, or a LineError for a bad line (the lines of the batch after it are not parsed, and
   * the batch is not encoded)
   */
  line(id: number, seq: number, line: Buffer): Promise<LineResult>
  /** the open batch `id` is complete (sealed: full; not: the last of a run): encode it */
  end(id: number, sealed: boolean): void
  /** the encoded chunk of an ended batch (rejects with the LineError of a bad line in it: the batch dropped) */
  chunk(id: number): Promise<EncodedBatch>
  close(): Promise<void>
}

export type EncodedBatch = PreparedChunk & { sealed: boolean }
