/**
 * `Chunk` over one chunk file, loading columns lazily: the footer is read when the chunk is first
 * used, the Bloom filters on the first `mayContain` (kept in the cache like columns), and each column on its first `column()` /
 * `header()` call (one synchronous positioned read, crc-checked), decoded once and kept in the
 * store-wide byte-bounded LRU.
 */
import { DEFAULT_DATASET } from '../../catalogue.ts'
import type { Dataset, FieldDef } from '../../dataset/types.ts'
import type { BlockHeader, RecordKind } from '../../model.ts'
import type { Chunk, MatchOp, Table } from '../chunk.ts'
import {
  bloomMayContain,
  columnEntry,
  decodeBlob,
  nullColumn,
  readBloom,
  readBlob,
  readFooter,
  readPrune,
  type ColMeta,
  type Footer,
} from './chunk-file.ts'
import { framesOf } from './frames.ts'
import type { ByteLru } from './lru.ts'
import { postingsOf, RawColumn } from './raw/column.ts'
import { standaloneIo, type PageIo } from './raw/page-io.ts'
import { Parts } from './raw/parts.ts'
import type { JsonTokens } from '../../util/json-bytes.ts'

/** the columns a reader expects of each kind (default: its dataset's; typed by the default dataset's kinds) */
export type ColumnsOf = (kind: RecordKind) => readonly FieldDef[]

const SCHEMAS = new WeakMap<ColumnsOf | Dataset, Map<string, Map<string, FieldDef>>>()
/** the reader's field definitions of a kind, by name */
function known(columns: ColumnsOf, kind: string): Map<string, FieldDef> {
  let byKind = SCHEMAS.get(columns)
  if (!byKind) SCHEMAS.set(columns, (byKind = new Map()))
  let s = byKind.get(kind)
  if (!s) byKind.set(kind, (s = new Map(columns(kind as RecordKind).map((d) => [d.name, d]))))
  return s
}

/** a dataset's header fields, by name */
function headerDefs(ds: Dataset): Map<string, FieldDef> {
  let byKind = SCHEMAS.get(ds)
  if (!byKind) SCHEMAS.set(ds, (byKind = new Map()))
  let s = byKind.get('')
  if (!s) byKind.set('', (s = new Map(ds.header.map((d) => [d.name, d]))))
  return s
}
/** cached answer "this chunk has no filter for that field" */
const NO_FILTER = new Uint8Array(0)

export type ColumnCache = ByteLru<string, ArrayLike<unknown>>

/** the cache key of a chunk object (`DiskColdStore` keeps its chunk objects in the cache) */
export function chunkKey(path: string): string {
  return `${path}\0chunk`
}

/** what a chunk object holds before its footer is read (the object, its maps and sets) */
export const CHUNK_OBJECT_BYTES = 1024

/** what a cache key held by a chunk object costs besides its characters (the string, its map entry) */
const KEY_BYTES = 64

/**
 * Heap held by a parsed footer of `jsonBytes` bytes of JSON: measured 2.2-2.7x the text on
 * generated chunks (many small objects and arrays), so 3x.
 */
export function footerBytes(jsonBytes: number): number {
  return 3 * jsonBytes
}

export class DiskChunk implements Chunk {
  readonly firstBlock: number
  readonly lastBlock: number
  readonly blockCount: number
  private _footer: Footer | null = null
  private readonly tables = new Map<string, DiskTable>()
  /** offsets of the blobs whose crc32 was checked once (the file is immutable) */
  private readonly verified = new Set<number>()
  /** format 3: per blob offset, a flag per page whose crc32 was checked once */
  private readonly checkedPages = new Map<number, Uint8Array>()
  /**
   * the cache keys of this chunk's entries, made once each (a query looks up a chunk's columns
   * several times: a held key string is hashed once, a new one at every lookup)
   */
  private readonly keys = new Map<string | number, string>()
  /** this chunk object's own cache key (`chunkKey(path)`), made once */
  readonly key: string

  constructor(
    readonly path: string,
    meta: { firstBlock: number; lastBlock: number; blockCount: number },
    readonly cache: ColumnCache,
    /** the columns this reader knows (a column a chunk lacks reads as null; another type is an error) */
    columns?: ColumnsOf,
    /** the dataset of the chunk: its header, kinds, columns and pruned fields */
    readonly dataset: Dataset = DEFAULT_DATASET,
    /** the store's descriptors and scratch pages for reads on demand */
    readonly io: PageIo = standaloneIo(),
  ) {
    this.firstBlock = meta.firstBlock
    this.lastBlock = meta.lastBlock
    this.blockCount = meta.blockCount
    this.key = chunkKey(path)
    this.columns = columns ?? dataset.columnsOf
  }

  /** the columns this reader knows of each kind */
  readonly columns: ColumnsOf

