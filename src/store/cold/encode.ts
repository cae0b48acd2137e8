/**
 * Column encodings of the cold store, chosen by catalogue type (src/catalogue.ts `FieldType`).
 *
 * A column is encoded into a few "parts" (byte arrays); the chunk file stores them back to back,
 * each padded to 8 bytes, so typed arrays can be views on the read buffer without copying.
 *
 * | enc     | types              | parts                                                   |
 * |---------|--------------------|---------------------------------------------------------|
 * | u32     | u32                | Uint32 values, [validity bytes when some null]          |
 * | u64/i64 | u64, i64           | BigUint64/BigInt64 values, [validity bytes]             |
 * | bool    | bool               | Uint8 (0, 1; 2 = null)                                  |
 * | ver     | version            | Int32 (-1 = "legacy")                                   |
 * | dict    | base58, string     | JSON array of distinct values, codes (w = 1/2/4 bytes); code = dict size → null; [x] sorted codes, token offsets |
 * | plain   | base58, string     | JSON array of all values, when smaller than dict (data, signatures, messages); [x] row token offsets |
 * | jdict   | json               | JSON array of distinct values (written in value order: readers only map codes through it), codes |
 * | jplain  | json               | JSON array of all values                                |
 * | addr    | address            | Uint32 offsets (n + 1), element values (w = 1/2/4 bytes) |
 * | list    | base58List         | Uint32 offsets (n + 1), JSON dictionary, codes (w); [x] sorted codes, token offsets, postings (u32 offsets per code, u32 rows; format 3: one entry per occurrence + u16 positions; format 4: u8 positions when every list has at most 256 elements) |
 *
 * [x] = index parts (format 2, `x: 1` in the column's footer entry): they let a filter or a row
 * read work on the encoded bytes (see `RawColumn`) instead of decoding the whole column.
 *
 * JSON text is used for string dictionaries because V8's JSON.parse of a string array is much
 * faster than decoding each string from UTF-8 separately.
 */
import type { FieldType } from '../../catalogue.ts'
import { IdList } from './id-list.ts'
import { sortOrder } from './sort-strings.ts'

export type Enc = 'u32' | 'u64' | 'i64' | 'bool' | 'ver' | 'dict' | 'plain' | 'jdict' | 'jplain' | 'addr' | 'list'

export interface Encoded {
  e: Enc
  parts: Uint8Array[]
  /** code / element width in bytes */
  w?: 1 | 2 | 4
  /** validity part present */
  v?: 1
  /**
   * format 2 index parts present: dict / list + codes sorted by value (u32) + dictionary token
   * byte offsets (u32); plain + row token byte offsets (u32)
   */
  x?: 1
  /** format 4: the dictionary is in value order (code order = value order; the sorted codes part is empty) */
  s?: 1
  /** the distinct values (dict, jdict: texts; list: elements) — reused for pruning filters */
  distinct?: string[]
  /** jdict, jplain: one value of each of `distinct` (the same order), for pruning filters */
  objects?: unknown[]
}

const U32_MAX = 0xffffffff
const U64_MAX = (1n << 64n) - 1n
const I64_MIN = -(1n << 63n)
const I64_MAX = (1n << 63n) - 1n

function u8(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
}

function utf8(s: string): Uint8Array {
  return Buffer.from(s, 'utf8')
}

export function widthFor(maxValue: number): 1 | 2 | 4 {
  return maxValue <= 0xff ? 1 : maxValue <= 0xffff ? 2 : 4
}

function packCodes(codes: Uint32Array, w: 1 | 2 | 4): Uint8Array {
  if (w === 4) return u8(codes)
  if (w === 2) return u8(Uint16Array.from(codes))
  return Uint8Array.from(codes)
}

function validity(values: ArrayLike<unknown>): Uint8Array | null {
  let any = false
  const v = new Uint8Array(values.length)
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null || values[i] === undefined) any = true
    else v[i] = 1
  }
  return any ? v : null
}

function fail(name: string, i: number, what: string, value: unknown): never {
  throw new Error(
    `cold store: column ${name} row ${i}: ${what}, got ${typeof value === 'bigint' ? `${value}n` : JSON.stringify(value)}`,
  )
}

