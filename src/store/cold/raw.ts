/**
 * Filters and row reads on a column's encoded parts (format 2 index parts, see encode.ts), without
 * decoding the whole column:
 *
 * - a dictionary value's code is found by binary search over the codes sorted by value, parsing
 *   only the ~log2(size) tokens it visits;
 * - `in` / `at` / `any` filters become a flag per code, then one loop over the candidates' codes;
 * - `prefix` filters compare the bytes of a candidate's JSON token (`"0x…"`) with the prefixes;
 * - `rowView` builds a row's value when it is read (plain: one JSON.parse of its token).
 *
 * The parts come from a `Parts`: either all in memory (the blob was just read whole, e.g. to check
 * its crc32), or read on demand from the immutable file once its crc32 was checked: a whole part
 * when a loop touches many rows, a few bytes (positioned reads) for a few rows and for the binary
 * search of a dictionary.
 */
import { closeSync, openSync, readSync } from 'node:fs'
import { crc32 } from 'node:zlib'
import type { MatchOp } from '../chunk.ts'
import type { Enc } from './encode.ts'
import { codesOf, view32 } from './encode.ts'
import { CorruptChunkError, CRC_PAGE } from './chunk-file.ts'
import { aheadOf, inflateFrame, type Frames } from './frames.ts'
import { align8, pageOf } from './offsets.ts'
import type { JsonTokens, LineBuf, TokenForm } from '../../util/json-bytes.ts'

const NULL = Buffer.from('null')
const TRUE = Buffer.from('true')
const FALSE = Buffer.from('false')

/** a list column as JSON arrays: row i holds elements [off[i], off[i + 1]), each written by `element` */
function listTokens(off: Uint32Array, element: (k: number, out: LineBuf) => void): JsonTokens {
  return {
    write: (i, out) => {
      const a = off[i]
      const e = off[i + 1]
      out.byte(0x5b)
      for (let k = a; k < e; k++) {
        if (k > a) out.byte(0x2c)
        element(k, out)
      }
      out.byte(0x5d)
    },
  }
}

/**
 * n rows read by index (`view[i]`, `length`), each built by `make(i)` on its first read and kept
 * in a Map (`memo`: this view's own, or one kept with the column): costs nothing up front (no
 * n-element backing array), for reading a few rows.
 */
function sparseRows<T>(n: number, make: (i: number) => T, memo = new Map<number, T>()): ArrayLike<T> {
  return new Proxy([] as T[], {
    get(target, key, receiver) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57) {
          const i = +key
          if (i < n) {
            let v = memo.get(i)
            if (v === undefined && !memo.has(i)) memo.set(i, (v = make(i)))
            return v
          }
          return undefined
        }
        if (key === 'length') return n
      }
      return Reflect.get(target, key, receiver)
    },
  })
}

function buf(p: Uint8Array): Buffer {
  return Buffer.from(p.buffer, p.byteOffset, p.byteLength)
}

/** Prefix values usable as raw bytes: printable ASCII without `"` and `\` (JSON writes them as is). */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false
  }
  return true
}

type Groups = readonly { readonly length: number; readonly values: ReadonlySet<string> }[]

/** A compiled prefix test over JSON string tokens in a buffer. */
function prefixTest(groups: Groups): ((b: Buffer, a: number, e: number) => boolean) | null {
  for (const g of groups) for (const v of g.values) if (v.length !== g.length || !plainAscii(v)) return null
  const single = groups.map((g) =>
    g.values.size === 1 ? Buffer.from(g.values.values().next().value as string, 'latin1') : null,
  )
  const ng = groups.length
  return (b, a, e) => {
    // token a..e is `"…"` for a string (`null` otherwise: no match)
    if (b[a] !== 0x22) return false
    const start = a + 1
    const bytes = e - 1 - start
    for (let g = 0; g < ng; g++) {
      const len = groups[g].length
      // fewer bytes than characters wanted: fewer characters too (and later groups are longer)
      if (bytes < len) return false
      const one = single[g]
      if (one !== null) {
        if (b.compare(one, 0, len, start, start + len) === 0) return true
      } else if (groups[g].values.has(b.toString('latin1', start, start + len))) return true
    }
    return false
  }
}

/** open file descriptors of chunk files for positioned reads (a few, the least recently used closed) */
const FDS = new Map<string, number>()
const MAX_FDS = 512

function fdOf(path: string): number {
  let fd = FDS.get(path)
  if (fd !== undefined) {
    FDS.delete(path)
    FDS.set(path, fd)
    return fd
  }
  fd = openSync(path, 'r')
  FDS.set(path, fd)
  if (FDS.size > MAX_FDS) {
    const [oldPath, oldFd] = FDS.entries().next().value as [string, number]
    FDS.delete(oldPath)
    closeSync(oldFd)
  }
  return fd
}

/** close the pooled descriptors of files under `dir` (a closing store) */
export function closeFds(dir: string): void {
  for (const [path, fd] of FDS) {
    if (path.startsWith(dir)) {
      FDS.delete(path)
      closeSync(fd)
    }
  }
}

/**
 * Counters for tests and benches: reads of a column's stored frames (format 4) from its file, and
 * their bytes (frames all decompressed ahead are not read: see `Parts.readFramed`)
 */
export const storedReads = { reads: 0, bytes: 0 }

const NO_BYTES = Buffer.alloc(0)

function preadExact(path: string, pos: number, len: number): Buffer {
  // a fresh buffer at offset 0 (8-aligned views), not zero-filled: every byte is read
  const b = Buffer.allocUnsafeSlow(len)
  const fd = fdOf(path)
  let done = 0
  while (done < len) {
    const k = readSync(fd, b, done, len - done, pos + done)
    if (k === 0) throw new Error(`${path}: unexpected end of file`)
    done += k
  }
  return b
}

/** where a blob's bytes are read on demand */
export interface BlobSource {
  path: string
  /** file offset and stored length of the blob */
  start: number
  length: number
  /** crc32 of each CRC_PAGE bytes of the blob (format 3), or null when it was verified whole already */
  crcs: readonly number[] | null
  /** a flag per page: checked already (kept by the chunk across cache evictions; the file is immutable) */
  checked: Uint8Array | null
  /** format 4: the blob is compressed frames; parts sit at `frames.voff` in a virtual blob */
  frames?: Frames
}

