/**
 * One immutable chunk file: a contiguous range of produced blocks, every kind's rows in columns.
 *
 * Layout (little-endian):
 *
 *     "SPCOLD01"                          8-byte magic
 *     column blobs, each 8-byte aligned   (parts of src/store/cold/encode/column.ts, each padded to 8)
 *     prune section                       Bloom filters per (kind, field): the dataset's pruned fields
 *     footer                              UTF-8 JSON (`Footer`)
 *     u32 footer length, u32 crc32(footer), "SPCOLDZZ"   16-byte trailer
 *                                         (format 4: "SPCOLDZB", the footer brotli-compressed)
 *
 * Every blob carries its crc32 in the footer and is verified when read; a column is read only when
 * a query asks for it (one positioned read), so a query touching 3 columns reads 3 blobs.
 * Optional per-blob compression (deflate-raw) when it saves at least 25%.
 */
import { closeSync, openSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { storageError, writeAll } from '../write-all.ts'
import { DEFAULT_DATASET } from '../../catalogue.ts'
import type { Dataset, FieldDef, FieldType, StoredBlock } from '../../dataset/types.ts'
import type { Block, BlockHeader } from '../../model.ts'
import { columnBuilder, type ColumnBuilder } from './encode/builders.ts'
import { encodeColumn } from './encode/column.ts'
import type { Enc, Encoded } from './encode/encoded.ts'
import { IdList } from './id-list.ts'
import { AccountInterner, type InternedColumn } from './intern.ts'
import { ChunkFileWriter } from './chunk-writer.ts'
import { READABLE_VERSIONS } from './chunk-format.ts'
import { decodeBlob, readFooter } from './chunk-read.ts'

export { CRC_PAGE, END_MAGIC, END_MAGIC_BROTLI, MAGIC, READABLE_VERSIONS } from './chunk-format.ts'
export {
  bloomMayContain,
  CorruptChunkError,
  decodeBlob,
  readBlob,
  readBloom,
  readFooter,
  readPrune,
} from './chunk-read.ts'

/** The block member holding each kind's rows, of the default dataset. */
export const LISTS: { readonly [kind: string]: keyof Block } = Object.fromEntries(
  DEFAULT_DATASET.tables.map((t) => [t.kind, t.member as keyof Block]),
)

/** Fields with a Bloom filter per chunk (the address-like fields the query engine prunes on), of the default dataset. */
export const PRUNE_FIELDS: { readonly [kind: string]: readonly string[] } = Object.fromEntries(
  DEFAULT_DATASET.kinds.map((k) => [k, DEFAULT_DATASET.pruneFields(k)]),
)

/**
 * A column blob's footer entry. The footer JSON stores each under a short key, given here in
 * brackets (footer-keys.ts converts when the footer is read or written).
 */
export interface ColumnBlob {
  /** [e] the column's encoding */
  encoding: Enc
  /** [o] file offset of the blob */
  offset: number
  /** [l] stored length of the blob */
  storedLength: number
  /** [p] raw (uncompressed) part lengths, without padding */
  partLengths: number[]
  /** [c] crc32 of the stored blob */
  crc: number
  /** [z] the blob is deflate-raw compressed */
  deflated?: 1
  /** [w] code / element width in bytes (`Encoded.w`) */
  width?: 1 | 2 | 4
  /** [v] validity part present (`Encoded.v`) */
  validity?: 1
  /** [x] index parts present (format 2; see encode/encoded.ts `Encoded.x`) */
  indexParts?: 1
  /** [s] format 4: dictionary in value order (`Encoded.s`) */
  valueOrdered?: 1
  /** [fx] format 4, value-ordered dictionaries: [first code, its value] of each frame of the text */
  fences?: [number, string][]
  /**
   * [pc] format 3, uncompressed blobs: crc32 of each CRC_PAGE bytes of the blob (the last page may
   * be shorter), so that a few bytes can be read and checked without reading the whole blob
   */
  pageCrcs?: number[]
  /** [t] format 4: the column's type (catalogue `FieldType`), checked against the reader's */
  type?: FieldType
  /**
   * [fr] format 4: the blob is compressed frames (frames.ts): per part [log2 frame size, filter,
   * stored length of each frame (negative: stored raw)], frames in order
   */
  frames?: number[][]
  /** [fc] format 4: crc32 of each stored frame, in order */
  frameCrcs?: number[]
  /** [zc] format 5: the codec of each part's frames (frames.ts CODEC_*); absent: brotli throughout */
  codecs?: number[]
}

export interface TableMeta {
  rows: number
  /** block offsets (u32, blockCount + 1); absent for the header table */
  off?: ColumnBlob
  cols: Record<string, ColumnBlob>
}

/**
 * Chunk file format versions read: 1 (original), 2 (adds index parts to string dictionary, plain
 * string and list columns: `x: 1` in their column entries; version 1 readers would ignore them),
 * 3 (list postings list every occurrence with its position: 8 parts instead of 7; page checksums
 * `pc` of uncompressed blobs), 4 (every blob in compressed frames, `fr`/`fc`; every column entry
 * declares its type `t`; a column the reader knows but a chunk lacks reads as null), 5 (a part's
 * frames may be zstd: `zc`, which a format 4 reader would not know to look for).
 * Written: FORMAT_VERSION. A file of any other version is refused.
 */
export const FORMAT_VERSION = 5
export type FormatVersion = 1 | 2 | 3 | 4 | 5

export interface Footer {
  v: FormatVersion
  firstBlock: number
  lastBlock: number
  blockCount: number
  header: TableMeta
  kinds: Record<string, TableMeta>
  /**
   * prune section: offset, length, crc, hash scheme (BLOOM_SCHEMES; filters of another scheme are
   * ignored, never trusted); per "kind.field": [offset in section, byte length]
   */
  /** f: per filter key, [offset in the section, length] (+ its crc32 in format 3) */
  prune: { o: number; l: number; c: number; h?: number; f: Record<string, [number, number] | [number, number, number]> }
}

export interface WriteOptions {
  compress?: boolean
  /** format version to write: FORMAT_VERSION (default), or 1 (no index parts; for compatibility tests) */
  formatVersion?: FormatVersion
  fsync?: boolean
  /** format 4: log2 of the frame size of every part (default by part, frames.ts; tests use small frames) */
  frameLog?: number
  /**
   * format 5: text and JSON parts compressed with zstd (true) or brotli (false); default: zstd
   * where this thread may compress zstd without holding a serving event loop (frames.ts `zstdHere`)
   */
  zstd?: boolean
  /** the dataset whose blocks are written (default: the default dataset) */
  dataset?: Dataset
  /**
   * format 4: compress frames in the calling thread (true) or on the thread pool (false); default:
   * in worker threads, on the pool from a main thread (frames.ts `brotli`)
   */
  compressHere?: boolean
  /** format 4: a chunk rewritten soon (an unsealed tail chunk): frames compressed with the least effort (frames.ts) */
  transient?: boolean
}

export interface WrittenChunk {
  bytes: number
  sha256: string
  footer: Footer
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

type AppendColumns = (rows: readonly Record<string, unknown>[], out: unknown[][]) => void
const APPENDERS = new Map<string, AppendColumns>()
/**
 * Append the columns of `rows` to `out` (one array per name, a missing value as null), in one
 * pass over the rows: each row is visited once for all its fields (rows are scattered objects,
 * and a pass per column would fetch every row again), with the names as constants (fast named
 * loads, not keyed ones).
 */
function appendColumns(names: readonly string[], rows: readonly Record<string, unknown>[], out: unknown[][]): void {
  const key = names.join(',')
  let f = APPENDERS.get(key)
  if (!f) {
    const load = (k: string) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `r.${k}` : `r[${JSON.stringify(k)}]`)
    const body = [
      ...names.map((k, j) => `const c${j} = out[${j}]`),
      'for (let i = 0; i < rows.length; i++) {',
      '  const r = rows[i]',
      ...names.map((k, j) => `  c${j}.push(${load(k)} ?? null)`),
      '}',
    ].join('\n')
    f = new Function('rows', 'out', body) as AppendColumns
    APPENDERS.set(key, f)
  }
  f(rows, out)
}

/** A chunk file's bytes, encoded but not written (`writeEncodedChunk` writes them). */
export interface EncodedChunk extends WrittenChunk {
  /** the file's bytes, in order (`bytes` in all) */
  parts: Uint8Array[]
}

/** Encode `blocks` (ascending, non-empty) and write them as one chunk file at `path`. */
export async function writeChunkFile(
  path: string,
  blocks: readonly StoredBlock[],
  opts: WriteOptions = {},
): Promise<WrittenChunk> {
  const enc = await encodeChunk(blocks, opts)
  await writeEncodedChunk(path, enc.parts, opts.fsync !== false)
  return { bytes: enc.bytes, sha256: enc.sha256, footer: enc.footer }
}

/** Write (create, fail if present) the encoded bytes of a chunk file at `path`, fsynced unless told not to. */
export async function writeEncodedChunk(path: string, parts: readonly Uint8Array[], fsync: boolean): Promise<void> {
  let fh
  try {
    fh = await open(path, 'wx')
  } catch (e) {
    throw storageError(e, path)
  }
  try {
    // checked for its length: a short write (a disk filling up) is continued or fails
    await writeAll(fh, parts, 0, path)
    if (fsync) await fh.sync()
    await fh.close()
  } catch (e) {
    // the part written goes (a retry writes the same name)
    await fh.close().catch(() => undefined)
    await rm(path, { force: true })
    throw storageError(e, path)
  }
}

/**
 * The bytes of the chunk file of `blocks` (ascending, non-empty): what `writeChunkFile` writes. Pure
 * computation, so it runs in import workers (src/cli/commands/import-worker.ts).
 */
export async function encodeChunk(blocks: readonly StoredBlock[], opts: WriteOptions = {}): Promise<EncodedChunk> {
  if (blocks.length === 0) throw new Error('cold store: empty chunk')
  const c = new ChunkColumns(opts)
  for (const b of blocks) c.add(b)
  return c.encode()
}

/** an account column interned block by block: its ids (and a list column's row offsets into them) */
interface InternedIds {
  ids: IdList
  offsets?: IdList
}

/** the columns of one table (the headers, or a kind's records) gathered so far */
interface TableColumns {
  kind?: string
  /** the block member holding the kind's rows */
  member?: string
  /** the fields indexed for pruning */
  prune: readonly string[]
  defs: readonly FieldDef[]
  rows: number
  /** row offset of each block added so far (a kind's tables) */
  offsets: number[]
  /** per def: its values, or null while it is interned (`ids`) */
  values: (unknown[] | null)[]
  /** per def: the ids of an interned account column, else null */
  ids: (InternedIds | null)[]
  /**
   * per def (format 4): the builder of a column gathered in a compact form (strings that are not
   * interned: a dictionary and codes; addresses, u64 / i64: typed arrays), else null
   */
  built: (ColumnBuilder | null)[]
}

/**
 * A chunk file being built block by block: `add` takes each block's records into columns at once
 * (their values appended to one array per column; the account columns interned, intern.ts, and
 * kept as ids), so the record objects are garbage as soon as their block is added instead of
 * living, scattered, until the chunk is encoded; `encode` then writes exactly the bytes
 * `encodeChunk` of the same blocks writes (it is built on this).
 */
export class ChunkColumns {
  private readonly version: FormatVersion
  /**
   * format 4: the account columns of every kind (the address-like pruned fields of string and
   * string list type), interned into one table as blocks come (intern.ts)
   */
  private readonly interner: AccountInterner | null
  private readonly headers: BlockHeader[] = []
  private readonly headerTable: TableColumns
  private readonly tables: TableColumns[]

  constructor(private readonly opts: WriteOptions = {}) {
    const version = opts.formatVersion ?? FORMAT_VERSION
    if (!READABLE_VERSIONS.includes(version))
      throw new Error(`cold store: cannot write chunk format version ${version}`)
    this.version = version
    this.interner = version >= 4 ? new AccountInterner() : null
    const table = (defs: readonly FieldDef[], kind?: string, member?: string, prune: readonly string[] = []) => {
      const interned = (d: FieldDef) => kind !== undefined && this.interner !== null && isAccountColumn(prune, d)
      const ids = defs.map((d) =>
        interned(d)
          ? d.type === 'safeAsciiList'
            ? { ids: new IdList(), offsets: listStart() }
            : { ids: new IdList() }
          : null,
      )
      const built = defs.map((d) => (this.interner && !interned(d) ? columnBuilder(d.type, true, true) : null))
      const values = defs.map((_, j) => (ids[j] || built[j] ? null : []))
      return { kind, member, prune, defs, rows: 0, offsets: [], values, ids, built } as TableColumns
    }
    const ds = opts.dataset ?? DEFAULT_DATASET
    this.headerTable = table(ds.header)
    this.tables = ds.tables.map((t) => table(ds.columnsOf(t.kind), t.kind, t.member, ds.pruneFields(t.kind)))
  }

  get blockCount(): number {
    return this.headers.length
  }

  /** the headers of the blocks added so far, in order */
  get blockHeaders(): readonly BlockHeader[] {
    return this.headers
  }

  /** Take a block (above the previous one) into the columns; nothing of it is kept but its values. */
  add(block: StoredBlock): void {
    this.addPart(block, true)
  }

  /**
   * Take a block given in parts (normalize.ts `normalizeBlockInto`) into the columns: `first`,
   * its first part, starts the block (its header, above the previous block's); each later part
   * holds the next records of that block. The parts' lists concatenated are the block's lists.
   * After an exception here, or a block left unfinished, the columns are not to be encoded.
   */
  addPart(part: StoredBlock, first: boolean): void {
    if (first) {
      const prev = this.headers[this.headers.length - 1]
      if (prev && !(part.header.number > prev.number)) {
        throw new Error(`cold store: blocks of a chunk must ascend (${prev.number} then ${part.header.number})`)
      }
      this.headers.push(part.header)
      this.append(this.headerTable, [part.header as unknown as Record<string, unknown>])
      for (const t of this.tables) t.offsets.push(t.rows)
    } else if (this.headers.length === 0) throw new Error('cold store: a part of a block before its first')
    for (const t of this.tables) {
      const rows = (part as unknown as Record<string, Record<string, unknown>[]>)[t.member!]
      if (rows.length > 0) this.append(t, rows)
    }
  }

  private append(t: TableColumns, rows: readonly Record<string, unknown>[]): void {
    // columns kept as values, appended as they are; the others (account and string columns,
    // format 4) taken from this block's values, which are then garbage
    const plain: string[] = []
    const plainOut: unknown[][] = []
    const built: number[] = []
    t.defs.forEach((d, j) => {
      const v = t.values[j]
      if (v) {
        plain.push(d.name)
        plainOut.push(v)
      } else built.push(j)
    })
    appendColumns(plain, rows, plainOut)
    if (built.length) {
      const fresh = built.map(() => [] as unknown[])
      appendColumns(
        built.map((j) => t.defs[j].name),
        rows,
        fresh,
      )
      built.forEach((j, k) => {
        const b = t.built[j]
        if (b) {
          if (b.append(fresh[k]) < 0) return
          // a value of another type: the column keeps its values from here on (encodeColumn names it)
          t.values[j] = [...b.values(), ...fresh[k]]
          t.built[j] = null
          return
        }
        const col = t.ids[j]!
        const ok = col.offsets
          ? this.interner!.appendLists(fresh[k], col.ids, col.offsets)
          : this.interner!.appendValues(fresh[k], col.ids)
        if (ok) return
        t.values[j] = [...this.interner!.strings(internedColumn(col)), ...fresh[k]]
        t.ids[j] = null
      })
    }
    t.rows += rows.length
  }

  /** The chunk file's bytes of the blocks added (at least one). */
  async encode(): Promise<EncodedChunk> {
    const headers = this.headers
    if (headers.length === 0) throw new Error('cold store: empty chunk')
    const out = new ChunkFileWriter(this.version, this.opts)
    // every account column interned: the strings sorted once
    this.interner?.seal()
    const header: TableMeta = { rows: headers.length, cols: await this.encodeTable(out, this.headerTable) }
    const kinds: Record<string, TableMeta> = {}
    for (const t of this.tables) {
      const offsets = new Uint32Array(headers.length + 1)
      offsets.set(t.offsets)
      offsets[headers.length] = t.rows
      const off = out.column({ e: 'u32', parts: [new Uint8Array(offsets.buffer)] }, 'u32')
      kinds[t.kind!] = { rows: t.rows, off, cols: await this.encodeTable(out, t) }
    }
    const range = {
      firstBlock: headers[0].number,
      lastBlock: headers[headers.length - 1].number,
      blockCount: headers.length,
    }
    return out.finish(range, header, kinds)
  }

  /** the columns of a table written (in order), with the Bloom filters of its pruned fields */
  private async encodeTable(out: ChunkFileWriter, t: TableColumns): Promise<Record<string, ColumnBlob>> {
    const { version, interner } = this
    const { defs, kind } = t
    const cols: Record<string, ColumnBlob> = {}
    const prune = t.prune
    for (let k = 0; k < defs.length; k++) {
      const d = defs[k]
      const pre = t.ids[k]
      const built = t.built[k]
      let values = t.values[k]
      t.values[k] = null // garbage once encoded
      t.ids[k] = null
      t.built[k] = null
      if (t.rows > 10_000) await tick() // let the event loop breathe between big columns
      const enc = pre
        ? interner!.encode(d.name, d.type === 'safeAsciiList', internedColumn(pre))
        : built
          ? built.encode()
          : encodeColumn(d.name, d.type, values!, version >= 2, version >= 3, version >= 4)
      cols[d.name] = out.column(enc, d.type)
      // format 4: a value-ordered dictionary answers `mayContain` exactly (RawColumn.lookup,
      // bounded by the column's fences to one frame of its text): no Bloom filter
      if (prune.includes(d.name) && enc.s !== 1) {
        values ??= built ? built.values() : interner!.strings(internedColumn(pre!))
        const [distinct, n] = distinctValues(d, enc, values)
        out.bloom(`${kind}.${d.name}`, distinct, n)
      }
    }
    return cols
  }
}

/** the distinct values of a pruned column (json: the strings its declaration names), and their count */
function distinctValues(d: FieldDef, enc: Encoded, values: readonly unknown[]): [Iterable<string>, number] {
  if (d.type === 'json') {
    const s = new Set<string>()
    // each distinct value once (loaded addresses repeat: a lookup table's accounts)
    const strings = d.strings!
    for (const x of enc.objects ?? values) strings(x, s)
    return [s, s.size]
  }
  if (enc.distinct && (enc.e === 'dict' || enc.e === 'list')) return [enc.distinct, enc.distinct.length]
  const s = new Set<string>()
  for (const x of values) if (typeof x === 'string') s.add(x)
  return [s, s.size]
}

/** a kind's account column, interned (the address-like pruned fields of string and string list type) */
function isAccountColumn(prune: readonly string[], d: FieldDef): boolean {
  return prune.includes(d.name) && (d.type === 'safeAscii' || d.type === 'safeAsciiList')
}

/** the row offsets of a list column with no row yet */
function listStart(): IdList {
  const o = new IdList()
  o.push(0)
  return o
}

function internedColumn(c: InternedIds): InternedColumn {
  return c.offsets ? { ids: c.ids.view(), offsets: new Uint32Array(c.offsets.view()) } : { ids: c.ids.view() }
}

/** Every blob of a chunk with its row count (header columns, block offsets, record columns). */
function blobsOf(ft: Footer, ds: Dataset): { m: ColumnBlob; n: number }[] {
  const out: { m: ColumnBlob; n: number }[] = []
  for (const d of ds.header) if (ft.header.cols[d.name]) out.push({ m: ft.header.cols[d.name], n: ft.blockCount })
  for (const kind of ds.kinds) {
    const t = ft.kinds[kind]
    out.push({ m: t.off!, n: ft.blockCount + 1 })
    for (const d of ds.columnsOf(kind)) if (t.cols[d.name]) out.push({ m: t.cols[d.name], n: t.rows })
  }
  return out
}

/** encodings that hold each catalogue type (format 1-3 entries carry no type) */
const ENC_OF: { readonly [T in FieldType]: readonly Enc[] } = {
  u32: ['u32'],
  u64: ['u64'],
  i64: ['i64'],
  bool: ['bool'],
  version: ['ver'],
  safeAscii: ['dict', 'plain'],
  string: ['dict', 'plain'],
  json: ['jdict', 'jplain'],
  address: ['addr'],
  safeAsciiList: ['list'],
}

/** catalogue types renamed since format 4 wrote their names: the old name reads as the new one */
const RENAMED_TYPES: { readonly [old: string]: FieldType } = { base58: 'safeAscii', base58List: 'safeAsciiList' }

/**
 * The entry of column `name` of a table as the reader's field definition `def` expects it: null
 * when the chunk has no such column (written before the field existed: it reads as null), an
 * error when the chunk stores it with another type.
 */
export function columnEntry(path: string, table: string, t: TableMeta, def: FieldDef): ColumnBlob | null {
  const m = t.cols[def.name]
  if (m === undefined) return null
  const stored = m.type === undefined ? undefined : (RENAMED_TYPES[m.type] ?? m.type)
  if (stored !== undefined ? stored !== def.type : !ENC_OF[def.type].includes(m.encoding)) {
    throw new SchemaMismatchError(
      `${path}: column ${table}.${def.name} is stored as ${m.type ?? `encoding ${m.encoding}`}, but the catalogue declares it ${def.type}`,
    )
  }
  return m
}

export class SchemaMismatchError extends Error {}

/** n nulls: a column a chunk does not have */
export function nullColumn(n: number): null[] {
  return new Array<null>(n).fill(null)
}

/** Rebuild blocks from decoded columns (`get` returns the values of a blob). */
function assemble(
  path: string,
  ft: Footer,
  get: (m: ColumnBlob, n: number) => ArrayLike<unknown>,
  ds: Dataset,
): Block[] {
  const n = ft.blockCount
  const col = (table: string, t: TableMeta, d: FieldDef, rows: number) => {
    const m = columnEntry(path, table, t, d)
    return m ? get(m, rows) : nullColumn(rows)
  }
  const hcols = ds.header.map((d) => col('header', ft.header, d, n))
  const blocks: Record<string, unknown>[] = []
  for (let b = 0; b < n; b++) {
    const header = {} as Record<string, unknown>
    ds.header.forEach((d, i) => (header[d.name] = hcols[i][b]))
    const block: Record<string, unknown> = { header }
    for (const t of ds.tables) block[t.member] = []
    blocks.push(block)
  }
  for (const { kind, member } of ds.tables) {
    const t = ft.kinds[kind]
    const offsets = get(t.off!, n + 1) as Uint32Array
    const defs = ds.columnsOf(kind)
    const cols = defs.map((d) => col(kind, t, d, t.rows))
    for (let b = 0; b < n; b++) {
      const list = blocks[b][member] as Record<string, unknown>[]
      for (let r = offsets[b]; r < offsets[b + 1]; r++) {
        const row: Record<string, unknown> = {}
        defs.forEach((d, i) => (row[d.name] = cols[i][r]))
        list.push(row)
      }
    }
  }
  return blocks as unknown as Block[]
}

/** Rebuild the normalized blocks of a chunk file (used by merges and tests). */
export function readChunkBlocks(path: string, footer?: Footer, ds: Dataset = DEFAULT_DATASET): Block[] {
  const ft = footer ?? readFooter(path).footer
  const fd = openSync(path, 'r')
  try {
    return assemble(path, ft, (m, n) => decodeBlob(path, fd, m, n).values, ds)
  } finally {
    closeSync(fd)
  }
}

/** `readChunkBlocks` yielding to the event loop between big columns (merges in a serving process). */
export async function readChunkBlocksAsync(
  path: string,
  footer?: Footer,
  ds: Dataset = DEFAULT_DATASET,
): Promise<Block[]> {
  const ft = footer ?? readFooter(path).footer
  const fd = openSync(path, 'r')
  const decoded = new Map<number, ArrayLike<unknown>>()
  try {
    for (const { m, n } of blobsOf(ft, ds)) {
      if (n > 10_000) await tick()
      decoded.set(m.offset, decodeBlob(path, fd, m, n).values)
    }
  } finally {
    closeSync(fd)
  }
  return assemble(path, ft, (m) => decoded.get(m.offset)!, ds)
}
