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
import type { FieldType } from '../../../catalogue.ts'
import { AddressColumn, BigColumn, StringColumn } from './builders.ts'
import { indexedList, listOffsets, sortDict } from './dictionaries.ts'
import { fail, packCodes, U32_MAX, u8, utf8, validity, widthFor, type Encoded } from './encoded.ts'
import { sortOrder } from '../sort-strings.ts'

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
  switch (type) {
    case 'u32':
      return encodeU32(name, values)
    case 'u64':
    case 'i64': {
      const col = new BigColumn(type)
      const bad = col.append(values)
      if (bad >= 0) fail(name, bad, `expected a ${type} bigint`, values[bad])
      return col.encode()
    }
    case 'bool':
      return encodeBool(name, values)
    case 'version':
      return encodeVersion(name, values)
    case 'safeAscii':
    case 'string':
      return encodeStrings(name, values, false, withIndex, sortDicts, type === 'safeAscii')
    case 'json':
      return encodeStrings(name, values, true, false, false)
    case 'address':
      return encodeAddresses(name, values)
    case 'safeAsciiList':
      return encodeList(name, values, withIndex, positions, sortDicts)
  }
}

function encodeU32(name: string, values: ArrayLike<unknown>): Encoded {
  const n = values.length
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

function encodeBool(name: string, values: ArrayLike<unknown>): Encoded {
  const n = values.length
  const a = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (x === null || x === undefined) a[i] = 2
    else if (typeof x !== 'boolean') fail(name, i, 'expected a boolean', x)
    else a[i] = x ? 1 : 0
  }
  return { e: 'bool', parts: [a] }
}

function encodeVersion(name: string, values: ArrayLike<unknown>): Encoded {
  const n = values.length
  const a = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const x = values[i]
    if (x === 'legacy') a[i] = -1
    else if (typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < 0x7fffffff) a[i] = x
    else fail(name, i, "expected 'legacy' or a version number", x)
  }
  return { e: 'ver', parts: [u8(a)] }
}

function encodeAddresses(name: string, values: ArrayLike<unknown>): Encoded {
  const col = new AddressColumn()
  const bad = col.append(values)
  if (bad >= 0)
    fail(name, bad, Array.isArray(values[bad]) ? 'expected u32 elements' : 'expected an array of numbers', values[bad])
  return col.encode()
}

/** a list of strings: a dictionary of its elements and their codes (with index parts: `indexedList`) */
function encodeList(
  name: string,
  values: ArrayLike<unknown>,
  withIndex: boolean,
  positions: boolean,
  sortDicts: boolean,
): Encoded {
  const n = values.length
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