/**
 * Pages read in transient mode (not kept with their column) go through this small store-wide
 * pool, first in first out, so that the rows of one chunk that share pages read each page once
 * (SCRATCH_PAGES × 16 KiB = 8 MiB at most, whatever the number of columns).
 */
const SCRATCH = new Map<number, Buffer>()
const SCRATCH_PAGES = 512
let nextPartsId = 1

function scratchSet(key: number, pg: Buffer): void {
  SCRATCH.set(key, pg)
  if (SCRATCH.size > SCRATCH_PAGES) SCRATCH.delete(SCRATCH.keys().next().value as number)
}

/** pages of on-demand reads = the checksummed pages of format 3 (parts are 8-aligned in the blob: u16/u32 elements never straddle pages) */
const PAGE = 16384
if (PAGE !== CRC_PAGE) throw new Error('raw.ts: PAGE must equal CRC_PAGE')

/**
 * The parts of one blob: in memory, or read on demand from its (immutable) file, either whole or by
 * 16 KiB pages of the blob, each checked against its crc32 (format 3) when read and kept, so that
 * a repeated query touches memory only. Every byte held is reported through `onGrow` (the store's
 * cache accounts for it and evicts the least recently used columns to stay within its budget).
 */
export class Parts {
  private readonly full: (Uint8Array | undefined)[]
  private readonly v32: (Uint32Array | undefined)[] = []
  /** blob offset of each part (format 4: in the virtual blob of frames.ts) */
  private readonly offs: number[] = []
  private readonly pages = new Map<number, Buffer>()
  /** parts read whole for one use only (`lend`), with their bytes: dropped by `unlend` */
  private readonly lent = new Map<number, number>()
  private held = 0
  /** called with the bytes added to memory */
  onGrow: ((delta: number) => void) | null = null

  constructor(
    /** byte length of each part */
    readonly lens: readonly number[],
    full: readonly Uint8Array[] | null,
    private readonly src: BlobSource | null = null,
  ) {
    this.full = full ? [...full] : new Array(lens.length)
    if (src?.frames) this.offs = src.frames.voff
    else {
      let o = 0
      for (const len of lens) {
        this.offs.push(o)
        o += align8(len)
      }
    }
    if (full) for (const p of full) this.held += p.byteLength
  }

  /** bytes held in memory (whole parts and pages) */
  get bytes(): number {
    return this.held
  }

  /** account for memory held on behalf of this blob (e.g. values parsed from it) */
  account(delta: number): void {
    this.held += delta
    this.onGrow?.(delta)
  }

  /**
   * format 4: virtual pages k..e-1 (inside one part) from the frames holding them, decompressed
   * (each frame's crc32 checked); the other pages of those frames go to the SCRATCH pool
   */
  private readFramed(k: number, e: number, keep: boolean): Buffer {
    const src = this.src!
    const f = src.frames!
    const v0 = k * PAGE
    let i = 0
    while (i + 1 < this.offs.length && this.offs[i + 1] <= v0) i++
    const p = f.parts[i]
    const len = this.lens[i]
    const rel0 = v0 - this.offs[i]
    const rel1 = Math.min(len, e * PAGE - this.offs[i])
    const size = 2 ** p.log
    const j0 = Math.floor(rel0 / size)
    const j1 = Math.floor((rel1 - 1) / size)
    const from = { path: src.path, blob: src.start }
    // the frames decompressed ahead: when they are all of them, the stored bytes are not read
    const ahead: (Buffer | null)[] = []
    let need = false
    for (let j = j0; j <= j1; j++) {
      const r = aheadOf(f, i, j, from) ?? null
      if (r === null) need = true
      ahead.push(r)
    }
    const a = p.at[j0]
    const z = need ? preadExact(src.path, src.start + a, p.at[j1] + Math.abs(p.len[j1]) - a) : NO_BYTES
    if (need) {
      storedReads.reads++
      storedReads.bytes += z.length
    }
    const base = j0 * size
    const out = Buffer.allocUnsafeSlow(Math.min(len, (j1 + 1) * size) - base)
    const fail = (why: string) => new CorruptChunkError(`${src.path}: column at offset ${src.start}: ${why}`)
    for (let j = j0; j <= j1; j++) {
      const s = p.at[j] - a
      const pos = j * size - base
      const zj = need ? z.subarray(s, s + Math.abs(p.len[j])) : NO_BYTES
      inflateFrame(f, i, j, zj, Math.min(len - j * size, size), out, pos, fail, from, ahead[j - j0])
    }
    // the frames' other pages: kept aside for neighbouring reads
    const first = pageOf(this.offs[i] + base, PAGE)
    for (let q = first, o = 0; o < out.length; q++, o += PAGE) {
      if (q >= k && q < e) continue
      const key = this.id * 1048576 + q
      if (!SCRATCH.has(key) && !this.pages.has(q))
        scratchSet(key, Buffer.from(out.subarray(o, Math.min(out.length, o + PAGE))))
    }
    const s = rel0 - base
    const run = s === 0 && rel1 - rel0 === out.length ? out : Buffer.from(out.subarray(s, rel1 - base))
    if (keep) this.account(run.byteLength)
    return run
  }

  /** blob pages k..e-1 read in one piece, each checked */
  private readPages(k: number, e: number, keep = true): Buffer {
    const src = this.src!
    if (src.frames) return this.readFramed(k, e, keep)
    const a = k * PAGE
    const run = preadExact(src.path, src.start + a, Math.min(src.length, e * PAGE) - a)
    if (src.crcs !== null) {
      const checked = src.checked
      for (let q = k; q < e; q++) {
        if (checked !== null && checked[q] === 1) continue
        const o = (q - k) * PAGE
        if (crc32(run.subarray(o, Math.min(run.length, o + PAGE))) !== src.crcs[q])
          throw new CorruptChunkError(`${src.path}: column checksum mismatch at offset ${src.start + q * PAGE}`)
        if (checked !== null) checked[q] = 1
      }
    }
    if (keep) this.account(run.byteLength)
    return run
  }

