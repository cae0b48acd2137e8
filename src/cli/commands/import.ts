/**
 * `solportal import DIR ARCHIVE...`: bulk-loads archive files (JSON lines of
 * `{"slot","hash","height","block"}` getBlock results, gzip or not; directories of them) into the
 * dataset directory DIR (src/store/dataset-dir.ts), normalizing every block.
 *
 * - Blocks are appended in target-sized batches (sealed chunks at once); the next batch is read and
 *   normalized while the previous one is being written.
 * - Resumable: blocks at or below the store's last block are skipped (cheaply: the slot is read
 *   from the line's start before any parsing), so re-running the same command after an
 *   interruption (Ctrl-C, kill -9, power loss) continues where the durable state ends.
 * - Input must ascend across all files in command-line order: a block at or below the previous
 *   one is an error naming file:line.
 * - Progress on stderr: blocks, blocks/s, percentage and ETA from the input size (gzip files by
 *   their ISIZE trailer). Lines are read with the archive module's line reader (the one
 *   `readArchive` uses) so that positions are known.
 */
import type { Command } from 'commander'
import { open, stat } from 'node:fs/promises'
import { listArchiveFiles, readTextLines, toArchiveLine } from '../../ingest/archive.ts'
import type { Block } from '../../model.ts'
import { parseJsonExact } from '../../normalize/json.ts'
import { normalizeBlock } from '../../normalize/normalize.ts'
import { DiskColdStore, estimateBlockBytes } from '../../store/cold.ts'
import { coldDir, readDatasetMeta, writeDatasetMeta } from '../../store/dataset-dir.ts'

export interface ImportOptions {
  includeVotes?: boolean
  targetBlocks?: number
  targetBytes?: number
  compress?: boolean
  /** print progress (default: when stderr is a TTY, else a line every 10 s) */
  progress?: 'tty' | 'lines' | 'none'
  /** stop (after making the current batch durable) when this resolves / aborts */
  signal?: AbortSignal
  /** warnings printed individually (the rest are counted); default 20 */
  maxWarnings?: number
  /** called after each batch became durable */
  onBatch?: (r: Readonly<ImportResult>) => void
}

export interface ImportResult {
  imported: number
  skipped: number
  warnings: number
  firstBlock: number | null
  lastBlock: number | null
  interrupted: boolean
  seconds: number
}

export class ImportError extends Error {}

