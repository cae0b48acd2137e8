/**
 * Block archives: JSON lines files (optionally gzip-compressed), one
 * `{"slot": N, "hash": "...", "height": N|null, "block": <getBlock result>}` object per line
 * (docs/query.md §1). `slot` and `block` are required; `hash` and `height` default to
 * `block.blockhash` and `block.blockHeight`.
 */
import { createReadStream } from 'node:fs'
import { open, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createGunzip } from 'node:zlib'
import { parseJsonExact, stringifyExact } from '../rpc/json.ts'
import { toArchiveLine } from '../rpc/line.ts'
import type { ArchiveLine, RpcBlock } from '../rpc/types.ts'
import { errorMessage } from '../util/errors.ts'

export type { ArchiveLine } from '../rpc/types.ts'
export { toArchiveLine } from '../rpc/line.ts'

/** Is this file name an archive file (`.jsonl` or `.jsonl.gz`)? */
export function isArchiveFileName(name: string): boolean {
  return name.endsWith('.jsonl') || name.endsWith('.jsonl.gz')
}

/**
 * The archive files under `path`: the path itself when it is a file (whatever its name), or every
 * `.jsonl` / `.jsonl.gz` file below the directory, recursively, sorted by path; with `alsoFile`,
 * also the other files of the directory it accepts (the import: Old Faithful CAR files, recognized
 * by their first bytes).
 */
export async function listArchiveFiles(path: string, alsoFile?: (path: string) => Promise<boolean>): Promise<string[]> {
  const st = await stat(path)
  if (!st.isDirectory()) return [path]
  const out: string[] = []
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true })
    for (const e of entries) {
      const p = join(dir, e.name)
      if (e.isDirectory()) await walk(p)
      else if (isArchiveFileName(e.name) || (e.isFile() && alsoFile && (await alsoFile(p)))) out.push(p)
    }
  }
  await walk(path)
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/** the first block of an archive file (its first non-empty line's slot), or null when it has none */
export async function archiveFirstSlot(file: string): Promise<number | null> {
  let lineNo = 0
  for await (const text of readTextLines(file)) {
    lineNo++
    if (text.trim() === '') continue
    try {
      return toArchiveLine(parseJsonExact(text)).slot
    } catch (e) {
      throw new Error(`${file}:${lineNo}: ${errorMessage(e)}`)
    }
  }
  return null
}

/**
 * The archive files under `paths` (files, or directories searched as `listArchiveFiles` does) in
 * the order of their first blocks, read from each file's first line only, so that files given in
 * any order are imported oldest first. Files holding no block are left out.
 */
export async function orderArchiveFiles(paths: readonly string[]): Promise<{ file: string; first: number }[]> {
  const files: { file: string; first: number }[] = []
  for (const p of paths)
    for (const file of await listArchiveFiles(p)) {
      const first = await archiveFirstSlot(file)
      if (first !== null) files.push({ file, first })
    }
  // stable: files starting at the same block keep their order (the import refuses the overlap)
  return files.sort((a, b) => a.first - b.first)
}

/** Does the file start with the gzip magic bytes 1f 8b? */
export async function isGzipFile(path: string): Promise<boolean> {
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(2)
    const { bytesRead } = await fh.read(buf, 0, 2, 0)
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b
  } finally {
    await fh.close()
  }
}

/** bytes handed over per read (and per gunzip output): fewer callbacks per multi-MB line */
const READ_CHUNK = 256 * 1024

/**
 * The lines of a text file, decompressed when gzip, streamed (never the whole file in memory),
 * each as its bytes in pieces: views of the reads it spans, valid until the next line is asked
 * for (`joinPieces` joins them). `\n`, `\r\n` and a lone `\r` end a line, as with readline. The
 * bytes are searched for `\n` (memchr), and a line is never copied here: its reader copies it
 * once, to where it goes.
 */
export async function* readLinePieces(path: string): AsyncGenerator<Buffer[]> {
  const gz = await isGzipFile(path)
  const file = createReadStream(path, { highWaterMark: READ_CHUNK })
  const input = gz ? file.pipe(createGunzip({ chunkSize: READ_CHUNK })) : file
  if (gz) file.on('error', (e) => input.destroy(e))
  /** the pieces of the line being read (bytes after the last `\n`) */
  let pieces: Buffer[] = []
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let start = 0
      for (;;) {
        const nl = chunk.indexOf(0x0a, start)
        if (nl < 0) break
        const line = pieces
        line.push(chunk.subarray(start, nl))
        pieces = []
        yield* splitCr(line)
        start = nl + 1
      }
      if (start < chunk.length) pieces.push(chunk.subarray(start))
    }
    if (pieces.length > 0) yield* splitCr(pieces)
  } finally {
    file.destroy()
    if (gz) input.destroy()
  }
}