  part(i: number): Uint8Array {
    let p = this.full[i]
    // lent until now: kept from here on
    if (p !== undefined) this.lent.delete(i)
    else {
      const o = this.offs[i]
      const len = this.lens[i]
      if (len === 0) return (this.full[i] = new Uint8Array(0))
      const k0 = pageOf(o, PAGE)
      const k1 = pageOf(o + len - 1, PAGE)
      const run = this.readPages(k0, k1 + 1)
      for (let q = k0; q <= k1; q++) {
        if (!this.pages.has(q)) {
          const a = (q - k0) * PAGE
          this.pages.set(q, run.subarray(a, Math.min(run.length, a + PAGE)))
        }
      }
      // a fresh buffer at offset 0 and 8-aligned parts: aligned typed-array views
      p = this.full[i] = new Uint8Array(run.buffer, run.byteOffset + o - k0 * PAGE, len)
    }
    return p
  }

  /**
   * About `reads` values of part i are wanted: read it whole when that is cheaper than reading a
   * page per value (one read costs a few microseconds, about as much as copying ~8 KiB); returns
   * whether it is in memory. `lend`: read for one use only, dropped by `unlend` (unless a reader
   * asks for the part meanwhile).
   */
  prefer(i: number, reads: number, lend = false): boolean {
    if (this.full[i] === undefined && reads * 8192 >= this.lens[i]) {
      if (lend) this.lendPart(i)
      else this.part(i)
    }
    return this.full[i] !== undefined
  }

  /** part i read whole (accounted) for one use, without its pages (see `unlend`) */
  lendPart(i: number): void {
    if (this.full[i] !== undefined || this.lens[i] === 0) return
    const o = this.offs[i]
    const len = this.lens[i]
    const k0 = pageOf(o, PAGE)
    const run = this.readPages(k0, pageOf(o + len - 1, PAGE) + 1)
    this.full[i] = new Uint8Array(run.buffer, run.byteOffset + o - k0 * PAGE, len)
    this.lent.set(i, run.byteLength)
  }

  /** drop the parts lent and not asked for since (their bytes leave the cache's count) */
  unlend(): void {
    for (const [i, bytes] of this.lent) {
      this.full[i] = undefined
      this.v32[i] = undefined
      this.account(-bytes)
    }
    this.lent.clear()
  }

  /**
   * true while reading bytes that are not worth keeping (the random tokens of a dictionary's
   * binary search, the bytes of a row whose value is kept instead): missing pages are read and
   * checked, used, and not kept with the column, only in the small store-wide SCRATCH pool
   */
  transient = false
  private readonly id = nextPartsId++

  private transientPage(k: number): Buffer {
    const key = this.id * 1048576 + k
    let pg = SCRATCH.get(key)
    if (pg === undefined) {
      pg = this.readPages(k, k + 1, false)
      scratchSet(key, pg)
    }
    return pg
  }

  /** blob page k (read, with the missing pages after it up to `last`, when not held yet) */
  private page(k: number, last = k): Buffer {
    const pg = this.pages.get(k)
    if (pg !== undefined) return pg
    if (this.transient) return this.transientPage(k)
    const aside = SCRATCH.get(this.id * 1048576 + k)
    if (aside !== undefined) {
      // read already (a neighbour in the same frame): kept now
      this.pages.set(k, aside)
      this.account(aside.byteLength)
      return aside
    }
    let e = k + 1
    while (e <= last && !this.pages.has(e)) e++
    const run = this.readPages(k, e)
    for (let q = k; q < e; q++) {
      const o = (q - k) * PAGE
      this.pages.set(q, run.subarray(o, Math.min(run.length, o + PAGE)))
    }
    return this.pages.get(k)!
  }

  /** bytes [a, b) of part i as a Buffer (a view when they are in memory in one piece) */
  range(i: number, a: number, b: number): Buffer {
    const p = this.full[i]
    if (p !== undefined) return Buffer.from(p.buffer, p.byteOffset + a, b - a)
    if (b <= a) return Buffer.alloc(0)
    const o = this.offs[i]
    const k0 = pageOf(o + a, PAGE)
    const k1 = pageOf(o + b - 1, PAGE)
    if (k0 === k1) return this.page(k0).subarray((o + a) % PAGE, ((o + b - 1) % PAGE) + 1)
    const out = Buffer.allocUnsafe(b - a)
    let w = 0
    for (let k = k0; k <= k1; k++) {
      const pg = this.page(k, k1)
      const s = k === k0 ? (o + a) % PAGE : 0
      const e = k === k1 ? ((o + b - 1) % PAGE) + 1 : pg.length
      pg.copy(out, w, s, e)
      w += e - s
    }
    return out
  }

  u32(i: number, k: number): number {
    let v = this.v32[i]
    if (v === undefined) {
      const p = this.full[i]
      if (p === undefined) {
        const pos = this.offs[i] + k * 4
        return this.page(pageOf(pos, PAGE)).readUInt32LE(pos % PAGE)
      }
      v = this.v32[i] = view32(p)
    }
    return v[k]
  }

  /** two consecutive u32 (k, k + 1) */
  u32Pair(i: number, k: number, out: Uint32Array): void {
    out[0] = this.u32(i, k)
    out[1] = this.u32(i, k + 1)
  }

  /** element k of a part of w-byte unsigned elements */
  uw(i: number, k: number, w: number): number {
    const p = this.full[i]
    if (p !== undefined) {
      if (w === 1) return p[k]
      if (w === 2) return p[2 * k] | (p[2 * k + 1] << 8)
      return this.u32(i, k)
    }
    const pos = this.offs[i] + k * w
    const pg = this.page(pageOf(pos, PAGE))
    const o = pos % PAGE
    return w === 1 ? pg[o] : w === 2 ? pg.readUInt16LE(o) : pg.readUInt32LE(o)
  }
}

