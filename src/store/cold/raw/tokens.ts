/**
 * Rows written as JSON from a column's stored tokens (`RawColumn.tokens` / `rowTokens`): the
 * stored form handed to the compiled writers whole (`storedTokens`), or a few rows' JSON bytes
 * built from the tokens they hold and kept with the column, packed once a render is done
 * (`KeptTokens`, `buildRowBytes`).
 */
import { codesOf, view32 } from '../encode/decode.ts'
import type { JsonTokens, LineBuf, TokenForm } from '../../../util/json-bytes.ts'
import type { RawColumn } from './column.ts'

export const NULL = Buffer.from('null')
export const TRUE = Buffer.from('true')
export const FALSE = Buffer.from('false')

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
 * Rows rendered straight from the stored form: 64-bit integers, instruction addresses, and JSON
 * tokens of string dictionaries, plain strings and lists of strings with the format 2 index
 * parts; null for other columns. The parts are read whole.
 */
export function storedTokens(col: RawColumn, bigintsAsNumbers: boolean): JsonTokens | null {
  const P = col.parts
  const e = col.e
  if (e === 'u64' || e === 'i64') return int64Tokens(col, bigintsAsNumbers)
  if (e === 'addr') {
    // instruction addresses: lists of small integers
    const el = codesOf(P.part(1), col.width)
    const off = view32(P.part(0))
    return { ...listTokens(off, (k, out) => out.uint(el[k])), form: { kind: 'addr', el, off } }
  }
  if (!col.x) return null
  const text = P.part(col.pText)
  const tv = new DataView(text.buffer, text.byteOffset, text.byteLength)
  const toff = view32(P.part(col.pToff))
  switch (e) {
    case 'plain':
      return { form: { kind: 'plain', text, tv, toff }, write: (i, out) => out.copy(text, toff[i], toff[i + 1] - 1) }
    case 'dict': {
      const codes = codesOf(P.part(col.pCodes), col.width)
      const size = col.dictSize
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
      const codes = codesOf(P.part(col.pCodes), col.width)
      const off = view32(P.part(col.pOff))
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

/** from the stored 64-bit integers: digits without a BigInt below 2^53 (u64), 2^32 (i64) */
function int64Tokens(col: RawColumn, bigintsAsNumbers: boolean): JsonTokens {
  const P = col.parts
  const p = P.part(0)
  const w32 = view32(p)
  const n = col.n
  const unsigned = col.e === 'u64'
  const big = unsigned ? new BigUint64Array(p.buffer, p.byteOffset, n) : new BigInt64Array(p.buffer, p.byteOffset, n)
  const small = unsigned ? 0x200000 : 1
  const valid = col.v ? P.part(1) : null
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

/** row i's JSON bytes built from the tokens it holds (the column's parts read through `P`) */
export function buildRowBytes(col: RawColumn, i: number): Buffer {
  const P = col.parts
  const e = col.e
  const w = col.w
  const pair = col.pair
  if (e === 'addr') {
    // instruction addresses: a list of small integers
    P.u32Pair(0, i, pair)
    const a = pair[0]
    const z = pair[1]
    let t = '['
    for (let j = a; j < z; j++) t += (j > a ? ',' : '') + P.uw(1, j, w)
    return Buffer.from(t + ']', 'latin1')
  }
  // validity in part 1 when the column has nulls
  if (e === 'u32') return col.v && P.uw(1, i, 1) === 0 ? NULL : Buffer.from('' + P.u32(0, i), 'latin1')
  if (e === 'plain') return Buffer.from(col.tokenBytes(i))
  if (e === 'dict') {
    const c = P.uw(col.pCodes, i, w)
    return c === col.dictSize ? NULL : Buffer.from(col.tokenBytes(c))
  }
  const [a, z] = col.listRange(i)
  const codes = col.listCodes(a, z)
  const toks: Buffer[] = []
  let len = 2 + Math.max(0, codes.length - 1)
  for (let j = 0; j < codes.length; j++) {
    const t = col.tokenBytes(codes[j])
    toks.push(t)
    len += t.length
  }
  const b = Buffer.allocUnsafeSlow(len)
  let o = 0
  b[o++] = 0x5b
  for (let j = 0; j < toks.length; j++) {
    if (j > 0) b[o++] = 0x2c
    o += toks[j].copy(b, o)
  }
  b[o] = 0x5d
  return b
}

/**
 * Rows' JSON bytes packed in one buffer: row `rows[k]` (ascending) is bytes [offs[k], offs[k + 1])
 * of `bytes`. What `rowTokens` built and kept, once its rows are written: no object per row, and
 * a row is found by the position after the previous one (rows are written in ascending order)
 * or a binary search.
 */
export interface KeptRows {
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

export const NO_ROWS: KeptRows = {
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
export function packRows(packed: KeptRows, more: Map<number, Buffer>): KeptRows {
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
export function keptBytes(k: KeptRows): number {
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
export class KeptTokens implements JsonTokens {
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