  get footer(): Footer {
    if (!this._footer) {
      const { footer, jsonBytes } = readFooter(this.path)
      if (
        footer.firstBlock !== this.firstBlock ||
        footer.lastBlock !== this.lastBlock ||
        footer.blockCount !== this.blockCount
      ) {
        throw new Error(`cold store: ${this.path} does not hold the blocks the manifest lists`)
      }
      this._footer = footer
      // the chunk object now holds its footer: accounted in the cache entry of this chunk object
      // (a no-op when the chunk is not kept there)
      this.accountBytes(footerBytes(jsonBytes))
    }
    return this._footer
  }

  /**
   * this chunk object holds `bytes` more (its footer, cache keys, block offsets): accounted in its
   * cache entry while it is the one cached (a no-op otherwise)
   */
  accountBytes(bytes: number): void {
    this.cache.growValue(this.key, this as unknown as ArrayLike<unknown>, bytes)
  }

  /** the cache key of this chunk's entry `name` (`kind.field`), or of the blob at file offset `name` */
  cacheKey(name: string | number): string {
    let k = this.keys.get(name)
    if (k === undefined) {
      k = typeof name === 'number' ? `${this.path}\0@${name}` : `${this.path}\0${name}`
      this.keys.set(name, k)
      // held by the chunk object: accounted in its cache entry (a no-op when it is not kept there)
      this.accountBytes(KEY_BYTES + 2 * k.length)
    }
    return k
  }

  /** decoded column, through the cache (`key`: `kind.field`) */
  load(key: string, get: () => { values: ArrayLike<unknown>; bytes: number }): ArrayLike<unknown> {
    const k = this.cacheKey(key)
    let v = this.cache.get(k)
    if (v === undefined) {
      const d = get()
      v = d.values
      this.cache.set(k, v, d.bytes)
    }
    return v
  }

  /** decode one blob of this file (crc checked on its first read only) */
  decode(m: ColMeta, n: number): { values: ArrayLike<unknown>; bytes: number } {
    const d = decodeBlob(this.path, null, m, n, this.verified.has(m.o))
    this.verified.add(m.o)
    return d
  }