/**
 * Rows' JSON bytes packed in one buffer: row `rows[k]` (ascending) is bytes [offs[k], offs[k + 1])
 * of `bytes`. What `rowTokens` built and kept, once its rows are written: no object per row, and
 * a row is found by the position after the previous one (rows are written in ascending order)
 * or a binary search.
 */
interface KeptRows {
  rows: Int32Array
  offs: Uint32Array
  bytes: Buffer
  view: DataView
  /** row k as a Buffer of its own when it is BIG_ROW bytes or more (copied whole: no view made per copy) */
  big: (Buffer | undefined)[]
  /** these rows as the compiled writers take them, made on the first use (not one per column and chunk a query reads) */
  form?: TokenForm
}

/** rows from this many bytes are copied by `TypedArray.set` of a view kept (`KeptRows.big`) */
const BIG_ROW = 160
/** what a kept view costs, about */
const VIEW_BYTES = 96

const NO_ROWS: KeptRows = {
  rows: new Int32Array(0),
  offs: new Uint32Array(1),
  bytes: Buffer.alloc(0),
  view: new DataView(new ArrayBuffer(0)),
  big: [],
}

/** position of row i in `rows` (ascending), -1 when absent */
function findRow(rows: Int32Array, i: number): number {
  let lo = 0
  let hi = rows.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (rows[mid] < i) lo = mid + 1
    else hi = mid
  }
  return lo < rows.length && rows[lo] === i ? lo : -1
}

/** `packed` and the rows of `more` (none of them in `packed`), packed together */
function packRows(packed: KeptRows, more: Map<number, Buffer>): KeptRows {
  // (a row packed meanwhile by another use of the column is built twice: packed once)
  const add = [...more.keys()].filter((i) => findRow(packed.rows, i) < 0).sort((a, b) => a - b)
  const n = packed.rows.length + add.length
  const rows = new Int32Array(n)
  const offs = new Uint32Array(n + 1)
  let size = packed.bytes.length
  for (const i of add) size += more.get(i)!.length
  const bytes = Buffer.allocUnsafeSlow(size)
  let a = 0
  let b = 0
  let o = 0
  for (let k = 0; k < n; k++) {
    if (b >= add.length || (a < packed.rows.length && packed.rows[a] < add[b])) {
      rows[k] = packed.rows[a]
      o += packed.bytes.copy(bytes, o, packed.offs[a], packed.offs[a + 1])
      a++
    } else {
      rows[k] = add[b]
      o += more.get(add[b])!.copy(bytes, o)
      b++
    }
    offs[k + 1] = o
  }
  const big = new Array<Buffer | undefined>(n)
  for (let k = 0; k < n; k++)
    big[k] = offs[k + 1] - offs[k] >= BIG_ROW ? bytes.subarray(offs[k], offs[k + 1]) : undefined
  return { rows, offs, bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.length), big }
}

/** the memory `k` holds, about */
function keptBytes(k: KeptRows): number {
  let views = 0
  for (const b of k.big) if (b !== undefined) views++
  return k.bytes.length + 8 * k.rows.length + VIEW_BYTES * views
}

/**
 * bytes [a, e) of `src` (`view`: a DataView of it) written to `out`, 8 bytes a step where `src`
 * has them; `whole`: the same bytes as a Buffer of their own (a big row)
 */
function copyRow(src: Buffer, view: DataView, a: number, e: number, whole: Buffer | undefined, out: LineBuf): void {
  const n = e - a
  if (out.pos + n + 8 > out.buf.length) out.ensure(n + 8)
  const d = out.buf
  let p = out.pos
  if (whole !== undefined) d.set(whole, p)
  else if (e + 7 <= src.length) {
    // up to 7 bytes past the row are copied too: room was made, and the next write overwrites them
    // (8 bytes through a float64, exact for UTF-8 JSON: see the compiled writers' `copy` in
    // src/query/render.ts)
    const dv = out.dv
    for (let k = a, q = p; k < e; k += 8, q += 8) {
      dv.setFloat64(q, view.getFloat64(k, true), true)
    }
  } else for (let k = a; k < e; k++) d[p++] = src[k]
  out.pos = out.pos + n
}

/**
 * A few rows of a column in JSON form (`RawColumn.rowTokens`): rows built by earlier uses are
 * copied from their packed bytes (`form`, which the compiled writers copy inline), the others
 * built on first read and kept.
 */
class KeptTokens implements JsonTokens {
  readonly form: TokenForm
  /** the next packed row (rows are mostly written in ascending order) */
  private next = 0
  private fetched = false

  constructor(
    private readonly col: RawColumn,
    private readonly reads: number,
    private readonly packed: KeptRows,
  ) {
    const { rows, offs, bytes, view, big } = packed
    this.form = packed.form ??= { kind: 'kept', rows, offs, bytes, view, big }
  }

  write(i: number, out: LineBuf): void {
    const { rows, offs, bytes, view, big } = this.packed
    let k = this.next
    if (k >= rows.length || rows[k] !== i) k = findRow(rows, i)
    if (k >= 0) {
      this.next = k + 1
      copyRow(bytes, view, offs[k], offs[k + 1], big[k], out)
      return
    }
    let b = this.col.builtRow(i)
    if (b === undefined) {
      b = this.col.buildRow(i, this.reads, !this.fetched)
      this.fetched = true
    }
    out.copy(b, 0, b.length)
  }

  done(): void {
    this.col.packKept()
  }
}

export class RawColumn {
  /** dictionary values parsed so far, by code */
  private readonly memo = new Map<number, unknown>()
  /** codes looked up so far, by value (-1 = absent) */
  private readonly found = new Map<string, number>()
  /** rows built by row views so far (plain, dict, list, addr), kept instead of their pages */
  private readonly built = new Map<number, unknown>()
  /** rows' JSON bytes built by `rowTokens` since the last `done`, kept instead of their pages */
  private readonly builtBytes = new Map<number, Buffer>()
  /** the rows built by earlier uses, packed (`KeptRows`) */
  private keptRows: KeptRows = NO_ROWS
  private readonly pair = new Uint32Array(2)
  /** part indexes: text, codes, sorted codes, token offsets, row offsets (-1 = none) */
  private readonly pText: number
  private readonly pCodes: number
  private readonly pSorted: number
  private readonly pToff: number
  private readonly pOff: number
  readonly dictSize: number