/** the bytes of a line's pieces in one buffer (the piece itself when there is one) */
export function joinPieces(pieces: readonly Buffer[]): Buffer {
  return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)
}

/** a line without `\n` (in pieces): the lines its lone `\r`s (and a final one) end */
function* splitCr(pieces: Buffer[]): Generator<Buffer[]> {
  if (!pieces.some((p) => p.indexOf(0x0d) >= 0)) {
    yield pieces
    return
  }
  const line = joinPieces(pieces)
  let start = 0
  for (let cr = line.indexOf(0x0d); cr >= 0; cr = line.indexOf(0x0d, start)) {
    yield [line.subarray(start, cr)]
    start = cr + 1
  }
  // `\r\n` inside cannot occur (the line holds no `\n`): every `\r` ends a line, a final one
  // the last
  if (start < line.length) yield [line.subarray(start)]
}

/**
 * The lines of a text file (UTF-8), streamed: `readLinePieces` decoded once per line. On generated
 * 1,500-transaction blocks (5.6 MB lines, gzip level 1), 16-17 ms of CPU per block for reading,
 * gunzip and lines against 31-35 ms with readline (most of it gunzip), which decodes every read
 * to a string and splits the strings with a regular expression.
 */
export async function* readTextLines(path: string): AsyncGenerator<string> {
  for await (const pieces of readLinePieces(path)) yield joinPieces(pieces).toString('utf8')
}

/** The first `n` bytes of a line in pieces (fewer when the line is shorter). */
export function lineStart(pieces: readonly Buffer[], n: number): Buffer {
  if (pieces[0].length >= n || pieces.length === 1) return pieces[0].subarray(0, n)
  // only the pieces the first n bytes are in (not the whole line, megabytes for a large block)
  let k = 0
  let have = 0
  while (k < pieces.length && have < n) have += pieces[k++].length
  return Buffer.concat(pieces.slice(0, k), Math.min(have, n))
}

/**
 * Is this line blank (`text.trim() === ''` of its text, the lines `readArchiveTexts` skips)? Read
 * from its bytes: the first byte that is ASCII and not white space says no (a JSON line's first
 * byte); only a line with other bytes is decoded.
 */
export function isBlankLine(pieces: readonly Buffer[]): boolean {
  for (const b of pieces) {
    for (let i = 0; i < b.length; i++) {
      const c = b[i]
      if (c >= 0x80) return joinPieces(pieces).toString('utf8').trim() === ''
      // tab, LF, VT, FF, CR, space
      if (c !== 0x20 && (c < 0x09 || c > 0x0d)) return false
    }
  }
  return true
}

/**
 * Reads archive lines from a file, a directory (recursively, files sorted by path) or a list of
 * them, in order. Gzip is detected by magic bytes. Empty lines are skipped. Errors name `file:line`.
 */
export async function* readArchive(paths: string | string[]): AsyncIterable<ArchiveLine> {
  for await (const { text, where } of readArchiveTexts(paths)) {
    let line: ArchiveLine
    try {
      line = toArchiveLine(parseJsonExact(text))
    } catch (e) {
      throw new Error(`${where}: ${errorMessage(e)}`)
    }
    yield line
  }
}

/**
 * The non-empty lines of archive files as text, in `readArchive`'s order, each with its place
 * (`file:line`, for messages). Read errors name the place.
 */
export async function* readArchiveTexts(paths: string | string[]): AsyncGenerator<{ text: string; where: string }> {
  const list = typeof paths === 'string' ? [paths] : paths
  for (const p of list) {
    for (const file of await listArchiveFiles(p)) {
      let lineNo = 0
      let lines: AsyncGenerator<string>
      try {
        lines = readTextLines(file)
      } catch (e) {
        throw new Error(`${file}: ${errorMessage(e)}`)
      }
      try {
        for (;;) {
          let next: IteratorResult<string>
          try {
            next = await lines.next()
          } catch (e) {
            throw new Error(`${file}:${lineNo + 1}: cannot read: ${errorMessage(e)}`)
          }
          if (next.done) break
          lineNo++
          const text = next.value
          if (text.trim() === '') continue
          yield { text, where: `${file}:${lineNo}` }
        }
      } finally {
        await lines.return(undefined)
      }
    }
  }
}