/**
 * Strings: a dictionary when it is smaller than the plain list (values repeat: program ids,
 * accounts, mints, owners), else the plain list (high-cardinality: data, signatures, messages).
 */
function encodeStrings(
  name: string,
  values: ArrayLike<unknown>,
  json: boolean,
  withIndex: boolean,
  sortDicts: boolean,
  ascii = false,
): Encoded {
  if (!json) {
    const col = new StringColumn(withIndex, sortDicts, ascii)
    const bad = col.append(values)
    if (bad >= 0) fail(name, bad, 'expected a string', values[bad])
    return col.encode()
  }
  const n = values.length
  const index = new Map<string, number>()
  const dict: string[] = []
  const codes = new Uint32Array(n)
  const texts: (string | null)[] = new Array(n)
  /** the first value of each dictionary entry */
  const objects: unknown[] = []
  let nulls = 0
  let plainChars = 0
  let dictChars = 0
  // the previous row's value and code: a run of one value (a program id over an instruction's
  // logs, a mint over a transaction's balances) costs a comparison instead of a lookup
  let prev: unknown = null
  let prevCode = 0
  let prevKey = ''
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (x === null || x === undefined) {
      codes[i] = U32_MAX
      nulls++
      texts[i] = null
      continue
    }
    if (x === prev) {
      codes[i] = prevCode
      plainChars += prevKey.length + 3
      texts[i] = prevKey
      continue
    }
    const key = JSON.stringify(x)
    if (key === undefined) fail(name, i, 'expected a JSON value', x)
    texts[i] = key
    plainChars += key.length + 3
    let c = index.get(key)
    if (c === undefined) {
      c = dict.length
      index.set(key, c)
      dict.push(key)
      objects.push(x)
      dictChars += key.length + 3
    }
    codes[i] = c
    prev = x
    prevCode = c
    prevKey = key
  }
  if (nulls) for (let i = 0; i < n; i++) if (codes[i] === U32_MAX) codes[i] = dict.length
  const w = widthFor(dict.length)
  if (dictChars + n * w >= plainChars + nulls * 5) {
    const text = `[${texts.map((t) => (t === null ? 'null' : t)).join(',')}]`
    return { e: 'jplain', parts: [utf8(text)], distinct: dict, objects }
  }
  // in value order (codes are only ever mapped through it, so any order reads the same): like
  // values side by side compress better and faster (loaded addresses of one lookup table)
  const order = sortOrder(dict)
  const sorted = sortDict(dict, codes, order)
  const objs = Array.from(order, (k) => objects[k])
  return {
    e: 'jdict',
    parts: [utf8(`[${sorted.join(',')}]`), packCodes(codes, w)],
    w,
    distinct: sorted,
    objects: objs,
  }
}

/**
 * A column gathered as its values come, a block's worth at a time (chunk-file.ts `ChunkColumns`),
 * keeping them in a compact form (codes, typed arrays) instead of as JS values
 */
export interface ColumnBuilder {
  /**
   * append the next rows: -1, or the index in `values` of the first one of another type (the
   * column is then left with the rows it had: its values are taken back and given to encodeColumn,
   * which names the bad one)
   */
  append(values: ArrayLike<unknown>): number
  /** the values appended (null for null) */
  values(): unknown[]
  /** the column as `encodeColumn` encodes its values */
  encode(): Encoded
}

/** The builder of a column of this type (same bytes as `encodeColumn`), or null for a type kept as values. */
export function columnBuilder(type: FieldType, withIndex: boolean, sortDicts: boolean): ColumnBuilder | null {
  switch (type) {
    case 'safeAscii':
    case 'string':
      return new StringColumn(withIndex, sortDicts, type === 'safeAscii')
    case 'address':
      return new AddressColumn()
    case 'u64':
    case 'i64':
      return new BigColumn(type)
    default:
      return null
  }
}