  /**
   * a column's encoded parts (for filters and row reads on the stored form), through the cache:
   * read on demand, whole parts or pages (format 3: each page crc-checked when read; older
   * formats: the whole blob is checked once, on its first use)
   */
  raw(m: ColMeta, n: number): RawColumn {
    const k = this.cacheKey(m.o)
    let v = this.cache.get(k) as unknown as RawColumn | undefined
    if (v === undefined) {
      let parts: Parts
      if (m.fr) {
        // format 4: frames read and decompressed on demand, each checked with its own crc32
        parts = new Parts(
          m.p,
          null,
          {
            path: this.path,
            start: m.o,
            length: m.l,
            crcs: null,
            checked: null,
            frames: framesOf(m),
          },
          this.io,
        )
      } else if (m.z) {
        // compressed: read (and inflate) whole
        const read = readBlob(this.path, null, m, this.verified.has(m.o))
        this.verified.add(m.o)
        parts = new Parts(
          read.map((p) => p.byteLength),
          read,
          null,
          this.io,
        )
      } else {
        // pages read on demand, each checked with its own crc (format 3); older formats check the
        // whole blob once, on this first read, then read pages unchecked (the file is immutable)
        if (!m.pc && !this.verified.has(m.o)) {
          readBlob(this.path, null, m, false)
          this.verified.add(m.o)
        }
        let checked: Uint8Array | null = null
        if (m.pc) {
          checked = this.checkedPages.get(m.o) ?? null
          if (checked === null) this.checkedPages.set(m.o, (checked = new Uint8Array(m.pc.length)))
        }
        const src = { path: this.path, start: m.o, length: m.l, crcs: m.pc ?? null, checked }
        parts = new Parts(m.p, null, src, this.io)
      }
      const x = m.x === 1
      const layout = {
        e: m.e,
        w: m.w,
        x,
        v: m.v === 1,
        sortedDict: m.s === 1,
        fences: m.fx ?? null,
        postings: postingsOf(m.e, x, m.p),
      }
      v = new RawColumn(layout, n, parts)
      // accounted for the bytes it holds (whole parts, pages read on demand, parsed values), which
      // grow as queries read it
      this.cache.set(k, v as unknown as ArrayLike<unknown>, 256 + parts.bytes)
      // only while this very object is the cached one (an evicted column may still be in use)
      const col = v as unknown as ArrayLike<unknown>
      parts.onGrow = (d) => this.cache.growValue(k, col, d)
    }
    return v
  }

  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]> {
    const def = headerDefs(this.dataset).get(field)
    if (!def) throw new Error(`unknown header field ${field}`)
    return this.load(qualified('header', field), () => {
      const m = columnEntry(this.path, 'header', this.footer.header, def)
      return m ? this.decode(m, this.blockCount) : { values: nullColumn(this.blockCount), bytes: 8 * this.blockCount }
    }) as ArrayLike<BlockHeader[K]>
  }

  table(kind: string): Table {
    let t = this.tables.get(kind)
    if (!t) {
      if (!this.dataset.kinds.includes(kind)) throw new Error(`unknown kind ${kind}`)
      t = new DiskTable(this, kind)
      this.tables.set(kind, t)
    }
    return t
  }

  mayContain(kind: string, field: string, values: ReadonlySet<string>): boolean {
    if (values.size === 0) return false
    // format 4: a value-ordered dictionary answers exactly (and the codes it finds are kept for
    // the filters that follow); such columns have no Bloom filter
    const t = this.footer.kinds[kind]
    const m = t.cols[field]
    if (m !== undefined && m.s === 1 && m.x === 1 && this.dataset.pruneFields(kind).includes(field)) {
      const raw = this.raw(m, t.rows)
      for (const v of values) if (raw.lookup(v) >= 0) return true
      return false
    }
    // the filters live in the store-wide cache too, so their memory is bounded with the columns';
    // format 3: each filter read alone (a query touches one or two), else the whole section
    const key = `${kind}.${field}`
    const k = `${this.path}\0#bloom:${key}`
    // one get per call, so that the cache's hit and miss counts are those of the filter lookups
    let bits = this.cache.get(k) as unknown as Uint8Array | undefined
    if (bits === undefined) {
      const one = readBloom(this.path, null, this.footer, key)
      if (one !== undefined) {
        bits = one ?? NO_FILTER
        this.cache.set(k, bits as unknown as ArrayLike<unknown>, 64 + (one?.byteLength ?? 0))
      } else {
        const all = readPrune(this.path, this.footer)
        for (const name of Object.keys(this.footer.prune.f)) {
          const b = all.get(name) ?? NO_FILTER
          this.cache.set(`${this.path}\0#bloom:${name}`, b as unknown as ArrayLike<unknown>, 64 + b.byteLength)
        }
        bits = all.get(key) ?? NO_FILTER
        if (!this.cache.has(k)) this.cache.set(k, NO_FILTER as unknown as ArrayLike<unknown>, 64)
      }
    }
    return bloomMayContain(bits === NO_FILTER ? null : bits, values, this.footer.prune.h)
  }

  /** whether the cache holds column `kind.field` (entry `m`) decoded or as its stored parts: nothing to read ahead */
  holds(kind: string, field: string, m: ColMeta): boolean {
    return (
      this.cache.peek(this.cacheKey(m.o)) !== undefined ||
      this.cache.peek(this.cacheKey(qualified(kind, field))) !== undefined
    )
  }

  /** The blocks of positions [0, end) as a chunk (for ranges ending inside this chunk). */
  prefix(end: number): Chunk {
    return end >= this.blockCount ? this : new PrefixChunk(this, end)
  }
}

class DiskTable implements Table {
  private offsets: ArrayLike<number> | null = null

  constructor(
    private readonly chunk: DiskChunk,
    private readonly kind: string,
  ) {}

  get rowCount(): number {
    return this.chunk.footer.kinds[this.kind].rows
  }

  /** small (4 bytes per block): kept with the table once read */
  get blockOffsets(): ArrayLike<number> {
    if (!this.offsets) {
      const c = this.chunk
      const d = c.decode(c.footer.kinds[this.kind].off!, c.blockCount + 1)
      this.offsets = d.values as ArrayLike<number>
      c.accountBytes(d.bytes)
    }
    return this.offsets
  }

  /**
   * the stored entry of a column the reader knows (unknown names throw), null when this chunk
   * predates it (it reads as null); a type other than the reader's is an error
   */
  private entry(field: string): ColMeta | null {
    const def = known(this.chunk.columns, this.kind).get(field)
    if (!def) throw new Error(`unknown column ${this.kind}.${field}`)
    return columnEntry(this.chunk.path, this.kind, this.chunk.footer.kinds[this.kind], def)
  }

  column(field: string): ArrayLike<unknown> {
    const c = this.chunk
    const m = this.entry(field)
    return c.load(qualified(this.kind, field), () => {
      const rows = c.footer.kinds[this.kind].rows
      return m ? c.decode(m, rows) : { values: nullColumn(rows), bytes: 8 * rows }
    })
  }

  /** filters on the stored form: string dictionaries, plain strings and lists of format 2 */
  match(field: string, op: MatchOp, rows: Int32Array, n: number): number {
    const m = this.entry(field)
    if (m === null || (m.x !== 1 && m.e !== 'bool')) return -1
    return this.chunk.raw(m, this.rowCount).match(op, rows, n)
  }