  constructor(
    readonly e: Enc,
    readonly n: number,
    readonly parts: Parts,
    private readonly width: number | undefined,
    readonly x: boolean,
    readonly v: boolean,
    /** format 4: the dictionary is in value order (no sorted codes part) */
    private readonly sortedDict = false,
    /** format 4: [first code, value] of each text frame of a value-ordered dictionary */
    private readonly fences: readonly [number, string][] | null = null,
  ) {
    const ix =
      x && e === 'dict'
        ? [0, 1, 2, 3, -1]
        : x && e === 'list'
          ? [1, 2, 3, 4, 0]
          : x && e === 'plain'
            ? [0, -1, -1, 1, -1]
            : [-1, -1, -1, -1, -1]
    ;[this.pText, this.pCodes, this.pSorted, this.pToff, this.pOff] = ix
    // token offsets: one per dictionary value + the end
    this.dictSize = this.pSorted >= 0 ? Math.floor(parts.lens[this.pToff] / 4) - 1 : 0
  }

  private get w(): number {
    return this.width ?? 4
  }

  /** the value of dictionary code c (dict, list) or of row c (plain) */
  private token(c: number): unknown {
    return JSON.parse(this.tokenBytes(c).toString('utf8'))
  }

  private dictValue(c: number): unknown {
    let v = this.memo.get(c)
    if (v === undefined) {
      this.memo.set(c, (v = this.token(c)))
      // a Map entry and a one-byte string: roughly
      this.parts.account(64 + (typeof v === 'string' ? v.length : 64))
    }
    return v
  }

  /** code of a dictionary value, -1 when absent */
  lookup(value: string): number {
    let c = this.found.get(value)
    if (c === undefined) {
      this.parts.transient = true
      try {
        c = this.search(value)
      } finally {
        this.parts.transient = false
      }
      this.found.set(value, c)
      this.parts.account(64 + value.length)
    }
    return c
  }