/** An address column (lists of u32: instruction addresses) as offsets and elements. */
export class AddressColumn implements ColumnBuilder {
  /** row i's elements are flat[offsets[i]..offsets[i + 1]) */
  private readonly offsets = new IdList()
  /** the elements, as int32 bit patterns */
  private readonly flat = new IdList()
  private max = 0

  constructor() {
    this.offsets.push(0)
  }

  append(values: ArrayLike<unknown>): number {
    const { offsets, flat } = this
    const rows = offsets.length
    const start = flat.length
    let max = this.max
    for (let i = 0; i < values.length; i++) {
      const x = values[i]
      let ok = Array.isArray(x)
      if (ok)
        for (const e of x as unknown[]) {
          if (typeof e !== 'number' || !Number.isInteger(e) || e < 0 || e > U32_MAX) {
            ok = false
            break
          }
          if (e > max) max = e
          flat.push(e)
        }
      if (!ok) {
        offsets.length = rows
        flat.length = start
        return i
      }
      offsets.push(flat.length)
    }
    this.max = max
    return -1
  }

  values(): number[][] {
    const o = this.offsets.view()
    const f = u32(this.flat.view())
    const out: number[][] = []
    for (let i = 0; i + 1 < o.length; i++) out.push(Array.from(f.subarray(o[i], o[i + 1])))
    return out
  }

  encode(): Encoded {
    const w = widthFor(this.max)
    return { e: 'addr', parts: [u8(this.offsets.view()), packCodes(u32(this.flat.view()), w)], w }
  }
}

/** the same bytes as unsigned words */
function u32(a: Int32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length)
}

/** A u64 or i64 column as a typed array and, once a value is null, validity bytes. */
export class BigColumn implements ColumnBuilder {
  private a: BigUint64Array | BigInt64Array
  private n = 0
  /** per row: 1 = present; null while no value was null */
  private valid: Uint8Array | null = null

  constructor(private readonly type: 'u64' | 'i64') {
    this.a = type === 'u64' ? new BigUint64Array(1024) : new BigInt64Array(1024)
  }

  append(values: ArrayLike<unknown>): number {
    const [lo, hi] = this.type === 'u64' ? [0n, U64_MAX] : [I64_MIN, I64_MAX]
    const start = this.n
    this.room(start + values.length)
    const a = this.a
    for (let i = 0; i < values.length; i++) {
      const x = values[i]
      if (x === null || x === undefined) {
        if (!this.valid) this.valid = new Uint8Array(a.length).fill(1, 0, start + i)
        a[start + i] = 0n
        this.valid[start + i] = 0
        continue
      }
      if (typeof x !== 'bigint' || x < lo || x > hi) {
        // the validity bytes of the rows before stay as they were
        return i
      }
      a[start + i] = x
      if (this.valid) this.valid[start + i] = 1
    }
    this.n = start + values.length
    return -1
  }

  private room(n: number): void {
    if (n <= this.a.length) return
    let size = this.a.length * 2
    while (size < n) size *= 2
    const b = this.type === 'u64' ? new BigUint64Array(size) : new BigInt64Array(size)
    b.set(this.a.subarray(0, this.n) as never)
    this.a = b
    if (this.valid) {
      const v = new Uint8Array(size)
      v.set(this.valid.subarray(0, this.n))
      this.valid = v
    }
  }

  values(): (bigint | null)[] {
    const out: (bigint | null)[] = []
    for (let i = 0; i < this.n; i++) out.push(this.valid && !this.valid[i] ? null : this.a[i])
    return out
  }

  encode(): Encoded {
    const a = u8(this.a.subarray(0, this.n))
    const e = this.type
    return this.valid ? { e, parts: [a, this.valid.slice(0, this.n)], v: 1 } : { e, parts: [a] }
  }
}

/**
 * A column of strings dictionary-encoded as its values come (the import's batches append a block's
 * values at a time, chunk-file.ts `ChunkColumns`; `encodeColumn` all at once): each value is
 * looked up once and only the distinct strings are kept, with a code per row. `encode` chooses
 * between a dictionary and the plain list (high-cardinality: data, signatures, messages) on the
 * sums gathered on the way, when it is smaller.
 */