/**
 * Keys whose values are u64/i64 numbers in the RPC result. A decimal string under one of them
 * (what `parseJsonExact` makes of a big integer) is written back as a bare number, so that an
 * archive keeps the exact RPC shape. `uiTokenAmount.amount` is a string in RPC and stays one.
 */
const NUMERIC_KEYS = new Set(['fee', 'computeUnitsConsumed', 'lamports', 'postBalance', 'preBalances', 'postBalances'])
const DECIMAL = /^-?\d+$/

/**
 * One archive line as JSON text (no trailing newline). Big integers are written exactly: bigint
 * values anywhere, and decimal strings under the RPC's numeric u64 keys, become bare integers.
 */
export function formatArchiveLine(line: ArchiveLine): string {
  const height = line.height !== undefined ? line.height : line.block.blockHeight
  const head = `{"slot":${line.slot},"hash":${JSON.stringify(line.hash ?? line.block.blockhash)},"height":${height == null ? 'null' : String(height)},"block":`
  let body: string | null = null
  try {
    body = fastBlockJson(line.block)
  } catch {
    // a bigint where the fast path does not look: the generic writer handles it
  }
  if (body === null) body = stringifyExact(line.block, NUMERIC_KEYS)
  return head + body + '}'
}

/** Marker for an exact integer inside the native JSON.stringify output (see fastBlockJson). */
const MARK = '\u0000solportal-u64:'
const MARK_RE = /"\\u0000solportal-u64:(-?\d+)"/g

/**
 * The fast path: native JSON.stringify, with the u64 fields of the RPC shape that hold a bigint or
 * a decimal string replaced (in shallow copies) by marker strings, which are then turned into bare
 * integers. Returns null when the marker count does not match (a real string that looks like a
 * marker); throws when a bigint sits elsewhere.
 */
function fastBlockJson(block: RpcBlock): string | null {
  let markers = 0
  const fix = (v: unknown): unknown => {
    if (typeof v === 'bigint' || (typeof v === 'string' && DECIMAL.test(v))) {
      markers++
      return MARK + String(v)
    }
    return v
  }
  const special = (v: unknown) => typeof v === 'bigint' || typeof v === 'string'
  const fixRewards = (rs: unknown): unknown => {
    if (!Array.isArray(rs) || !rs.some((r) => r != null && (special(r.lamports) || special(r.postBalance)))) return rs
    return rs.map((r) => (r == null ? r : { ...r, lamports: fix(r.lamports), postBalance: fix(r.postBalance) }))
  }
  let patched = block
  const rewards = fixRewards(block.rewards)
  if (rewards !== block.rewards) patched = { ...patched, rewards: rewards as RpcBlock['rewards'] }
  const txs = block.transactions
  if (Array.isArray(txs)) {
    let copy: typeof txs | null = null
    for (let i = 0; i < txs.length; i++) {
      const meta = txs[i]?.meta
      if (meta == null) continue
      const pre = meta.preBalances
      const post = meta.postBalances
      const r = fixRewards(meta.rewards)
      const needs =
        special(meta.fee) ||
        special(meta.computeUnitsConsumed) ||
        (Array.isArray(pre) && pre.some(special)) ||
        (Array.isArray(post) && post.some(special)) ||
        r !== meta.rewards
      if (!needs) continue
      const m = { ...meta, fee: fix(meta.fee), rewards: r } as typeof meta
      if (meta.computeUnitsConsumed !== undefined)
        m.computeUnitsConsumed = fix(meta.computeUnitsConsumed) as typeof meta.computeUnitsConsumed
      if (Array.isArray(pre)) m.preBalances = pre.map(fix) as typeof pre
      if (Array.isArray(post)) m.postBalances = post.map(fix) as typeof post
      if (copy === null) copy = txs.slice()
      copy[i] = { ...txs[i], meta: m }
    }
    if (copy !== null) patched = { ...patched, transactions: copy }
  }
  const text = JSON.stringify(patched)
  if (markers === 0) return text
  let found = 0
  const out = text.replace(MARK_RE, (_m, digits: string) => {
    found++
    return digits
  })
  return found === markers ? out : null
}
