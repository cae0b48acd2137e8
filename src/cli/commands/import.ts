/**
 * `solportal import DIR ARCHIVE...`: bulk-loads archive files (JSON lines of
 * `{"slot","hash","height","block"}` getBlock results, gzip or not; directories of them) into the
 * dataset directory DIR (src/store/dataset-dir.ts), normalizing every block.
 *
 * - Blocks are gathered in batches of a chunk's size (import-batch.ts `BatchCut`: a batch ends with
 *   the line that fills it, judged by the lines' lengths before they are parsed), each encoded as
 *   one sealed chunk file and published with `DiskColdStore.appendEncoded`; the last batch of a
 *   run is an unsealed chunk, which the first batch of the next run rewrites together with its new
 *   blocks.
 * - Parallel (`--workers N`, default the available cores up to 8): whole batches go to worker
 *   threads (import-worker.ts) that parse, normalize and encode them and transfer the chunk file's
 *   bytes back; this thread reads and gunzips the input, checks the order, cuts the batches, sends
 *   the lines and writes the chunks and manifests in order. Since a batch's end is known when its
 *   last line is read, the next batch goes to another worker at once: the workers parse batches
 *   side by side (and encode others; a worker compresses its brotli frames in its own thread,
 *   frames.ts), with up to `readAheadBytes` of lines per worker sent and not yet parsed. A line
 *   goes to its worker as bytes, copied into a ring of memory shared with the workers
 *   (line-ring.ts; a line too long for it is transferred), and the worker reads its transactions
 *   from the bytes (src/normalize/text.ts `normalizeArchiveBytesInto`): no thread makes the whole
 *   line's string. Batch ends depend only on the input, so the files are byte for byte those of
 *   `--workers 1` (everything in this thread). At most two batches per worker are in hand at a
 *   time (one being filled, one encoded; two in all with `--workers 1`): the input is not read
 *   further ahead.
 * - Resumable: blocks at or below the store's last block that it holds with the same hash are
 *   skipped (cheaply: slot and hash are read from the line's start before any parsing), so
 *   re-running the same command after an interruption (Ctrl-C, kill -9, power loss) continues
 *   where the durable state ends. Chunks are append-only: an archive block at or below the last
 *   block that the dataset does not hold (older blocks, a gap) refuses the import before anything
 *   is written, and one held with another hash is an error (import-present.ts).
 * - Files are taken in the order of their first blocks (whatever the command line's order); input
 *   must then ascend across all of them: a block at or below the previous one is an error naming
 *   file:line.
 * - Old Faithful CAR files (local, or `http(s)://` URLs read with Range requests and resumed;
 *   recognized by their first bytes) go through the same path: src/ingest/car reads them in one
 *   pass and sends each block to the batches as a binary bundle (no JSON text) that the workers
 *   normalize (import-batch.ts); `--verify` checks every node against its CID. A damaged file is
 *   an ImportError naming its byte offset. With a CAR file or URL among the inputs, the files are
 *   taken in command-line order.
 * - Progress on stderr: blocks, blocks/s, percentage and ETA from the input size (gzip files by
 *   their ISIZE trailer). Lines are read by the archive module's line reader (`readTextLines`,
 *   the one `readArchive` uses).
 */
import type { Command } from 'commander'
import { open, stat } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { Worker, type ResourceLimits } from 'node:worker_threads'
import {
  isBlankLine,
  joinPieces,
  listArchiveFiles,
  orderArchiveFiles,
  readLinePieces,
  toArchiveLine,
} from '../../ingest/archive.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import { DiskColdStore, MAX_TARGET_BLOCKS, MAX_TARGET_BYTES, type PreparedChunk } from '../../store/cold/disk-store.ts'
import type { FormatVersion } from '../../store/cold/chunk-file.ts'
import {
  BatchBuilder,
  BatchCut,
  LineError,
  readAheadBytes,
  type BatchOptions,
  type BatchStart,
  type LineResult,
} from './import-batch.ts'
import type { FromWorker, ToWorker } from './import-worker.ts'
import { archiveLineHash, lineHead, MissingBlocks, PresentBlocks } from './import-present.ts'
import { LineRing } from './line-ring.ts'
import { addRpcProviderOptions, httpUrlOption, intOption, UsageError } from '../options.ts'
import { RpcInput } from './import-rpc.ts'
import type { RangeFlags } from './rpc-range.ts'
import { coldDir, readDatasetMeta, writeDatasetMeta } from '../../store/dataset-dir.ts'
import { parseWorkerLimits, workerExecArgv } from '../../util/worker-argv.ts'
import { newZlibGate, stopZlibGates } from '../../util/zlib-gate.ts'
import { errorMessage } from '../../util/errors.ts'
import { fmtDuration } from '../../util/duration.ts'
import { CarError, Chain, carBlocks } from '../../ingest/car/blocks.ts'
import { BUNDLE_TEXT_RATIO } from '../../ingest/car/bundle.ts'
import { isCarInput, isUrl, sourceSize } from '../../ingest/car/source.ts'

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
  /** where the lines come from instead of archive files (`import --rpc`: import-rpc.ts) */
  input?: ImportInput
}