/** Uncompressed size of an input file: its size, or a gzip file's ISIZE trailer (mod 2^32). */
async function textSize(path: string): Promise<number> {
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

function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return '?'
  s = Math.round(s)
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = s % 60
  return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`
}

class Progress {
  private last = 0
  private readonly start = Date.now()
  constructor(
    private readonly mode: 'tty' | 'lines' | 'none',
    private readonly totalChars: number,
    private readonly write: (s: string) => void,
  ) {}

  update(chars: number, imported: number, skipped: number, force = false): void {
    if (this.mode === 'none') return
    const now = Date.now()
    if (!force && now - this.last < (this.mode === 'tty' ? 200 : 10_000)) return
    this.last = now
    const secs = (now - this.start) / 1000
    const rate = secs > 0 ? imported / secs : 0
    const frac = this.totalChars > 0 ? Math.min(1, chars / this.totalChars) : 0
    const eta = frac > 0 && frac < 1 ? (secs * (1 - frac)) / frac : frac >= 1 ? 0 : NaN
    const width = 24
    const fill = Math.round(frac * width)
    const bar = `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}]`
    const text =
      `${bar} ${(frac * 100).toFixed(1).padStart(5)}% ${imported.toLocaleString('en-US')} blocks` +
      `${skipped ? ` (${skipped.toLocaleString('en-US')} skipped)` : ''}, ${rate.toFixed(0)} blocks/s, ETA ${fmtDuration(eta)}`
    this.write(this.mode === 'tty' ? `\r${text}\x1b[K` : `${text}\n`)
  }

  done(): void {
    if (this.mode === 'tty') this.write('\n')
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
  const meta = readDatasetMeta(dir)
  if (meta && meta.includeVotes !== includeVotes) {
    throw new ImportError(
      `${dir} was imported ${meta.includeVotes ? 'with' : 'without'} --include-votes; use the same setting`,
    )
  }
  if (!meta) writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes })

  const files: string[] = []
  for (const a of archives) files.push(...(await listArchiveFiles(a)))
  if (files.length === 0) throw new ImportError('no archive files (.jsonl / .jsonl.gz) found')
  let totalChars = 0
  for (const f of files) totalChars += await textSize(f)

  const store = await DiskColdStore.open(coldDir(dir), {
    targetBlocks: opts.targetBlocks,
    targetBytes: opts.targetBytes,
    compress: opts.compress,
  })
  const res: ImportResult = {
    imported: 0,
    skipped: 0,
    warnings: 0,
    firstBlock: null,
    lastBlock: null,
    interrupted: false,
    seconds: 0,
  }
  const progress = new Progress(opts.progress ?? (process.stderr.isTTY ? 'tty' : 'lines'), totalChars, log)
  const maxWarnings = opts.maxWarnings ?? 20
  try {
    const resumeAfter = store.lastBlock()?.number ?? -1
    if (resumeAfter >= 0 && opts.progress !== 'none')
      log(`resuming: the dataset already holds blocks up to ${resumeAfter}\n`)
    let prev = -1
    let prevWhere = ''
    let chars = 0
    let batch: Block[] = []
    let batchBytes = 0
    let pending: Promise<void> | null = null
    const targetBlocks = store.targetBlocks
    const targetBytes = store.targetBytes
    const flush = async () => {
      if (pending) await pending
      pending = null
      if (batch.length === 0) return
      const b = batch
      batch = []
      batchBytes = 0
      const p = store.append(b)
      pending = p
      p.then(
        () => {
          res.imported += b.length
          res.firstBlock ??= b[0].header.number
          res.lastBlock = b[b.length - 1].header.number
          opts.onBatch?.(res)
        },
        () => undefined,
      )
    }
    outer: for (const file of files) {
      let lineNo = 0
      for await (const text of readTextLines(file)) {
        lineNo++
        chars += text.length + 1
        if (opts.signal?.aborted) {
          res.interrupted = true
          break outer
        }
        if (text.trim() === '') continue
        const where = `${file}:${lineNo}`
        const m = SLOT_PREFIX.exec(text)
        let slot: number
        let line: ReturnType<typeof toArchiveLine> | null = null
        if (m) slot = Number(m[1])
        else {
          try {
            line = toArchiveLine(parseJsonExact(text))
          } catch (e) {
            throw new ImportError(`${where}: ${e instanceof Error ? e.message : String(e)}`)
          }
          slot = line.slot
        }
        if (slot <= prev) {
          throw new ImportError(
            `${where}: block ${slot} comes after block ${prev} (${prevWhere}): archives must be given in ascending block order, without overlaps`,
          )
        }
        prev = slot
        prevWhere = where
        if (slot <= resumeAfter) {
          res.skipped++
          progress.update(chars, res.imported + batch.length, res.skipped)
          continue
        }
        if (!line) {
          try {
            line = toArchiveLine(parseJsonExact(text))
          } catch (e) {
            throw new ImportError(`${where}: ${e instanceof Error ? e.message : String(e)}`)
          }
        }
        const { block, warnings } = normalizeBlock(line, { includeVotes })
        for (const w of warnings) {
          if (res.warnings++ < maxWarnings) {
            log(
              `${opts.progress === 'tty' || (opts.progress === undefined && process.stderr.isTTY) ? '\r\x1b[K' : ''}warning: ${where}: slot ${w.slot}${w.transactionIndex !== undefined ? ` tx ${w.transactionIndex}` : ''}${w.signature ? ` ${w.signature}` : ''}: ${w.message}\n`,
            )
          }
        }
        batch.push(block)
        batchBytes += estimateBlockBytes(block)
        if (batch.length >= targetBlocks || batchBytes >= targetBytes) await flush()
        progress.update(chars, res.imported + batch.length, res.skipped)
      }
    }
    await flush()
    if (pending) await pending
    progress.update(chars, res.imported, res.skipped, true)
    progress.done()
  } finally {
    await store.close()
  }
  if (res.warnings > maxWarnings) log(`${res.warnings - maxWarnings} more warnings not shown\n`)
  res.seconds = (Date.now() - t0) / 1000
  return res
}

function positiveInt(name: string, v: string): number {
  const n = Number(v)
  if (!Number.isInteger(n) || n <= 0) throw new ImportError(`--${name} must be a positive integer, got '${v}'`)
  return n
}

export function register(program: Command): void {
  program
    .command('import')
    .description(
      'bulk-load archive files (.jsonl / .jsonl.gz of getBlock results, or directories of them) into a dataset directory; resumable',
    )
    .argument('<dir>', 'dataset directory (created when missing)')
    .argument('<archive...>', 'archive files or directories, in ascending block order')
    .option('--include-votes', 'keep vote transactions')
    .option('--chunk-blocks <n>', 'blocks per chunk at most (default 10000)')
    .option('--chunk-mb <n>', 'approximate chunk size in MB (default 32)')
    .option('--compress', 'deflate column blobs where it saves >= 25%')
    .option('--no-progress', 'no progress output')
    .action(
      async (
        dir: string,
        archives: string[],
        o: { includeVotes?: boolean; chunkBlocks?: string; chunkMb?: string; compress?: boolean; progress?: boolean },
      ) => {
        const ac = new AbortController()
        const onSig = () => {
          if (ac.signal.aborted) process.exit(130)
          process.stderr.write('\ninterrupted: writing the current batch, then stopping (again to abort now)\n')
          ac.abort()
        }
        process.on('SIGINT', onSig)
        process.on('SIGTERM', onSig)
        try {
          const r = await runImport(dir, archives, {
            includeVotes: o.includeVotes,
            targetBlocks: o.chunkBlocks ? positiveInt('chunk-blocks', o.chunkBlocks) : undefined,
            targetBytes: o.chunkMb ? positiveInt('chunk-mb', o.chunkMb) * 1024 * 1024 : undefined,
            compress: o.compress,
            progress: o.progress === false ? 'none' : undefined,
            signal: ac.signal,
          })
          process.stderr.write(
            `${r.interrupted ? 'interrupted after importing' : 'imported'} ${r.imported} blocks` +
              (r.imported ? ` (${r.firstBlock}..${r.lastBlock})` : '') +
              `${r.skipped ? `, skipped ${r.skipped} already present` : ''}, ${r.warnings} warnings, ${r.seconds.toFixed(1)} s\n`,
          )
          if (r.interrupted) process.exitCode = 130
        } catch (e) {
          process.stderr.write(`import failed: ${e instanceof Error ? e.message : String(e)}\n`)
          process.exitCode = 1
        } finally {
          process.off('SIGINT', onSig)
          process.off('SIGTERM', onSig)
        }
      },
    )
}