  candidates(field: string, op: MatchOp, lo: number, hi: number): Int32Array | null {
    const m = this.entry(field)
    if (m === null || m.x !== 1) return null
    return this.chunk.raw(m, this.rowCount).candidates(op, lo, hi)
  }

  tokens(field: string, bigintsAsNumbers: boolean): JsonTokens | null {
    const m = this.entry(field)
    if (m === null || (m.x !== 1 && m.e !== 'addr' && m.e !== 'u64' && m.e !== 'i64')) return null
    return this.chunk.raw(m, this.rowCount).tokens(bigintsAsNumbers)
  }

  rowTokens(field: string, reads: number, bigintsAsNumbers = false): JsonTokens | null {
    const m = this.entry(field)
    const c = this.chunk
    const fixed = m !== null && (m.e === 'addr' || m.e === 'u32' || m.e === 'u64' || m.e === 'i64' || m.e === 'bool')
    // already decoded: nothing cheaper, but for 32-bit integers: a few rows' values are scattered
    // over megabytes of the decoded column (a cache miss each), the rows kept are packed
    if (m === null || (m.x !== 1 && !fixed)) return null
    if (m.e !== 'u32' && c.cache.has(c.cacheKey(qualified(this.kind, field)))) return null
    return c.raw(m, this.rowCount).rowTokens(reads, bigintsAsNumbers)
  }

  rowView(field: string, reads: number): ArrayLike<unknown> | null {
    const m = this.entry(field)
    const c = this.chunk
    // already decoded: nothing cheaper
    if (m === null || c.cache.has(c.cacheKey(qualified(this.kind, field)))) return null
    const t = c.footer.kinds[this.kind]
    const simple = m.e === 'addr' || m.e === 'bool' || m.e === 'ver' || m.v === 1
    if (m.x !== 1 && !simple) return null
    return c.raw(m, t.rows).rowView(reads)
  }
}

const QUALIFIED = new Map<string, Map<string, string>>()

/** `kind.field`, the same string each time (a lookup by it hashes it once) */
function qualified(kind: string, field: string): string {
  let m = QUALIFIED.get(kind)
  if (m === undefined) QUALIFIED.set(kind, (m = new Map()))
  let q = m.get(field)
  if (q === undefined) m.set(field, (q = `${kind}.${field}`))
  return q
}

function head<T>(a: ArrayLike<T>, n: number): ArrayLike<T> {
  if (n >= a.length) return a
  if (ArrayBuffer.isView(a)) return (a as unknown as Uint32Array).subarray(0, n) as unknown as ArrayLike<T>
  const out = new Array<T>(n)
  for (let i = 0; i < n; i++) out[i] = a[i]
  return out
}

/** The first `end` blocks of a disk chunk (row ranges are prefixes too, so columns are prefixes). */
class PrefixChunk implements Chunk {
  readonly firstBlock: number
  readonly lastBlock: number
  readonly blockCount: number
  private readonly tables = new Map<string, Table>()

  constructor(
    private readonly base: DiskChunk,
    end: number,
  ) {
    if (end <= 0) throw new Error('empty prefix chunk')
    this.blockCount = end
    this.firstBlock = base.firstBlock
    this.lastBlock = base.header('number')[end - 1] as number
  }

  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]> {
    return head(this.base.header(field), this.blockCount)
  }

  table(kind: string): Table {
    let t = this.tables.get(kind)
    if (!t) {
      const base = this.base.table(kind)
      const end = this.blockCount
      const offsets = head(base.blockOffsets, end + 1)
      const rows = offsets[end]
      const cache = new Map<string, ArrayLike<unknown>>()
      // match / rowView: the base table's, over its rows (callers only read rows below `rows`)
      t = {
        rowCount: rows,
        blockOffsets: offsets,
        column(field: string) {
          let c = cache.get(field)
          if (!c) cache.set(field, (c = head(base.column(field), rows)))
          return c
        },
        match: (field: string, op: MatchOp, r: Int32Array, n: number) => base.match!(field, op, r, n),
        candidates: (field: string, op: MatchOp, lo: number, hi: number) => base.candidates!(field, op, lo, hi),
        rowView: (field: string, reads: number) => base.rowView!(field, reads),
        rowTokens: (field: string, reads: number, bigintsAsNumbers?: boolean) =>
          base.rowTokens!(field, reads, bigintsAsNumbers),
        tokens: (field: string, bigintsAsNumbers: boolean) => base.tokens!(field, bigintsAsNumbers),
      }
      this.tables.set(kind, t)
    }
    return t
  }

  mayContain(kind: string, field: string, values: ReadonlySet<string>): boolean {
    return this.base.mayContain(kind, field, values)
  }
}