export class StringColumn implements ColumnBuilder {
  private readonly index = new Map<string, number>()
  private readonly dict: string[] = []
  /** per row: its code, -1 for null */
  private readonly codes = new IdList()
  private nulls = 0
  private plainChars = 0
  private dictChars = 0
  // the previous row's value and code: a run of one value (a program id over an instruction's
  // logs, a mint over a transaction's balances) costs a comparison instead of a lookup
  private prev: string | null = null
  private prevCode = 0

  /** as encodeColumn's arguments (`ascii`: safeAscii) */
  constructor(
    private readonly withIndex: boolean,
    private readonly sortDicts: boolean,
    private readonly ascii: boolean,
  ) {}

  get length(): number {
    return this.codes.length
  }

  /**
   * Append the next rows (strings; null or undefined: null): -1, or the index in `values` of the
   * first value that is not a string (the column is then left as it was before, but for its
   * dictionary)
   */
  append(values: ArrayLike<unknown>): number {
    const codes = this.codes
    const start = codes.length
    let { nulls, plainChars, dictChars, prev, prevCode } = this
    const n = values.length
    for (let i = 0; i < n; i++) {
      const x = values[i]
      if (x === null || x === undefined) {
        codes.push(-1)
        nulls++
        continue
      }
      if (x === prev) {
        codes.push(prevCode)
        plainChars += (x as string).length + 3
        continue
      }
      if (typeof x !== 'string') {
        codes.length = start
        return i
      }
      plainChars += x.length + 3
      let c = this.index.get(x)
      if (c === undefined) {
        c = this.dict.length
        this.index.set(x, c)
        this.dict.push(x)
        dictChars += x.length + 3
      }
      codes.push(c)
      prev = x
      prevCode = c
    }
    this.nulls = nulls
    this.plainChars = plainChars
    this.dictChars = dictChars
    this.prev = prev
    this.prevCode = prevCode
    return -1
  }

  /** the values appended (null for null) */
  values(): (string | null)[] {
    return Array.from(this.codes.view(), (c) => (c < 0 ? null : this.dict[c]))
  }

  /** the column as `encodeColumn` encodes its values */
  encode(): Encoded {
    const { withIndex, sortDicts, ascii } = this
    const dict = this.dict
    const n = this.codes.length
    const codes = new Uint32Array(n)
    const ids = this.codes.view()
    for (let i = 0; i < n; i++) codes[i] = ids[i] < 0 ? dict.length : ids[i]
    const w = widthFor(dict.length)
    if (this.dictChars + n * w >= this.plainChars + this.nulls * 5) {
      const [text, off] = jsonArray(this.values(), ascii)
      if (!withIndex) return { e: 'plain', parts: [text], distinct: dict }
      // format 2: + the byte offset of every row's JSON token (row access without parsing the text)
      return { e: 'plain', parts: [text, u8(off)], x: 1, distinct: dict }
    }
    if (!withIndex) return { e: 'dict', parts: [utf8(JSON.stringify(dict)), packCodes(codes, w)], w, distinct: dict }
    // format 4: the dictionary in value order, so code order is value order (no sorted codes part)
    if (sortDicts) return orderedDict(sortDict(dict, codes), codes, ascii)
    const [dictText, sorted, toff] = indexedDict(dict, false, ascii)
    return { e: 'dict', parts: [dictText, packCodes(codes, w), u8(sorted), u8(toff)], w, x: 1, distinct: dict }
  }
}

const EMPTY = new Uint8Array(0)

/**
 * A dict column of format 4 (`Encoded.s`): `sorted`, its distinct values in value order, and the
 * codes of its rows (indexes into `sorted`; sorted.length = null)
 */
export function orderedDict(sorted: string[], codes: Uint32Array, ascii: boolean): Encoded {
  const w = widthFor(sorted.length)
  const [dictText, , toff] = indexedDict(sorted, true, ascii)
  return { e: 'dict', parts: [dictText, packCodes(codes, w), EMPTY, u8(toff)], w, x: 1, s: 1, distinct: sorted }
}

