/**
 * `solportal import DIR ARCHIVE...`: bulk-loads archive files (JSON lines of
 * `{"slot","hash","height","block"}` getBlock results, gzip or not; directories of them) into the
 * dataset directory DIR (src/store/dataset-dir.ts), normalizing every block.
 *
 * - Blocks are gathered in batches of a chunk's size (batch.ts `BatchCut`: a batch ends with the
 *   line that fills it, judged by the lines' lengths before they are parsed), each encoded as one
 *   sealed chunk file and published with `DiskColdStore.appendEncoded`; the last batch of a run is
 *   an unsealed chunk, which the first batch of the next run rewrites together with its new
 *   blocks (feed.ts).
 * - Parallel (`--workers N`, default the available cores up to 8): whole batches go to worker
 *   threads (worker.ts, worker-backend.ts) that parse, normalize and encode them and transfer the
 *   chunk file's bytes back; this thread reads and gunzips the input, checks the order, cuts the
 *   batches, sends the lines and writes the chunks and manifests in order. Since a batch's end is
 *   known when its last line is read, the next batch goes to another worker at once: the workers
 *   parse batches side by side (and encode others; a worker compresses its brotli frames in its
 *   own thread, frames.ts), with up to `readAheadBytes` of lines per worker sent and not yet
 *   parsed. A line goes to its worker as bytes, copied into a ring of memory shared with the
 *   workers (line-ring.ts; a line too long for it is transferred), and the worker reads its
 *   transactions from the bytes (src/normalize/text.ts `normalizeArchiveBytesInto`): no thread
 *   makes the whole line's string. Batch ends depend only on the input, so the files are byte for
 *   byte those of `--workers 1` (everything in this thread, backend.ts). At most two batches per
 *   worker are in hand at a time (one being filled, one encoded; two in all with `--workers 1`):
 *   the input is not read further ahead.
 * - Resumable (resume.ts): blocks at or below the store's last block that it holds with the same
 *   hash are skipped (cheaply: slot and hash are read from the line's start before any parsing),
 *   so re-running the same command after an interruption (Ctrl-C, kill -9, power loss) continues
 *   where the durable state ends. Chunks are append-only: an archive block at or below the last
 *   block that the dataset does not hold (older blocks, a gap) refuses the import before anything
 *   is written, and one held with another hash is an error.
 * - Files are taken in the order of their first blocks (whatever the command line's order); input
 *   must then ascend across all of them: a block at or below the previous one is an error naming
 *   file:line.
 * - Old Faithful CAR files (local, or `http(s)://` URLs read with Range requests and resumed;
 *   recognized by their first bytes) go through the same path: src/ingest/car reads them in one
 *   pass and sends each block to the batches as a binary bundle (no JSON text) that the workers
 *   normalize (batch.ts); `--verify` checks every node against its CID. A damaged file is an
 *   ImportError naming its byte offset. With a CAR file or URL among the inputs, the files are
 *   taken in command-line order (input.ts). Directories contribute their archive files and CAR files.
 * - Progress on stderr (progress.ts): blocks, blocks/s, percentage and ETA from the input size
 *   (gzip files by their ISIZE trailer). Lines are read by the archive module's line reader
 *   (`readTextLines`, the one `readArchive` uses).
 */
import { isBlankLine, joinPieces, toArchiveLine } from '../archive.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import { DiskColdStore } from '../../store/cold/disk-store.ts'
import { coldDir, readDatasetMeta, writeDatasetMeta } from '../../store/dataset-dir.ts'
import { errorMessage } from '../../util/errors.ts'
import { Chain } from '../car/blocks.ts'
import { BUNDLE_TEXT_RATIO } from '../car/bundle.ts'
import { defaultWorkers, InProcessBackend } from './backend.ts'
import { readAheadBytes, type BatchOptions } from './batch.ts'
import { BatchFeed } from './feed.ts'
import { FilesInput, openFilesInput } from './input.ts'
import { LineRing } from './line-ring.ts'
import { Progress } from './progress.ts'
import { Admission, archiveLineHash, lineHead } from './resume.ts'
import { ImportError, type ImportBackend, type ImportInput, type ImportOptions, type ImportResult } from './types.ts'
import { WorkerBackend } from './worker-backend.ts'

const SLOT_PREFIX = /^\s*\{\s*"slot"\s*:\s*(\d{1,15})\s*[,}]/

/** the dataset directory's settings: made on the first import, the same on the next ones */
function checkDatasetMeta(dir: string, includeVotes: boolean): void {
  const meta = readDatasetMeta(dir)
  if (meta && meta.includeVotes !== includeVotes) {
    throw new ImportError(
      `${dir} was imported ${meta.includeVotes ? 'with' : 'without'} --include-votes; use the same setting`,
    )
  }
  if (!meta) writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes })
}

/** the backend of `workers` threads (1: this thread) and the ring of lines it reads from */
function openBackend(
  workers: number,
  batchOpts: BatchOptions,
  targetBytes: number,
  opts: ImportOptions,
): { backend: ImportBackend; ring: LineRing | null; readAhead: number } {
  /** bytes of lines sent and not yet acknowledged, at most (at least one line is sent) */
  const readAhead = workers > 1 ? workers * readAheadBytes(targetBytes) : 0
  /** where lines go to the workers (one too long for it goes as a buffer of its own) */
  const ring = workers > 1 ? new LineRing(readAhead) : null
  let backend: ImportBackend =
    workers > 1
      ? new WorkerBackend(workers, batchOpts, ring, opts.workerResourceLimits)
      : new InProcessBackend(batchOpts)
  if (opts.wrapBackend) backend = opts.wrapBackend(backend)
  return { backend, ring, readAhead }
}

