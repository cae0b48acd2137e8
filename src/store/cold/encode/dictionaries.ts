/**
 * String dictionaries and list indexes of the encoded columns: dictionaries as JSON text with the
 * byte offsets of their tokens (in code order, with the codes sorted by value, or in value order:
 * format 4), and list columns' postings (the rows of each value; format 3: every occurrence with
 * its position).
 */
import { sortOrder } from '../sort-strings.ts'
import { EMPTY, packCodes, u8, utf8, widthFor, type Encoded } from './encoded.ts'

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
export function sortDict(dict: readonly string[], codes: Uint32Array, order = sortOrder(dict)): string[] {
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
export function jsonArray(values: ArrayLike<string | null | undefined>, ascii: boolean): [Uint8Array, Uint32Array] {
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
export function indexedDict(
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

export function longestList(offsets: Uint32Array): number {
  let m = 0
  for (let i = 0; i + 1 < offsets.length; i++) m = Math.max(m, offsets[i + 1] - offsets[i])
  return m
}

/**
 * Postings with positions (format 3): for each code, every occurrence as (row, position in the
 * row's list), ordered by row then position, at entries postOff[c]..postOff[c + 1] of postRows
 * (u32) and postPos (u16). An `a<i>` filter reads only the entries of its values.
 */
export function occurrences(
  offsets: Uint32Array,
  codes: Uint32Array,
  size: number,
): [Uint32Array, Uint32Array, Uint16Array] {
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
export function postings(offsets: Uint32Array, codes: Uint32Array, size: number): [Uint32Array, Uint32Array] {
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