  /** binary search over the codes sorted by value */
  private search(value: string): number {
    let lo = 0
    let hi = this.dictSize
    const fx = this.fences
    if (fx !== null && fx.length > 0) {
      // the last fence at or below the value: its frame's codes only
      let a = 0
      let b = fx.length
      while (a < b) {
        const m = (a + b) >>> 1
        if (fx[m][1] <= value) a = m + 1
        else b = m
      }
      if (a === 0) return -1
      if (fx[a - 1][1] === value) return fx[a - 1][0]
      lo = fx[a - 1][0]
      if (a < fx.length) hi = fx[a][0]
    }
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const c = this.sortedDict ? mid : this.parts.u32(this.pSorted, mid)
      const s = this.dictValue(c) as string
      if (s === value) return c
      if (s < value) lo = mid + 1
      else hi = mid
    }
    return -1
  }

  /** a flag per code (index dictSize = null) for the values of a set; null when none is present */
  private flags(values: ReadonlySet<string | null>): Uint8Array | null {
    const codes = this.codesIn(values)
    if (codes.length === 0) return null
    const f = new Uint8Array(this.dictSize + 1)
    for (const c of codes) f[c] = 1
    return f
  }

  /** the codes of the values present (dictSize = null), ascending, each once */
  private codesIn(values: ReadonlySet<string | null>): number[] {
    // a Set: filters may list up to 100,000 values
    const found = new Set<number>()
    for (const v of values) {
      const c = v === null ? this.dictSize : typeof v === 'string' ? this.lookup(v) : -1
      if (c >= 0) found.add(c)
    }
    return Array.from(found).sort((a, b) => a - b)
  }

  /** the JSON token of row r (plain) or code r (dict) as [buffer, start, end) */
  private tok(r: number, dense: boolean): [Buffer, number, number] {
    const P = this.parts
    if (dense) {
      const off = view32(P.part(this.pToff))
      const t = P.part(this.pText)
      return [Buffer.from(t.buffer, t.byteOffset, t.byteLength), off[r], off[r + 1] - 1]
    }
    P.u32Pair(this.pToff, r, this.pair)
    const b = P.range(this.pText, this.pair[0], this.pair[1] - 1)
    return [b, 0, b.length]
  }

  match(op: MatchOp, rows: Int32Array, count: number): number {
    if ('bool' in op) {
      // one byte per row: 0, 1, 2 = null
      if (this.e !== 'bool') return -1
      const want = op.bool ? 1 : 0
      const P = this.parts
      let k = 0
      P.prefer(0, count)
      for (let j = 0; j < count; j++) {
        const r = rows[j]
        if (P.uw(0, r, 1) === want) rows[k++] = r
      }
      return k
    }
    if (!this.x) return -1
    let n = count
    const P = this.parts
    let k = 0
    if ('in' in op) {
      if (this.e === 'dict') {
        const f = this.flags(op.in)
        if (!f) return 0
        if (P.prefer(this.pCodes, n)) {
          const codes = codesOf(P.part(this.pCodes), this.width)
          for (let j = 0; j < n; j++) {
            const r = rows[j]
            if (f[codes[r]] === 1) rows[k++] = r
          }
        } else {
          for (let j = 0; j < n; j++) {
            const r = rows[j]
            if (f[P.uw(this.pCodes, r, this.w)] === 1) rows[k++] = r
          }
        }
        return k
      }
      if (this.e === 'plain') {
        const targets = new Map<number, Buffer[]>()
        for (const v of op.in) {
          const t = Buffer.from(JSON.stringify(v), 'utf8')
          const l = targets.get(t.length)
          if (l) l.push(t)
          else targets.set(t.length, [t])
        }
        const dense = P.prefer(this.pToff, n) && P.prefer(this.pText, n)
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const [b, a, e] = this.tok(r, dense)
          const l = targets.get(e - a)
          if (l === undefined) continue
          for (let i = 0; i < l.length; i++) {
            if (b.compare(l[i], 0, e - a, a, e) === 0) {
              rows[k++] = r
              break
            }
          }
        }
        return k
      }
      return -1
    }
    if ('prefix' in op) {
      const test = prefixTest(op.prefix)
      if (!test) return -1
      if (this.e === 'plain') {
        const dense = P.prefer(this.pToff, n) && P.prefer(this.pText, n)
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const [b, a, e] = this.tok(r, dense)
          if (test(b, a, e)) rows[k++] = r
        }
        return k
      }
      if (this.e === 'dict') {
        // 0 = not yet tested, 1 = match, 2 = no match (null code: no match)
        const size = this.dictSize
        const memo = new Uint8Array(size + 1)
        memo[size] = 2
        const w = this.w
        P.prefer(this.pCodes, n)
        const dense = P.prefer(this.pToff, n) && P.prefer(this.pText, n)
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const c = P.uw(this.pCodes, r, w)
          let m = memo[c]
          if (m === 0) {
            const [b, a, e] = this.tok(c, dense)
            m = memo[c] = test(b, a, e) ? 1 : 2
          }
          if (m === 1) rows[k++] = r
        }
        return k
      }
      return -1
    }
    if (this.e !== 'list') return -1
    const codes = this.codesIn('at' in op ? op.values : op.any)
    if (codes.length === 0) return 0
    const w = this.w
    const pair = this.pair
    if (P.lens.length >= 7 && n > 0) {
      // postings: only the rows holding one of the values; format 3 postings also give the
      // position, which answers `at` without reading the lists
      const positions = P.lens.length === 8
      const hits = this.postingRows(codes, positions && 'at' in op ? op.at : -1)
      let h = 0
      const nh = hits.length
      for (let j = 0; j < n && h < nh; j++) {
        const r = rows[j]
        while (h < nh && hits[h] < r) h++
        if (h < nh && hits[h] === r) rows[k++] = r
      }
      if (!('at' in op) || positions || k === 0) return k
      n = k
      k = 0
    }
    const f = new Uint8Array(this.dictSize + 1)
    for (const c of codes) f[c] = 1
    const dense = P.prefer(this.pOff, n) && P.prefer(this.pCodes, n)
    if ('at' in op) {
      const idx = op.at
      if (dense) {
        const off = view32(P.part(this.pOff))
        const codes = codesOf(P.part(this.pCodes), this.width)
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const p = off[r] + idx
          if (p < off[r + 1] && f[codes[p]] === 1) rows[k++] = r
        }
      } else {
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          P.u32Pair(this.pOff, r, pair)
          const p = pair[0] + idx
          if (p < pair[1] && f[P.uw(this.pCodes, p, w)] === 1) rows[k++] = r
        }
      }
      return k
    }
    if (dense) {
      const off = view32(P.part(this.pOff))
      const codes = codesOf(P.part(this.pCodes), this.width)
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        const end = off[r + 1]
        for (let p = off[r]; p < end; p++) {
          if (f[codes[p]] === 1) {
            rows[k++] = r
            break
          }
        }
      }
    } else {
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        const [a, e] = this.listRange(r)
        const codes = this.listCodes(a, e)
        for (let p = 0; p < codes.length; p++) {
          if (f[codes[p]] === 1) {
            rows[k++] = r
            break
          }
        }
      }
    }
    return k
  }

  /** `Table.candidates`: the rows in [lo, hi) matching an `at` / `any` op, from the postings */
  candidates(op: MatchOp, lo: number, hi: number): Int32Array | null {
    const P = this.parts
    if (!this.x || this.e !== 'list' || P.lens.length < 7 || !('at' in op || 'any' in op)) return null
    const codes = this.codesIn('at' in op ? op.values : op.any)
    if (codes.length === 0) return new Int32Array(0)
    const positions = P.lens.length === 8
    const hits = this.postingRows(codes, positions && 'at' in op ? op.at : -1)
    let a = 0
    let b = hits.length
    while (a < b && hits[a] < lo) a++
    while (b > a && hits[b - 1] >= hi) b--
    const rows = Int32Array.from(hits.subarray(a, b))
    if ('at' in op && !positions) return rows.subarray(0, this.match(op, rows, rows.length))
    return rows
  }

  /**
   * the rows holding a flagged code (postings parts 5, 6), ascending, each once; with `at` >= 0
   * (format 3: positions in part 7) only the rows holding it at that position
   */
  private postingRows(codes: readonly number[], at: number): Uint32Array {
    const P = this.parts
    const lists: Uint32Array[] = []
    let total = 0
    for (const c of codes) {
      P.u32Pair(5, c, this.pair)
      const a = this.pair[0]
      const b = this.pair[1]
      if (b === a) continue
      const bytes = P.range(6, a * 4, b * 4)
      // positions of u16, or of u8 (format 4, short lists): the part's length tells
      const pw = P.lens[7] === 2 * (P.lens[6] / 4) ? 2 : 1
      const pos = at >= 0 ? P.range(7, a * pw, b * pw) : null
      const l = new Uint32Array(b - a)
      let m = 0
      // typed views where the bytes are aligned (in memory, the parts are 8-aligned)
      const rv = (bytes.byteOffset & 3) === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, l.length) : null
      let pv: Uint8Array | Uint16Array | null = null
      if (pos !== null)
        pv = pw === 1 ? pos : (pos.byteOffset & 1) === 0 ? new Uint16Array(pos.buffer, pos.byteOffset, l.length) : null
      if (pos === null && rv !== null) {
        // every row of the list: copied at once
        l.set(rv)
        m = l.length
      } else if (pos !== null && rv !== null && pv !== null) {
        for (let i = 0; i < l.length; i++) if (pv[i] === at) l[m++] = rv[i]
      } else {
        for (let i = 0; i < l.length; i++) {
          if (pos === null || (pw === 2 ? pos.readUInt16LE(2 * i) : pos[i]) === at) l[m++] = bytes.readUInt32LE(4 * i)
        }
      }
      if (m === 0) continue
      lists.push(l.subarray(0, m))
      total += m
    }
    let all: Uint32Array
    if (lists.length === 1) all = lists[0]
    else {
      all = new Uint32Array(total)
      let k = 0
      for (const l of lists) {
        all.set(l, k)
        k += l.length
      }
      all.sort()
    }
    // format 3 lists a row once per occurrence; several values can share rows
    let u = 0
    for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[u++] = all[i]
    return all.subarray(0, u)
  }

  private listRange(r: number): [number, number] {
    this.parts.u32Pair(this.pOff, r, this.pair)
    return [this.pair[0], this.pair[1]]
  }

  /** codes [a, e) of a list column */
  private listCodes(a: number, e: number): ArrayLike<number> {
    const w = this.w
    const b = this.parts.range(this.pCodes, a * w, e * w)
    const out = new Array<number>(e - a)
    for (let i = 0; i < e - a; i++) out[i] = w === 1 ? b[i] : w === 2 ? b.readUInt16LE(2 * i) : b.readUInt32LE(4 * i)
    return out
  }

  /**
   * rows built when read; null when the column has no cheaper form than its full decode. `reads`:
   * about how many rows will be read (parts are read whole when that is cheaper).
   */
  /** a row builder that reads through transient pages and accounts for the row it builds */
  private keep<T>(make: (i: number) => T): (i: number) => T {
    const P = this.parts
    return (i) => {
      const was = P.transient
      P.transient = true
      let v: T
      try {
        v = make(i)
      } finally {
        P.transient = was
      }
      // a Map entry + the value (strings: about a byte per character; arrays: a pointer per element)
      P.account(48 + (typeof v === 'string' ? v.length : Array.isArray(v) ? 16 + 8 * v.length : 16))
      return v
    }
  }

  /**
   * Rows rendered straight from the stored JSON tokens (string dictionaries, plain strings, lists
   * of strings with the format 2 index parts); null for other columns. The parts are read whole.
   */
  tokens(bigintsAsNumbers: boolean): JsonTokens | null {
    const P = this.parts
    if (this.e === 'u64' || this.e === 'i64') {
      // from the stored 64-bit integers: digits without a BigInt below 2^53 (u64), 2^32 (i64)
      const p = P.part(0)
      const w32 = view32(p)
      const n = this.n
      const big =
        this.e === 'u64' ? new BigUint64Array(p.buffer, p.byteOffset, n) : new BigInt64Array(p.buffer, p.byteOffset, n)
      const small = this.e === 'u64' ? 0x200000 : 1
      const valid = this.v ? P.part(1) : null
      const q = !bigintsAsNumbers
      return {
        form: { kind: 'int', w32, big, small, valid, quoted: q },
        write: (i, out) => {
          if (valid !== null && valid[i] === 0) return out.raw(NULL)
          if (q) out.byte(0x22)
          const hi = w32[2 * i + 1]
          if (hi < small) out.uint(hi * 4294967296 + w32[2 * i])
          else out.str('' + big[i])
          if (q) out.byte(0x22)
        },
      }
    }
    if (this.e === 'addr') {
      // instruction addresses: lists of small integers
      const el = codesOf(P.part(1), this.width)
      const off = view32(P.part(0))
      return { ...listTokens(off, (k, out) => out.uint(el[k])), form: { kind: 'addr', el, off } }
    }
    if (!this.x) return null
    const text = P.part(this.pText)
    const tv = new DataView(text.buffer, text.byteOffset, text.byteLength)
    const toff = view32(P.part(this.pToff))
    switch (this.e) {
      case 'plain':
        return { form: { kind: 'plain', text, tv, toff }, write: (i, out) => out.copy(text, toff[i], toff[i + 1] - 1) }
      case 'dict': {
        const codes = codesOf(P.part(this.pCodes), this.width)
        const size = this.dictSize
        return {
          form: { kind: 'dict', text, tv, toff, codes, size },
          write: (i, out) => {
            const c = codes[i]
            if (c === size) out.raw(NULL)
            else out.copy(text, toff[c], toff[c + 1] - 1)
          },
        }
      }
      case 'list': {
        const codes = codesOf(P.part(this.pCodes), this.width)
        const off = view32(P.part(this.pOff))
        const write = listTokens(off, (k, out) => {
          const c = codes[k]
          out.copy(text, toff[c], toff[c + 1] - 1)
        })
        return { ...write, form: { kind: 'list', text, tv, toff, codes, off } }
      }
      default:
        return null
    }
  }

  /**
   * Parts read whole when many rows are read; else rows are built from pages read and not kept,
   * and the built rows are kept with the column (a few rows' values are far smaller than the
   * pages holding them: a chunk's dictionary of accounts is megabytes, a row's list of accounts a
   * few dozen pointers), so a repeated query reads nothing (a list's dictionary is read whole when
   * the rows' elements are many times its pages).
   */
  private prefetch(reads: number, lend = false): void {
    const P = this.parts
    let wholeDict = false
    if (this.e === 'list' && this.x) {
      const tokens = (reads * P.lens[this.pCodes]) / this.w / Math.max(1, this.n)
      wholeDict = tokens >= 16 * Math.ceil(P.lens[this.pText] / PAGE)
    }
    for (let i = 0; i < P.lens.length; i++) {
      if (i === this.pSorted || (this.e === 'list' && i >= 5)) continue
      if (this.e === 'list' && (i === this.pText || i === this.pToff)) {
        if (wholeDict) {
          if (lend) P.lendPart(i)
          else P.part(i)
        }
        continue
      }
      P.prefer(i, reads, lend)
    }
  }

  /** the JSON token of dictionary code c (dict, list) or of row c (plain), as a view or a copy */
  private tokenBytes(c: number): Buffer {
    const P = this.parts
    P.u32Pair(this.pToff, c, this.pair)
    return P.range(this.pText, this.pair[0], this.pair[1] - 1)
  }

  /**
   * The rows of a few-rows read in their stored JSON form (`tokens` for a few rows): each row's
   * bytes are built on its first read from the tokens it holds and kept with the column (the
   * pages they came from are not: as `rowView`), so rendering it again is one copy, with no JS
   * string parsed, joined or encoded. Null for columns without JSON tokens (then `rowView`).
   */
  rowTokens(reads: number, bigintsAsNumbers = false): JsonTokens | null {
    const e = this.e
    const P = this.parts
    if (e === 'u64' || e === 'i64' || e === 'bool') {
      // a few bytes a row: when the rows are many enough that the column is read whole (see
      // `prefer`), its stored form, with no row built or kept (a row view reads through a Proxy
      // and keeps each value in a Map: most of a fee-payer query's render time went there)
      if (reads * 8192 < P.lens[0]) return null
      if (e !== 'bool') return this.tokens(bigintsAsNumbers)
      const b = P.part(0)
      return { write: (i, out) => out.raw(b[i] === 2 ? NULL : b[i] === 1 ? TRUE : FALSE) }
    }
    if (e !== 'addr' && e !== 'u32' && (!this.x || (e !== 'plain' && e !== 'dict' && e !== 'list'))) return null
    return new KeptTokens(this, reads, this.keptRows)
  }

  /**
   * Row i's JSON bytes from its stored tokens, kept until the use ends (`packKept`); the parts
   * worth reading whole are read on the first row a use builds (none when every row was built by
   * an earlier use), and only for that use: `packKept` drops them, the built rows stay
   */
  buildRow(i: number, reads: number, first: boolean): Buffer {
    const P = this.parts
    const e = this.e
    const w = this.w
    if (first) this.prefetch(reads, true)
    const was = P.transient
    P.transient = true
    let b: Buffer
    try {
      if (e === 'addr') {
        // instruction addresses: a list of small integers
        P.u32Pair(0, i, this.pair)
        const a = this.pair[0]
        const z = this.pair[1]
        let t = '['
        for (let j = a; j < z; j++) t += (j > a ? ',' : '') + P.uw(1, j, w)
        b = Buffer.from(t + ']', 'latin1')
      } else if (e === 'u32') {
        // validity in part 1 when the column has nulls
        b = this.v && P.uw(1, i, 1) === 0 ? NULL : Buffer.from('' + P.u32(0, i), 'latin1')
      } else if (e === 'plain') b = Buffer.from(this.tokenBytes(i))
      else if (e === 'dict') {
        const c = P.uw(this.pCodes, i, w)
        b = c === this.dictSize ? NULL : Buffer.from(this.tokenBytes(c))
      } else {
        const [a, z] = this.listRange(i)
        const codes = this.listCodes(a, z)
        const toks: Buffer[] = []
        let len = 2 + Math.max(0, codes.length - 1)
        for (let j = 0; j < codes.length; j++) {
          const t = this.tokenBytes(codes[j])
          toks.push(t)
          len += t.length
        }
        b = Buffer.allocUnsafeSlow(len)
        let o = 0
        b[o++] = 0x5b
        for (let j = 0; j < toks.length; j++) {
          if (j > 0) b[o++] = 0x2c
          o += toks[j].copy(b, o)
        }
        b[o] = 0x5d
      }
    } finally {
      P.transient = was
    }
    // a Map entry and the bytes
    P.account(64 + b.length)
    this.builtBytes.set(i, b)
    return b
  }

  /** a use of `rowTokens` ended: the parts it read whole are dropped, the rows it built packed */
  packKept(): void {
    const P = this.parts
    P.unlend()
    const kept = this.builtBytes
    if (kept.size === 0) return
    const was = this.keptRows
    const now = (this.keptRows = packRows(was, kept))
    // a Map entry and a Buffer per row before (as `buildRow` counted them), 8 bytes of index now
    // (and a view per big row)
    let before = keptBytes(was)
    for (const b of kept.values()) before += 64 + b.length
    P.account(keptBytes(now) - before)
    kept.clear()
  }

  /** row i's bytes built by the current use of `rowTokens`, if any */
  builtRow(i: number): Buffer | undefined {
    return this.builtBytes.get(i)
  }

  rowView(reads: number): ArrayLike<unknown> | null {
    const n = this.n
    const P = this.parts
    this.prefetch(reads)
    switch (this.e) {
      case 'plain':
        if (!this.x) return null
        return sparseRows(
          n,
          this.keep((i) => this.token(i)),
          this.built,
        )
      case 'dict': {
        if (!this.x) return null
        const size = this.dictSize
        const w = this.w
        return sparseRows(
          n,
          this.keep((i) => {
            const c = P.uw(this.pCodes, i, w)
            return c < size ? this.dictValue(c) : null
          }),
          this.built,
        )
      }
      case 'list': {
        if (!this.x) return null
        return sparseRows(
          n,
          this.keep((i) => {
            const [a, e] = this.listRange(i)
            const codes = this.listCodes(a, e)
            const out = new Array<string>(codes.length)
            for (let j = 0; j < codes.length; j++) out[j] = this.dictValue(codes[j]) as string
            return out
          }),
          this.built,
        )
      }
      case 'addr': {
        const w = this.w
        return sparseRows(
          n,
          this.keep((i) => {
            P.u32Pair(0, i, this.pair)
            const a = this.pair[0]
            const b = this.pair[1]
            const out = new Array<number>(b - a)
            for (let j = a; j < b; j++) out[j - a] = P.uw(1, j, w)
            return out
          }),
          this.built,
        )
      }
      case 'bool':
        return sparseRows(n, (i) => {
          const x = P.uw(0, i, 1)
          return x === 2 ? null : x === 1
        })
      case 'ver':
        return sparseRows(n, (i) => {
          const x = P.u32(0, i) | 0
          return x < 0 ? 'legacy' : x
        })
      case 'u32':
        // without nulls the decoded column is a view of the stored bytes: nothing cheaper
        if (!this.v) return null
        return sparseRows(n, (i) => (P.uw(1, i, 1) ? P.u32(0, i) : null))
      case 'u64':
      case 'i64': {
        if (!this.v) return null
        const signed = this.e === 'i64'
        return sparseRows(n, (i) => {
          if (!P.uw(1, i, 1)) return null
          const b = P.range(0, i * 8, i * 8 + 8)
          return signed ? b.readBigInt64LE(0) : b.readBigUInt64LE(0)
        })
      }
      default:
        return null
    }
  }
}