/** the lines an import reads: archive files, or a node (import-rpc.ts) */
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

/** archive files and Old Faithful CAR files (or URLs), read in the order given */
class FilesInput implements ImportInput {
  private read = 0
  /** parent hashes across CAR files (set once the dataset's last block is known) */
  chain: Chain | null = null
  constructor(
    private readonly files: string[],
    private readonly bytes: number,
    private readonly car: { verify?: boolean; onResume?: (offset: number, reason: string) => void },
  ) {}
  async *lines(): AsyncIterable<InputItem> {
    const isCar = await Promise.all(this.files.map((f) => isCarInput(f)))
    for (const [fi, file] of this.files.entries()) {
      if (isCar[fi]) {
        const base = this.read
        try {
          for await (const b of carBlocks(file, this.chain ?? new Chain(null), this.car)) {
            this.read = base + b.read
            yield {
              pieces: [],
              where: `${file} (block ${b.slot} at byte ${b.offset})`,
              car: { slot: b.slot, hash: b.hash, bundle: b.bundle },
            }
          }
        } catch (e) {
          throw e instanceof CarError ? new ImportError(`${file}: ${e.message}`) : e
        }
        continue
      }
      const carNext = isCar.indexOf(true, fi + 1) > fi
      let lineNo = 0
      for await (const pieces of readLinePieces(file)) {
        lineNo++
        for (const p of pieces) this.read += p.length
        this.read++
        yield { pieces, where: `${file}:${lineNo}`, carNext }
      }
    }
  }
  done(): number {
    return this.read
  }
  total(): number {
    return this.bytes
  }
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

/** Uncompressed size of an input file: its size, or a gzip file's ISIZE trailer (mod 2^32). */
async function inputSize(path: string): Promise<number> {
  const st = await stat(path)
  const fh = await open(path, 'r')
  try {
    const head = Buffer.alloc(2)
    await fh.read(head, 0, 2, 0)
    if (head[0] !== 0x1f || head[1] !== 0x8b || st.size < 18) return st.size
    const tail = Buffer.alloc(4)
    await fh.read(tail, 0, 4, st.size - 4)
    const isize = tail.readUInt32LE(0)
    // ISIZE is mod 2^32 and only covers the last member: fall back to a typical JSON ratio
    return isize >= st.size ? isize : st.size * 8
  } finally {
    await fh.close()
  }
}

const SLOT_PREFIX = /^\s*\{\s*"slot"\s*:\s*(\d{1,15})\s*[,}]/

class Progress {
  private last = 0
  private readonly start = Date.now()
  constructor(
    private readonly mode: 'tty' | 'lines' | 'none',
    private readonly input: ImportInput,
    private readonly write: (s: string) => void,
  ) {}

  update(imported: number, skipped: number, force = false): void {
    if (this.mode === 'none') return
    const now = Date.now()
    if (!force && now - this.last < (this.mode === 'tty' ? 200 : 10_000)) return
    this.last = now
    const secs = (now - this.start) / 1000
    const rate = secs > 0 ? imported / secs : 0
    const total = this.input.total()
    const frac = total > 0 ? Math.min(1, this.input.done() / total) : 0
    const eta = frac > 0 && frac < 1 ? (secs * (1 - frac)) / frac : frac >= 1 ? 0 : NaN
    const width = 24
    const fill = Math.round(frac * width)
    const bar = `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}]`
    const text =
      `${bar} ${(frac * 100).toFixed(1).padStart(5)}% ${imported.toLocaleString('en-US')} blocks` +
      `${skipped ? ` (${skipped.toLocaleString('en-US')} skipped)` : ''}, ${rate.toFixed(0)} blocks/s, ETA ${fmtDuration(eta)}` +
      (this.input.status?.() ?? '')
    this.write(this.mode === 'tty' ? `\r${text}\x1b[K` : `${text}\n`)
  }