/**
 * A list column with index parts (format 2 and up): row offsets, its dictionary (`sortDicts`, format 4:
 * in value order), the codes of its elements (indexes into `values`) and the postings (`positions`:
 * every occurrence with its position, format 3 and up)
 */
export function indexedList(
  offsets: Uint32Array,
  values: string[],
  codes: Uint32Array,
  positions: boolean,
  sortDicts: boolean,
): Encoded {
  const w = widthFor(values.length)
  const [dictText, sorted, toff] = indexedDict(values, sortDicts, true)
  const parts = [u8(offsets), dictText, packCodes(codes, w), sortDicts ? EMPTY : u8(sorted), u8(toff)]
  const longest = longestList(offsets)
  if (positions && longest <= 0xffff) {
    const [postOff, postRows, postPos] = occurrences(offsets, codes, values.length)
    // format 4: one byte per position when every list is short (accounts: at most a few dozen)
    parts.push(u8(postOff), u8(postRows), sortDicts && longest <= 0xff ? Uint8Array.from(postPos) : u8(postPos))
  } else parts.push(...postings(offsets, codes, values.length).map(u8))
  const enc: Encoded = { e: 'list', parts, w, x: 1, distinct: values }
  if (sortDicts) enc.s = 1
  return enc
}

/** JS string order (UTF-16 code units), the order of `RawColumn`'s binary search */
function byValue(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * The dictionary in value order (byValue's, by `sortOrder`); `codes` (indexes into `dict`, values
 * >= dict.length untouched: null) are rewritten in place to index the returned one.
 */
function sortDict(dict: readonly string[], codes: Uint32Array, order = sortOrder(dict)): string[] {
  const out = new Array<string>(dict.length)
  const rank = new Uint32Array(dict.length)
  for (let r = 0; r < order.length; r++) {
    out[r] = dict[order[r]]
    rank[order[r]] = r
  }
  for (let i = 0; i < codes.length; i++) if (codes[i] < dict.length) codes[i] = rank[codes[i]]
  return out
}

/**
 * The JSON array of `values` (strings; null or undefined as null) as UTF-8, and the byte offsets
 * of its tokens in it: n + 1 entries, token k spans [off[k], off[k + 1] - 1) (each token is
 * followed by one byte, `,` or `]`). `ascii`: the strings are safeAscii (catalogue.ts: proven at
 * ingest to need no escaping), so each token is the string between quotes, one byte a character
 * (no token strings built: the same bytes as JSON.stringify, without its garbage).
 */
function jsonArray(values: ArrayLike<string | null | undefined>, ascii: boolean): [Uint8Array, Uint32Array] {
  const n = values.length
  const off = new Uint32Array(n + 1)
  let pos = 1
  if (ascii) {
    let nulls = 0
    for (let k = 0; k < n; k++) {
      off[k] = pos
      const v = values[k]
      if (v === null || v === undefined) {
        nulls++
        pos += 5
      } else pos += v.length + 3
    }
    off[n] = pos
    if (n === 0) return [utf8('[]'), off]
    if (nulls === 0) return [Buffer.from(`["${(values as readonly string[]).join('","')}"]`, 'latin1'), off]
    const out = Buffer.allocUnsafe(pos)
    out[0] = 0x5b // [
    for (let k = 0; k < n; k++) {
      const v = values[k]
      let p = off[k]
      if (v === null || v === undefined) p += out.write('null', p, 'latin1')
      else {
        out[p++] = 0x22 // "
        p += out.write(v, p, 'latin1')
        out[p++] = 0x22
      }
      out[p] = k + 1 < n ? 0x2c : 0x5d // , or ]
    }
    return [out, off]
  }
  const toks = new Array<string>(n)
  for (let k = 0; k < n; k++) {
    toks[k] = JSON.stringify(values[k] ?? null)
    off[k] = pos
    pos += Buffer.byteLength(toks[k], 'utf8') + 1
  }
  off[n] = pos
  return [utf8(`[${toks.join(',')}]`), off]
}

/**
 * A string dictionary as JSON text (in code order) + its codes sorted by value (JS string order)
 * + the byte offsets of its tokens: a value's code is found by binary search over a few tokens,
 * without parsing the whole dictionary. `inOrder`: the dictionary is in value order already (the
 * sorted codes are then left empty); `ascii`: its values are safeAscii (`jsonArray`).
 */
function indexedDict(
  dict: readonly string[],
  inOrder: boolean,
  ascii: boolean,
): [Uint8Array, Uint32Array, Uint32Array] {
  const sorted = new Uint32Array(inOrder ? 0 : dict.length)
  if (!inOrder) {
    for (let i = 0; i < sorted.length; i++) sorted[i] = i
    sorted.sort((a, b) => byValue(dict[a], dict[b]))
  }
  const [text, off] = jsonArray(dict, ascii)
  return [text, sorted, off]
}

/**
 * `withIndex`: add the format 2 index parts (`Encoded.x`) to string and list columns; `positions`
 * (format 3): list postings hold every occurrence with its position in the row's list
 */
export function encodeColumn(
  name: string,
  type: FieldType,
  values: ArrayLike<unknown>,
  withIndex = true,
  positions = withIndex,
  sortDicts = false,
): Encoded {
  const n = values.length
  switch (type) {
    case 'u32': {
      const a = new Uint32Array(n)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === null || x === undefined) continue
        if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > U32_MAX) fail(name, i, 'expected a u32', x)
        a[i] = x
      }
      const v = validity(values)
      return v ? { e: 'u32', parts: [u8(a), v], v: 1 } : { e: 'u32', parts: [u8(a)] }
    }
    case 'u64':
    case 'i64': {
      const col = new BigColumn(type)
      const bad = col.append(values)
      if (bad >= 0) fail(name, bad, `expected a ${type} bigint`, values[bad])
      return col.encode()
    }
    case 'bool': {
      const a = new Uint8Array(n)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === null || x === undefined) a[i] = 2
        else if (typeof x !== 'boolean') fail(name, i, 'expected a boolean', x)
        else a[i] = x ? 1 : 0
      }
      return { e: 'bool', parts: [a] }
    }
    case 'version': {
      const a = new Int32Array(n)
      for (let i = 0; i < n; i++) {
        const x = values[i]
        if (x === 'legacy') a[i] = -1
        else if (typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < 0x7fffffff) a[i] = x
        else fail(name, i, "expected 'legacy' or a version number", x)
      }
      return { e: 'ver', parts: [u8(a)] }
    }
    case 'safeAscii':
    case 'string':
      return encodeStrings(name, values, false, withIndex, sortDicts, type === 'safeAscii')
    case 'json':
      return encodeStrings(name, values, true, false, false)
    case 'address': {
      const col = new AddressColumn()
      const bad = col.append(values)
      if (bad >= 0)
        fail(
          name,
          bad,
          Array.isArray(values[bad]) ? 'expected u32 elements' : 'expected an array of numbers',
          values[bad],
        )
      return col.encode()
    }
    case 'safeAsciiList': {
      const offsets = listOffsets(values)
      if (typeof offsets === 'number') fail(name, offsets, 'expected an array of strings', values[offsets])
      const index = new Map<string, number>()
      const dict: string[] = []
      const total = offsets[n]
      const codes = new Uint32Array(total)
      let k = 0
      for (let i = 0; i < n; i++) {
        for (const e of values[i] as unknown[]) {
          if (typeof e !== 'string') fail(name, i, 'expected string elements', values[i])
          let c = index.get(e)
          if (c === undefined) {
            c = dict.length
            index.set(e, c)
            dict.push(e)
          }
          codes[k++] = c
        }
      }
      if (!withIndex) {
        const w = widthFor(dict.length)
        return { e: 'list', parts: [u8(offsets), utf8(JSON.stringify(dict)), packCodes(codes, w)], w, distinct: dict }
      }
      return indexedList(offsets, sortDicts ? sortDict(dict, codes) : dict, codes, positions, sortDicts)
    }
  }
}