/** the slot of an archive line: read from its head, else by parsing it */
function lineSlot(head: string, pieces: Buffer[], where: string): number {
  const m = SLOT_PREFIX.exec(head)
  if (m) return Number(m[1])
  try {
    return toArchiveLine(parseJsonExact(joinPieces(pieces).toString('utf8'))).slot
  } catch (e) {
    throw new ImportError(`${where}: ${errorMessage(e)}`)
  }
}

/** the input's lines and CAR blocks, checked (admission) and sent to the batches, until it ends or stops */
async function feedInput(
  source: ImportInput,
  resumeAfter: number,
  admission: Admission,
  feed: BatchFeed,
  chain: Chain,
  progress: Progress,
  res: ImportResult,
  signal: AbortSignal | undefined,
): Promise<void> {
  for await (const { pieces, where, car, carNext } of source.lines(resumeAfter, signal)) {
    if (signal?.aborted) break
    if (car) {
      // a block of an Old Faithful CAR file: a bundle for the workers (src/ingest/car)
      const a = await admission.admit(car.slot, where, () => car.hash)
      if (a === 'stop') break
      if (a === 'skip') continue
      await feed.send(car.slot, [car.bundle], car.bundle.length, where, car.bundle.length * BUNDLE_TEXT_RATIO)
      progress.update(feed.normalized, res.skipped)
      continue
    }
    let length = 0
    for (const p of pieces) length += p.length
    if (isBlankLine(pieces)) continue
    const head = lineHead(pieces)
    const slot = lineSlot(head, pieces, where)
    const a = await admission.admit(slot, where, () => archiveLineHash(head, pieces))
    // a CAR file follows: the chain of parent hashes goes through these lines' blocks
    if (carNext) chain.seenText(slot, () => archiveLineHash(head, pieces))
    if (a === 'stop') break
    if (a === 'skip') continue
    await feed.send(slot, pieces, length, where)
    progress.update(feed.normalized, res.skipped)
  }
}

function emptyResult(workers: number): ImportResult {
  return {
    imported: 0,
    skipped: 0,
    warnings: 0,
    firstBlock: null,
    lastBlock: null,
    interrupted: false,
    seconds: 0,
    workers,
  }
}

export async function runImport(
  dir: string,
  archives: string[],
  opts: ImportOptions = {},
  log: (s: string) => void = (s) => process.stderr.write(s),
): Promise<ImportResult> {
  const t0 = Date.now()
  const includeVotes = !!opts.includeVotes
  checkDatasetMeta(dir, includeVotes)
  const source = opts.input ?? (await openFilesInput(archives, { verify: opts.verify, onResume: opts.onResume }))
  const store = await DiskColdStore.open(coldDir(dir), {
    targetBlocks: opts.targetBlocks,
    targetBytes: opts.targetBytes,
    compress: opts.compress,
    formatVersion: opts.formatVersion,
  })
  const workers = opts.workers ?? defaultWorkers()
  const res = emptyResult(workers)
  const progress = new Progress(opts.progress ?? (process.stderr.isTTY ? 'tty' : 'lines'), source, log)
  const tty = opts.progress === 'tty' || (opts.progress === undefined && process.stderr.isTTY)
  const maxWarnings = opts.maxWarnings ?? 20
  // text and JSON parts in zstd also with --workers 1, whose main thread serves nobody: the same
  // chunk files whatever the number of workers (frames.ts `zstdHere`)
  const encode = store.encodeOptions
  const batchOpts: BatchOptions = { includeVotes, encode: { ...encode, zstd: encode.zstd ?? true } }
  let backend: ImportBackend | null = null
  let feed: BatchFeed | null = null
  try {
    const b = openBackend(workers, batchOpts, store.targetBytes, opts)
    backend = b.backend
    const resumeAfter = store.lastBlock()?.number ?? -1
    if (resumeAfter >= 0 && opts.progress !== 'none')
      log(`resuming: the dataset already holds blocks up to ${resumeAfter}\n`)
    // the unsealed tail of a previous run is rewritten with the first batch (so it ends up sealed)
    const tail = store.unsealedTail().map((e) => store.chunkPath(e))
    feed = new BatchFeed({
      store,
      ...b,
      workers,
      tail,
      res,
      onBatch: opts.onBatch,
      onWarning: (where, w) => {
        if (res.warnings++ < maxWarnings) {
          log(
            `${tty ? '\r\x1b[K' : ''}warning: ${where}: slot ${w.slot}${w.transactionIndex !== undefined ? ` tx ${w.transactionIndex}` : ''}${w.signature ? ` ${w.signature}` : ''}: ${w.message}\n`,
          )
        }
      },
    })
    const f = feed
    const admission = new Admission(store, resumeAfter, () => {
      res.skipped++
      progress.update(f.normalized, res.skipped)
    })
    // parent hashes across the Old Faithful CAR files of the import (the first from the dataset's last block)
    const chain = new Chain(store.lastBlock())
    if (source instanceof FilesInput) source.chain = chain
    await feedInput(source, resumeAfter, admission, feed, chain, progress, res, opts.signal)
    if (opts.signal?.aborted) res.interrupted = true
    if (admission.missing.count) throw new ImportError(admission.missing.message(store.firstBlock()!, resumeAfter))
    await feed.finish()
    progress.update(res.imported, res.skipped, true)
    progress.done()
  } catch (e) {
    // keep what was complete before the failure (a failed worker fails its batches at once)
    await feed?.settled()
    throw e
  } finally {
    await backend?.close()
    await store.close()
  }
  if (res.warnings > maxWarnings) log(`${res.warnings - maxWarnings} more warnings not shown\n`)
  res.seconds = (Date.now() - t0) / 1000
  return res
}