  done(): void {
    if (this.mode === 'tty') this.write('\n')
  }
}

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

class InProcessBackend implements ImportBackend {
  private readonly builder: BatchBuilder
  private readonly chunks = new Map<number, Promise<EncodedBatch>>()
  constructor(opts: BatchOptions) {
    this.builder = new BatchBuilder(opts)
  }
  async start(_id: number, tail: readonly string[]): Promise<BatchStart> {
    return this.builder.startWith(tail)
  }
  async line(_id: number, seq: number, line: Buffer): Promise<LineResult> {
    return this.builder.add(line, seq)
  }
  end(id: number, sealed: boolean): void {
    const p = this.builder.encode(sealed) // takes the batch's blocks at once
    p.catch(() => undefined) // awaited (and reported) by chunk()
    this.chunks.set(id, p)
  }
  chunk(id: number): Promise<EncodedBatch> {
    const p = this.chunks.get(id)!
    this.chunks.delete(id)
    return p
  }
  async close(): Promise<void> {}
}

class Deferred<T> {
  resolve!: (v: T) => void
  reject!: (e: unknown) => void
  readonly promise = new Promise<T>((res, rej) => {
    this.resolve = res
    this.reject = rej
  })
  constructor() {
    this.promise.catch(() => undefined) // a failure is reported where it is awaited
  }
}

/**
 * Batches in worker threads (import-worker.ts): each batch goes whole to one worker (the one with
 * the fewest batches in hand), which parses, normalizes and encodes it, and transfers the chunk
 * file's bytes back. A worker that fails (an exception, out of memory, exit) fails every pending
 * and later call.
 */
class WorkerBackend implements ImportBackend {
  private readonly workers: { w: Worker; batches: number; gate: Int32Array }[] = []
  private readonly owner = new Map<number, number>()
  private readonly starts = new Map<number, Deferred<BatchStart>>()
  private readonly acks = new Map<number, Deferred<LineResult>>()
  private readonly chunks = new Map<number, Deferred<EncodedBatch>>()
  private failure: Error | null = null
  private closing = false

  constructor(
    n: number,
    opts: BatchOptions,
    /** where lines are given to the workers; a line elsewhere is transferred */
    private readonly ring: LineRing | null,
    resourceLimits?: ResourceLimits,
  ) {
    for (let i = 0; i < n; i++) {
      const gate = newZlibGate()
      const w = new Worker(new URL('./import-worker.mjs', import.meta.url), {
        workerData: { ...opts, zlibGate: gate, lineRing: ring?.buffer ?? null },
        resourceLimits: parseWorkerLimits(resourceLimits),
        execArgv: workerExecArgv(),
      })
      w.on('message', (m: FromWorker) => this.onMessage(i, m))
      w.on('error', (e) => this.fail(new ImportError(`import worker ${i + 1} failed: ${e.message}`)))
      w.on('exit', (code) => {
        if (!this.closing) this.fail(new ImportError(`import worker ${i + 1} exited (code ${code})`))
      })
      this.workers.push({ w, batches: 0, gate })
    }
  }

  private fail(e: Error): void {
    if (this.failure) return
    this.failure = e
    for (const d of this.starts.values()) d.reject(e)
    for (const d of this.acks.values()) d.reject(e)
    for (const d of this.chunks.values()) d.reject(e)
  }