/**
 * The offsets of a list column (row i's elements are [offsets[i], offsets[i + 1]) of the
 * concatenated lists, offsets[n] their count), or the index of the first row that is not a list.
 */
export function listOffsets(values: ArrayLike<unknown>): Uint32Array | number {
  const n = values.length
  const offsets = new Uint32Array(n + 1)
  let total = 0
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (!Array.isArray(x)) return i
    offsets[i] = total
    total += x.length
  }
  offsets[n] = total
  return offsets
}

function longestList(offsets: Uint32Array): number {
  let m = 0
  for (let i = 0; i + 1 < offsets.length; i++) m = Math.max(m, offsets[i + 1] - offsets[i])
  return m
}

/**
 * Postings with positions (format 3): for each code, every occurrence as (row, position in the
 * row's list), ordered by row then position, at entries postOff[c]..postOff[c + 1] of postRows
 * (u32) and postPos (u16). An `a<i>` filter reads only the entries of its values.
 */
function occurrences(offsets: Uint32Array, codes: Uint32Array, size: number): [Uint32Array, Uint32Array, Uint16Array] {
  const n = offsets.length - 1
  const postOff = new Uint32Array(size + 1)
  for (let p = 0; p < codes.length; p++) postOff[codes[p] + 1]++
  for (let c = 0; c < size; c++) postOff[c + 1] += postOff[c]
  const postRows = new Uint32Array(codes.length)
  const postPos = new Uint16Array(codes.length)
  const next = postOff.slice(0, size)
  for (let i = 0; i < n; i++) {
    const a = offsets[i]
    for (let p = a; p < offsets[i + 1]; p++) {
      const k = next[codes[p]]++
      postRows[k] = i
      postPos[k] = p - a
    }
  }
  return [postOff, postRows, postPos]
}

