/**
 * Filters on a column's stored form (`RawColumn.match`), one per op and encoding: each keeps the
 * rows of `rows[0..n)` that match in place and returns how many it kept. Each has a dense form
 * (the parts it loops over are in memory, read whole: typed arrays indexed directly) and a paged
 * one (a few rows: their codes, offsets and tokens read by page).
 */
import { codesOf, view32 } from '../encode/decode.ts'
import type { RawColumn } from './column.ts'

/** Prefix values usable as raw bytes: printable ASCII without `"` and `\` (JSON writes them as is). */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false
  }
  return true
}

type Groups = readonly { readonly length: number; readonly values: ReadonlySet<string> }[]

/** a test of a JSON token's bytes `b[a..e)` */
export type TokenTest = (b: Buffer, a: number, e: number) => boolean

/** A compiled prefix test over JSON string tokens in a buffer. */
export function prefixTest(groups: Groups): TokenTest | null {
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

/** bool: one byte per row (0, 1, 2 = null) equal to `want` */
export function matchBool(col: RawColumn, want: number, rows: Int32Array, count: number): number {
  const P = col.parts
  let k = 0
  P.prefer(0, count)
  for (let j = 0; j < count; j++) {
    const r = rows[j]
    if (P.uw(0, r, 1) === want) rows[k++] = r
  }
  return k
}

/** dict `in`: the rows whose code is flagged (`f`, a flag per code) */
export function matchDictIn(col: RawColumn, f: Uint8Array, rows: Int32Array, n: number): number {
  const P = col.parts
  let k = 0
  if (P.prefer(col.pCodes, n)) {
    const codes = codesOf(P.part(col.pCodes), col.width)
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      if (f[codes[r]] === 1) rows[k++] = r
    }
  } else {
    const w = col.w
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      if (f[P.uw(col.pCodes, r, w)] === 1) rows[k++] = r
    }
  }
  return k
}

/** plain `in`: the rows whose JSON token is one of the values' */
export function matchPlainIn(col: RawColumn, values: Iterable<unknown>, rows: Int32Array, n: number): number {
  const P = col.parts
  const targets = new Map<number, Buffer[]>()
  for (const v of values) {
    const t = Buffer.from(JSON.stringify(v), 'utf8')
    const l = targets.get(t.length)
    if (l) l.push(t)
    else targets.set(t.length, [t])
  }
  const dense = P.prefer(col.pToff, n) && P.prefer(col.pText, n)
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    const [b, a, e] = col.tok(r, dense)
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

/** plain `prefix`: the rows whose token passes `test` */
export function matchPlainPrefix(col: RawColumn, test: TokenTest, rows: Int32Array, n: number): number {
  const P = col.parts
  const dense = P.prefer(col.pToff, n) && P.prefer(col.pText, n)
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    const [b, a, e] = col.tok(r, dense)
    if (test(b, a, e)) rows[k++] = r
  }
  return k
}

/** dict `prefix`: the rows whose code's token passes `test` (each code tested once) */
export function matchDictPrefix(col: RawColumn, test: TokenTest, rows: Int32Array, n: number): number {
  const P = col.parts
  // 0 = not yet tested, 1 = match, 2 = no match (null code: no match)
  const size = col.dictSize
  const memo = new Uint8Array(size + 1)
  memo[size] = 2
  const w = col.w
  P.prefer(col.pCodes, n)
  const dense = P.prefer(col.pToff, n) && P.prefer(col.pText, n)
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    const c = P.uw(col.pCodes, r, w)
    let m = memo[c]
    if (m === 0) {
      const [b, a, e] = col.tok(c, dense)
      m = memo[c] = test(b, a, e) ? 1 : 2
    }
    if (m === 1) rows[k++] = r
  }
  return k
}

/** the rows of `rows[0..n)` that are in `hits` (both ascending) */
export function matchHits(hits: Uint32Array, rows: Int32Array, n: number): number {
  let k = 0
  let h = 0
  const nh = hits.length
  for (let j = 0; j < n && h < nh; j++) {
    const r = rows[j]
    while (h < nh && hits[h] < r) h++
    if (h < nh && hits[h] === r) rows[k++] = r
  }
  return k
}

/** list `at`: the rows whose element at position `idx` is flagged */
export function matchListAt(col: RawColumn, f: Uint8Array, idx: number, rows: Int32Array, n: number): number {
  const P = col.parts
  const dense = P.prefer(col.pOff, n) && P.prefer(col.pCodes, n)
  let k = 0
  if (dense) {
    const off = view32(P.part(col.pOff))
    const codes = codesOf(P.part(col.pCodes), col.width)
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      const p = off[r] + idx
      if (p < off[r + 1] && f[codes[p]] === 1) rows[k++] = r
    }
  } else {
    const pair = col.pair
    const w = col.w
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      P.u32Pair(col.pOff, r, pair)
      const p = pair[0] + idx
      if (p < pair[1] && f[P.uw(col.pCodes, p, w)] === 1) rows[k++] = r
    }
  }
  return k
}

/** list `any`: the rows holding a flagged element */
export function matchListAny(col: RawColumn, f: Uint8Array, rows: Int32Array, n: number): number {
  const P = col.parts
  const dense = P.prefer(col.pOff, n) && P.prefer(col.pCodes, n)
  let k = 0
  if (dense) {
    const off = view32(P.part(col.pOff))
    const codes = codesOf(P.part(col.pCodes), col.width)
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
      const [a, e] = col.listRange(r)
      const codes = col.listCodes(a, e)
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

/**
 * the rows of a list column holding one of `codes` (postings parts 5, 6), ascending, each once;
 * with `at` >= 0 (postings with positions, part 7) only the rows holding it at that position
 */
export function postingRows(col: RawColumn, codes: readonly number[], at: number): Uint32Array {
  const P = col.parts
  const pair = col.pair
  const pw = col.positionWidth
  const lists: Uint32Array[] = []
  let total = 0
  for (const c of codes) {
    P.u32Pair(5, c, pair)
    const a = pair[0]
    const b = pair[1]
    if (b === a) continue
    const bytes = P.range(6, a * 4, b * 4)
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
  // postings with positions list a row once per occurrence; several values can share rows
  let u = 0
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[u++] = all[i]
  return all.subarray(0, u)
}