  private onMessage(i: number, m: FromWorker): void {
    if (m.t === 'ack') {
      this.acks.get(m.seq)?.resolve({ warnings: m.warnings })
      this.acks.delete(m.seq)
    } else if (m.t === 'started') {
      this.starts.get(m.id)?.resolve(m.start)
      this.starts.delete(m.id)
    } else if (m.t === 'chunk' || m.t === 'dropped') {
      this.workers[i].batches--
      const d = this.chunks.get(m.id)
      if (m.t === 'dropped') d?.reject(new LineError(m.message, m.seq))
      else d?.resolve({ ...m.chunk, bytes: m.data.byteLength, parts: [m.data], sealed: m.sealed })
    } else if (m.seq !== null && m.line) {
      this.acks.get(m.seq)?.reject(new LineError(m.message, m.seq))
      this.acks.delete(m.seq)
    } else this.fail(new ImportError(`import worker ${i + 1} failed: ${m.message}`))
  }

  private post(id: number, m: ToWorker, transfer?: ArrayBuffer[]): void {
    this.workers[this.owner.get(id)!].w.postMessage(m, transfer)
  }

  async start(id: number, tail: readonly string[]): Promise<BatchStart> {
    if (this.failure) throw this.failure
    let best = 0
    for (let i = 1; i < this.workers.length; i++) if (this.workers[i].batches < this.workers[best].batches) best = i
    this.workers[best].batches++
    this.owner.set(id, best)
    this.chunks.set(id, new Deferred())
    this.post(id, { t: 'start', id, tail: [...tail] })
    if (tail.length === 0) return { blocks: 0, bytes: 0 }
    const d = new Deferred<BatchStart>()
    this.starts.set(id, d)
    return d.promise
  }

  line(id: number, seq: number, line: Buffer): Promise<LineResult> {
    if (this.failure) return Promise.reject(this.failure)
    const d = new Deferred<LineResult>()
    this.acks.set(seq, d)
    if (this.ring?.holds(line)) {
      // in the ring the workers share: where
      this.post(id, { t: 'line', id, seq, at: line.byteOffset, length: line.length })
    } else {
      // a buffer of the line's own: moved to the worker (a view of anything else: copied first)
      const whole = line.byteOffset === 0 && line.byteLength === line.buffer.byteLength
      const bytes = whole && !(line.buffer instanceof SharedArrayBuffer) ? line : new Uint8Array(line)
      this.post(id, { t: 'line', id, seq, bytes }, [bytes.buffer as ArrayBuffer])
    }
    return d.promise
  }

  end(id: number, sealed: boolean): void {
    if (!this.failure) this.post(id, { t: 'end', id, sealed })
  }

  chunk(id: number): Promise<EncodedBatch> {
    const d = this.chunks.get(id)!
    return d.promise.finally(() => {
      this.chunks.delete(id)
      this.owner.delete(id)
    })
  }

  async close(): Promise<void> {
    this.closing = true
    // a worker ended inside zlib's setup aborts the process: let the calls under way finish first
    stopZlibGates(this.workers.map((x) => x.gate))
    await Promise.all(this.workers.map((x) => x.w.terminate()))
  }
}

/** Worker threads used by default: one per core the process may use, at most 8 (memory: two batches each). */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(8, availableParallelism()))
}