/**
 * Postings of a list column (format 2): for each code, the rows holding it (ascending, a row once per code)
 * at postRows[postOff[c]..postOff[c + 1]).
 */
function postings(offsets: Uint32Array, codes: Uint32Array, size: number): [Uint32Array, Uint32Array] {
  const n = offsets.length - 1
  const postOff = new Uint32Array(size + 1)
  const last = new Int32Array(size).fill(-1)
  for (let i = 0; i < n; i++) {
    for (let p = offsets[i]; p < offsets[i + 1]; p++) {
      const c = codes[p]
      if (last[c] !== i) {
        last[c] = i
        postOff[c + 1]++
      }
    }
  }
  for (let c = 0; c < size; c++) postOff[c + 1] += postOff[c]
  const postRows = new Uint32Array(postOff[size])
  const pos = postOff.slice(0, size)
  last.fill(-1)
  for (let i = 0; i < n; i++) {
    for (let p = offsets[i]; p < offsets[i + 1]; p++) {
      const c = codes[p]
      if (last[c] !== i) {
        last[c] = i
        postRows[pos[c]++] = i
      }
    }
  }
  return [postOff, postRows]
}

/** a u32 view of a part (parts are 8-byte aligned) */
export function view32(p: Uint8Array): Uint32Array {
  return new Uint32Array(p.buffer, p.byteOffset, p.byteLength >>> 2)
}

/** dictionary codes of width 1, 2 or 4 bytes */
export function codesOf(p: Uint8Array, w: number | undefined): Uint8Array | Uint16Array | Uint32Array {
  if (w === 1) return p
  if (w === 2) return new Uint16Array(p.buffer, p.byteOffset, p.byteLength >>> 1)
  return view32(p)
}

function text(p: Uint8Array): string {
  return Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8')
}

function withNulls<T>(values: ArrayLike<T>, v: Uint8Array): (T | null)[] {
  const out = new Array<T | null>(values.length)
  for (let i = 0; i < values.length; i++) out[i] = v[i] ? values[i] : null
  return out
}

/**
 * An array of n rows, each built by `make(i)` when first read (then kept). A Proxy over a real
 * array: indexing, `length`, iteration, `Array.isArray` and `Array.from` behave as for an array.
 */
