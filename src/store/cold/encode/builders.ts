/**
 * Column builders: a column gathered as its values come, a block's worth at a time (chunk-file.ts
 * `ChunkColumns`), kept compact (codes, typed arrays) and encoded to the same bytes as
 * `encodeColumn` of all its values.
 */
import type { FieldType } from '../../../catalogue.ts'
import { IdList } from '../id-list.ts'
import { indexedDict, jsonArray, orderedDict, sortDict } from './dictionaries.ts'
import { I64_MAX, I64_MIN, packCodes, U32_MAX, U64_MAX, u8, utf8, widthFor, type Encoded } from './encoded.ts'

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