export async function runImport(
  dir: string,
  archives: string[],
  opts: ImportOptions = {},
  log: (s: string) => void = (s) => process.stderr.write(s),
): Promise<ImportResult> {
  const t0 = Date.now()
  const includeVotes = !!opts.includeVotes
  const meta = readDatasetMeta(dir)
  if (meta && meta.includeVotes !== includeVotes) {
    throw new ImportError(
      `${dir} was imported ${meta.includeVotes ? 'with' : 'without'} --include-votes; use the same setting`,
    )
  }
  if (!meta) writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes })

  let input = opts.input
  if (!input) {
    let files: string[]
    // an Old Faithful CAR file or URL among the inputs: command-line order (its first block is not
    // on a first line); else the order of the files' first blocks (read from each file's first
    // line), as serve --archive does: files given newest first are not read whole before the order
    // is refused
    let carOrUrl = false
    for (const a of archives) if (isUrl(a) || ((await stat(a)).isFile() && (await isCarInput(a)))) carOrUrl = true
    try {
      if (carOrUrl) {
        files = []
        for (const a of archives) files.push(...(isUrl(a) ? [a] : await listArchiveFiles(a)))
      } else files = (await orderArchiveFiles(archives)).map((f) => f.file)
    } catch (e) {
      throw new ImportError(errorMessage(e))
    }
    if (files.length === 0) throw new ImportError('no archive blocks found (.jsonl / .jsonl.gz files)')
    let totalBytes = 0
    for (const f of files) totalBytes += isUrl(f) ? ((await sourceSize(f)) ?? 0) : await inputSize(f)
    input = new FilesInput(files, totalBytes, { verify: opts.verify, onResume: opts.onResume })
  }
  const source = input

  const store = await DiskColdStore.open(coldDir(dir), {
    targetBlocks: opts.targetBlocks,
    targetBytes: opts.targetBytes,
    compress: opts.compress,
    formatVersion: opts.formatVersion,
  })
  const res: ImportResult = {
    imported: 0,
    skipped: 0,
    warnings: 0,
    firstBlock: null,
    lastBlock: null,
    interrupted: false,
    seconds: 0,
    workers: 1,
  }
  const progress = new Progress(opts.progress ?? (process.stderr.isTTY ? 'tty' : 'lines'), source, log)
  const tty = opts.progress === 'tty' || (opts.progress === undefined && process.stderr.isTTY)
  const maxWarnings = opts.maxWarnings ?? 20
  const workers = (res.workers = opts.workers ?? defaultWorkers())
  // text and JSON parts in zstd also with --workers 1, whose main thread serves nobody: the same
  // chunk files whatever the number of workers (frames.ts `zstdHere`)
  const encode = store.encodeOptions
  const batchOpts: BatchOptions = { includeVotes, encode: { ...encode, zstd: encode.zstd ?? true } }
  let backend: ImportBackend | null = null
  /** writes of closed batches, in order (at most two batches per worker in hand: bounded memory) */
  const writes: Promise<void>[] = []
  try {
    /** bytes of lines sent and not yet acknowledged, at most (at least one line is sent) */
    const readAhead = workers > 1 ? workers * readAheadBytes(store.targetBytes) : 0
    /** where lines go to the workers (one too long for it goes as a buffer of its own) */
    const ring = workers > 1 ? new LineRing(readAhead) : null
    backend =
      workers > 1
        ? new WorkerBackend(workers, batchOpts, ring, opts.workerResourceLimits)
        : new InProcessBackend(batchOpts)
    if (opts.wrapBackend) backend = opts.wrapBackend(backend)
    const batches = backend
    const resumeAfter = store.lastBlock()?.number ?? -1
    if (resumeAfter >= 0 && opts.progress !== 'none')
      log(`resuming: the dataset already holds blocks up to ${resumeAfter}\n`)
    // the unsealed tail of a previous run is rewritten with the first batch (so it ends up sealed)
    const tail = store.unsealedTail().map((e) => store.chunkPath(e))
    const present = new PresentBlocks(store)
    const missing = new MissingBlocks()
    const cut = new BatchCut(store.targetBlocks, store.targetBytes)
    let prev = -1
    let prevWhere = ''
    let seq = 0
    let normalized = 0
    let nextId = 0
    /** the batch lines go to: its new blocks (not those of the tail) */
    let open: { id: number; first: number; last: number; count: number } | null = null
    /** lines sent, not acknowledged yet, oldest first, their bytes, and whether they are in the ring */
    const sent: { seq: number; ack: Promise<LineResult>; bytes: number; inRing: boolean }[] = []
    let inFlight = 0
    /** the place (file:line) of each line sent and not yet acknowledged, for errors */
    const places = new Map<number, string>()
    const placed = (e: unknown) =>
      e instanceof LineError ? new ImportError(`${places.get(e.seq) ?? 'a line'}: ${e.message}`) : e
    let writer: Promise<void> = Promise.resolve()
    const closeBatch = (b: { id: number; first: number; last: number; count: number }, sealed: boolean) => {
      batches.end(b.id, sealed)
      const chunk = batches.chunk(b.id)
      chunk.catch(() => undefined) // awaited in order below
      writer = writer.then(async () => {
        let c: EncodedBatch
        try {
          c = await chunk
        } catch (e) {
          throw placed(e)
        }
        await store.appendEncoded(c, { sealed: c.sealed, replacesTail: b.id === 0 && tail.length > 0 })
        res.imported += b.count
        res.firstBlock ??= b.first
        res.lastBlock = b.last
        opts.onBatch?.(res)
      })
      writer.catch(() => undefined) // awaited below
      writes.push(writer)
    }
    /** wait for the ack of the oldest line sent */
    const settle = async () => {
      const { seq: s, ack, bytes: n, inRing } = sent.shift()!
      inFlight -= n
      let r: LineResult
      try {
        r = await ack
      } catch (e) {
        throw placed(e)
      } finally {
        // the worker read the line before it answered: its place in the ring may be reused
        if (inRing) ring!.release()
      }
      const where = places.get(s)!
      places.delete(s)
      normalized++
      for (const w of r.warnings) {
        if (res.warnings++ < maxWarnings) {
          log(
            `${tty ? '\r\x1b[K' : ''}warning: ${where}: slot ${w.slot}${w.transactionIndex !== undefined ? ` tx ${w.transactionIndex}` : ''}${w.signature ? ` ${w.signature}` : ''}: ${w.message}\n`,
          )
        }
      }
    }
    /**
     * send a line to the open batch (opening the next one when none is), closing the batch when
     * the line fills it: the next line goes to the next batch at once, on the worker with the
     * fewest batches in hand
     */
    const send = async (slot: number, pieces: Buffer[], length: number, where: string, textLength = length) => {
      if (!open) {
        while (writes.length >= 2 * workers) await writes.shift()
        open = { id: nextId++, first: slot, last: slot, count: 0 }
        cut.begin(await batches.start(open.id, open.id === 0 ? tail : []))
      }
      // a place in the ring, once older lines are released; a line longer than the ring goes as a
      // buffer of its own, within the read-ahead
      const ringed = ring !== null && length <= ring.size
      let at = ringed ? ring.room(length) : -1
      while (sent.length > 0 && (ringed ? at < 0 : inFlight + length > readAhead)) {
        await settle()
        if (ringed) at = ring.room(length)
      }
      const line = at >= 0 ? ring!.place(pieces, length, at) : joinPieces(pieces)
      const s = seq++
      const ack = batches.line(open.id, s, line) // (its buffer may be transferred: not read after)
      ack.catch(() => undefined) // awaited in order by settle
      places.set(s, where)
      sent.push({ seq: s, ack, bytes: length, inRing: at >= 0 })
      inFlight += length
      open.last = slot
      open.count++
      if (cut.add(textLength)) {
        closeBatch(open, true)
        open = null
      }
    }
    /**
     * the ordering and resume checks of a block about to be sent: 'send' it, 'skip' it (held
     * already with the same hash, or refused below), or 'stop' (blocks missing before it)
     */
    const admit = async (slot: number, where: string, hashOf: () => string): Promise<'send' | 'skip' | 'stop'> => {
      if (slot <= prev) {
        throw new ImportError(
          `${where}: block ${slot} comes after block ${prev} (${prevWhere}): archives must ascend inside each file and must not overlap`,
        )
      }
      prev = slot
      prevWhere = where
      if (slot <= resumeAfter) {
        const have = await present.hashAt(slot)
        if (have === null) missing.add(slot, where)
        if (missing.count) return 'skip' // refused below, once the archive's blocks concerned are known
        let hash: string
        try {
          hash = hashOf()
        } catch (e) {
          throw new ImportError(`${where}: ${errorMessage(e)}`)
        }
        if (hash !== have) {
          throw new ImportError(
            `${where}: block ${slot} has hash ${hash}, but the dataset holds block ${slot} with hash ${have}`,
          )
        }
        res.skipped++
        progress.update(normalized, res.skipped)
        return 'skip'
      }
      return missing.count ? 'stop' : 'send'
    }
    // parent hashes across the Old Faithful CAR files of the import (the first from the dataset's last block)
    const chain = new Chain(store.lastBlock())
    if (source instanceof FilesInput) source.chain = chain
    for await (const { pieces, where, car, carNext } of source.lines(resumeAfter, opts.signal)) {
      if (opts.signal?.aborted) break
      if (car) {
        // a block of an Old Faithful CAR file: a bundle for the workers (src/ingest/car)
        const a = await admit(car.slot, where, () => car.hash)
        if (a === 'stop') break
        if (a === 'skip') continue
        await send(car.slot, [car.bundle], car.bundle.length, where, car.bundle.length * BUNDLE_TEXT_RATIO)
        progress.update(normalized, res.skipped)
        continue
      }
      let length = 0
      for (const p of pieces) length += p.length
      if (isBlankLine(pieces)) continue
      const head = lineHead(pieces)
      const m = SLOT_PREFIX.exec(head)
      let slot: number
      if (m) slot = Number(m[1])
      else {
        try {
          slot = toArchiveLine(parseJsonExact(joinPieces(pieces).toString('utf8'))).slot
        } catch (e) {
          throw new ImportError(`${where}: ${errorMessage(e)}`)
        }
      }
      const a = await admit(slot, where, () => archiveLineHash(head, pieces))
      // a CAR file follows: the chain of parent hashes goes through these lines' blocks
      if (carNext) chain.seenText(slot, () => archiveLineHash(head, pieces))
      if (a === 'stop') break
      if (a === 'skip') continue
      await send(slot, pieces, length, where)
      progress.update(normalized, res.skipped)
    }
    if (opts.signal?.aborted) res.interrupted = true
    if (missing.count) throw new ImportError(missing.message(store.firstBlock()!, resumeAfter))
    while (sent.length) await settle()
    // (assigned by send: not narrowed to null here)
    const last = open as { id: number; first: number; last: number; count: number } | null
    if (last) closeBatch(last, false)
    for (const w of writes) await w
    progress.update(res.imported, res.skipped, true)
    progress.done()
  } catch (e) {
    // keep what was complete before the failure (a failed worker fails its batches at once)
    await Promise.allSettled(writes)
    throw e
  } finally {
    await backend?.close()
    await store.close()
  }
  if (res.warnings > maxWarnings) log(`${res.warnings - maxWarnings} more warnings not shown\n`)
  res.seconds = (Date.now() - t0) / 1000
  return res
}