export function lazyRows<T>(n: number, make: (i: number) => T): T[] {
  const rows = new Array<T>(n)
  return new Proxy(rows, {
    get(target, key, receiver) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57) {
          const i = +key
          if (i < n) {
            let v = target[i]
            if (v === undefined) v = target[i] = make(i)
            return v
          }
        }
      }
      return Reflect.get(target, key, receiver)
    },
    // every row exists (slice, `in`, hasOwnProperty look before they get)
    has(target, key) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57 && +key < n) return true
      }
      return Reflect.has(target, key)
    },
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57 && +key < n) {
          const i = +key
          let v = target[i]
          if (v === undefined) v = target[i] = make(i)
          return { value: v, writable: true, enumerable: true, configurable: true }
        }
      }
      return Reflect.getOwnPropertyDescriptor(target, key)
    },
  })
}

export interface Decoded {
  values: ArrayLike<unknown>
  /** rough memory footprint, for the cache budget */
  bytes: number
}

/**
 * Decode a column from its parts (views on an 8-byte-aligned buffer). Non-nullable fixed-width
 * columns are returned as typed arrays (no copy); everything else as plain arrays holding the
 * model's values (null for absent, bigint for u64/i64, arrays for list fields).
 */
export function decodeColumn(e: Enc, n: number, parts: Uint8Array[], w?: number, v?: number): Decoded {
  switch (e) {
    case 'u32': {
      const a = view32(parts[0]).subarray(0, n)
      return v ? { values: withNulls(a, parts[1]), bytes: n * 16 } : { values: a, bytes: a.byteLength }
    }
    case 'u64':
    case 'i64': {
      const p = parts[0]
      const a =
        e === 'u64' ? new BigUint64Array(p.buffer, p.byteOffset, n) : new BigInt64Array(p.buffer, p.byteOffset, n)
      return v
        ? { values: withNulls(a as ArrayLike<bigint>, parts[1]), bytes: n * 40 }
        : { values: a, bytes: a.byteLength }
    }
    case 'bool': {
      const p = parts[0]
      const out = new Array<boolean | null>(n)
      for (let i = 0; i < n; i++) out[i] = p[i] === 2 ? null : p[i] === 1
      return { values: out, bytes: n * 8 }
    }
    case 'ver': {
      const p = parts[0]
      const a = new Int32Array(p.buffer, p.byteOffset, n)
      const out = new Array<'legacy' | number>(n)
      for (let i = 0; i < n; i++) out[i] = a[i] < 0 ? 'legacy' : a[i]
      return { values: out, bytes: n * 8 }
    }
    case 'plain':
    case 'jplain': {
      const s = text(parts[0])
      const out = JSON.parse(s) as unknown[]
      return { values: out, bytes: n * 8 + s.length * 2 + n * 24 }
    }
    case 'dict':
    case 'jdict': {
      const s = text(parts[0])
      const dict = JSON.parse(s) as unknown[]
      const codes = codesOf(parts[1], w)
      const out = new Array<unknown>(n)
      for (let i = 0; i < n; i++) {
        const c = codes[i]
        out[i] = c < dict.length ? dict[c] : null
      }
      return { values: out, bytes: n * 8 + s.length * 2 + dict.length * 24 }
    }
    case 'addr': {
      const off = view32(parts[0])
      const flat = codesOf(parts[1], w)
      const out = new Array<number[]>(n)
      for (let i = 0; i < n; i++) {
        const a = off[i]
        const b = off[i + 1]
        const x = new Array<number>(b - a)
        for (let j = a; j < b; j++) x[j - a] = flat[j]
        out[i] = x
      }
      return { values: out, bytes: n * 40 + off[n] * 8 }
    }
    case 'list': {
      const off = view32(parts[0])
      const s = text(parts[1])
      const dict = JSON.parse(s) as string[]
      const codes = codesOf(parts[2], w)
      // rows are built on first access: a query usually renders the lists of a few matched rows
      // only (a filter over the column touches each row once, which costs about the same as
      // building them all up front)
      const values = lazyRows(n, (i) => {
        const a = off[i]
        const b = off[i + 1]
        const x = new Array<string>(b - a)
        for (let j = a; j < b; j++) x[j - a] = dict[codes[j]]
        return x
      })
      return { values, bytes: n * 40 + off[n] * 8 + s.length * 2 + dict.length * 24 }
    }
  }
}