/**
 * `solportal import s3://BUCKET/PREFIX ...`: import into a local staging directory (fetched from the
 * bucket first when it holds nothing yet), then publish the new objects and the pointer last
 * (src/store/s3.ts). An interrupted import publishes what became durable.
 */
export async function importToS3(
  url: string,
  archives: string[],
  opts: ImportOptions & {
    stagingDir?: string
    client?: import('@aws-sdk/client-s3').S3Client
    /** attempts, backoff and timeout of each object-store request */
    retry?: import('../../store/s3.ts').RetryOptions
  },
  log: (s: string) => void = (s) => process.stderr.write(s),
): Promise<ImportResult & { uploaded: number; bytes: number }> {
  const s3 = await import('../../store/s3.ts')
  const loc = s3.parseS3Url(url) // before any client or directory
  const ds = new s3.S3Dataset(opts.client ?? s3.s3ClientFromEnv(), loc, {
    ...opts.retry,
    log: (m, level) => {
      if (level !== 'debug') log(m + '\n')
    },
  })
  const dir = opts.stagingDir ?? s3.defaultStagingDir(url)
  if (await s3.pullDataset(ds, dir)) log(`fetched the dataset of ${url} into ${dir}\n`)
  const r = await runImport(dir, archives, opts, log)
  const p = await s3.publishDataset(dir, ds)
  log(`published to ${url} (staging ${dir}): ${p.uploaded} objects, ${p.bytes} bytes\n`)
  return { ...r, ...p }
}

export function register(program: Command): void {
  const cmd = program
    .command('import')
    .description(
      'bulk-load archive files (.jsonl / .jsonl.gz of getBlock results, or directories of them) into a dataset directory; resumable',
    )
    .argument(
      '<dir>',
      'dataset directory (created when missing), or s3://BUCKET/PREFIX (imported into --staging-dir, then published)',
    )
    .argument(
      '[archive...]',
      'archive files or directories, Old Faithful CAR files or http(s):// URLs of them (none with --rpc); files are imported in the order of their first blocks',
    )
    .option('--include-votes', 'keep vote transactions')
    .option('--verify', "Old Faithful CAR inputs: check each node's sha256 against its CID")
    .option('--chunk-blocks <n>', `blocks per chunk at most (default 10000, at most ${MAX_TARGET_BLOCKS})`)
    .option('--chunk-mb <n>', `approximate chunk size in MB (default 32, at most ${MAX_TARGET_BYTES / (1024 * 1024)})`)
    .option('--compress', 'deflate column blobs where it saves >= 25%')
    .option('--no-progress', 'no progress output')
    .option('--staging-dir <dir>', 's3:// targets: the local dataset directory imported into before publishing')
    .option(
      '--workers <n>',
      'threads that parse, normalize and encode (default: the available cores, at most 8; 1 = none)',
    )
    .option('--rpc <url>', 'read the blocks from a Solana node instead of archives (with --from, --to)')
    .option('--from <slot>', "--rpc: first slot (the import resumes after the dataset's last block)")
    .option('--to <slot>', "--rpc: last slot (default: the node's finalized head)")
    .option('--rpc-concurrency <n>', '--rpc: getBlock requests in flight', '8')
  addRpcProviderOptions(cmd).action(
    async (
      dir: string,
      archives: string[],
      o: {
        includeVotes?: boolean
        verify?: boolean
        chunkBlocks?: string
        chunkMb?: string
        compress?: boolean
        progress?: boolean
        workers?: string
        stagingDir?: string
      } & RangeFlags & { rpc?: string },
    ) => {
      if (o.rpc) {
        httpUrlOption('rpc', o.rpc)
        if (archives.length) throw new UsageError('--rpc reads the blocks from the node: give no archive files')
        if (dir.startsWith('s3://')) throw new UsageError('--rpc imports into a local dataset directory')
      } else if (!archives.length) throw new UsageError('give archive files or directories, or --rpc URL --from SLOT')
      else if (o.from !== undefined || o.to !== undefined) throw new UsageError('--from and --to apply only to --rpc')
      for (const a of archives) if (!isUrl(a) && !existsSync(a)) throw new UsageError(`${a}: no such file or directory`)
      // misused options: a UsageError, one line from main.ts, before anything is written
      const targetBlocks = o.chunkBlocks ? intOption('chunk-blocks', o.chunkBlocks, 1, MAX_TARGET_BLOCKS) : undefined
      const chunkMb = o.chunkMb ? intOption('chunk-mb', o.chunkMb, 1, MAX_TARGET_BYTES / (1024 * 1024)) : undefined
      const workers = o.workers ? intOption('workers', o.workers, 1) : undefined
      const ac = new AbortController()
      const onSig = () => {
        if (ac.signal.aborted) process.exit(130)
        process.stderr.write('\ninterrupted: writing the current batch, then stopping (again to abort now)\n')
        ac.abort()
      }
      process.on('SIGINT', onSig)
      process.on('SIGTERM', onSig)
      let input: RpcInput | undefined
      try {
        if (o.rpc) input = await RpcInput.open(dir, o.rpc, o, (l) => process.stderr.write(l + '\n'))
        const io: ImportOptions = {
          input,
          includeVotes: o.includeVotes,
          verify: o.verify,
          targetBlocks,
          targetBytes: chunkMb !== undefined ? chunkMb * 1024 * 1024 : undefined,
          compress: o.compress,
          progress: o.progress === false ? 'none' : undefined,
          signal: ac.signal,
          workers,
        }
        const r = dir.startsWith('s3://')
          ? await importToS3(dir, archives, { ...io, stagingDir: o.stagingDir })
          : await runImport(dir, archives, io)
        process.stderr.write(
          `${r.interrupted ? 'interrupted after importing' : 'imported'} ${r.imported} blocks` +
            (r.imported ? ` (${r.firstBlock}..${r.lastBlock})` : '') +
            `${r.skipped ? `, skipped ${r.skipped} already present (same hash)` : ''}, ${r.warnings} warnings, ${r.seconds.toFixed(1)} s` +
            `${r.workers > 1 ? ` (${r.workers} workers)` : ''}\n`,
        )
        if (input) {
          const errors = input.range.fetcher.errorSummary()
          process.stderr.write(
            `from ${input.range.node}, slots up to ${input.range.to}` +
              `${input.skipped ? `: ${input.skipped} listed slots answered skipped (recorded)` : ''}` +
              `${errors ? `; the node: ${errors}` : ''}\n`,
          )
        }
        if (r.interrupted) process.exitCode = 130
      } catch (e) {
        if (e instanceof UsageError) throw e
        process.stderr.write(`import failed: ${errorMessage(e)}\n`)
        process.exitCode = 1
      } finally {
        input?.close()
        process.off('SIGINT', onSig)
        process.off('SIGTERM', onSig)
      }
    },
  )
}
