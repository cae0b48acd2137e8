/**
 * Filters and row reads on a column's encoded parts (format 2 index parts, see encode/column.ts), without
 * decoding the whole column:
 *
 * - a dictionary value's code is found by binary search over the codes sorted by value (format 4:
 *   over the value-ordered dictionary, from the frame its fences name), parsing only the
 *   ~log2(size) tokens it visits;
 * - `in` / `at` / `any` filters become a flag per code, then one loop over the candidates' codes,
 *   or the postings of the values (filters.ts);
 * - `prefix` filters compare the bytes of a candidate's JSON token (`"0x…"`) with the prefixes;
 * - `rowView` builds a row's value when it is read (row-view.ts), `tokens` / `rowTokens` write
 *   rows as JSON from the stored tokens (tokens.ts).
 *
 * The parts come from a `Parts` (parts.ts): either all in memory (the blob was just read whole,
 * e.g. to check its crc32), or read on demand from the immutable file: a whole part when a loop
 * touches many rows, a few pages for a few rows and for the binary search of a dictionary.
 */
import type { MatchOp } from '../../chunk.ts'
import type { Enc } from '../encode/encoded.ts'
import { view32 } from '../encode/decode.ts'
import type { JsonTokens } from '../../../util/json-bytes.ts'
import {
  matchBool,
  matchDictIn,
  matchDictPrefix,
  matchHits,
  matchListAny,
  matchListAt,
  matchPlainIn,
  matchPlainPrefix,
  postingRows,
  prefixTest,
} from './filters.ts'
import { PAGE } from './page-io.ts'
import type { Parts } from './parts.ts'
import { rowView } from './row-view.ts'
import {
  buildRowBytes,
  FALSE,
  KeptTokens,
  keptBytes,
  NO_ROWS,
  NULL,
  packRows,
  storedTokens,
  TRUE,
  type KeptRows,
} from './tokens.ts'

/**
 * How a list column's postings are stored: none (no index parts), the rows holding each value
 * (format 2, and lists longer than 65,535 elements), or every occurrence with its position (format
 * 3 and up).
 */
export type Postings = 'none' | 'rows' | 'positions'

/** the postings of a column by its stored parts (the writer put 7 parts with rows, 8 with positions) */
export function postingsOf(e: Enc, x: boolean, lens: readonly number[]): Postings {
  if (e !== 'list' || !x || lens.length < 7) return 'none'
  return lens.length === 8 ? 'positions' : 'rows'
}

/** what a stored column is, as its footer entry tells */
export interface RawLayout {
  e: Enc
  /** code width (dict, list, addr) */
  w: number | undefined
  /** format 2 index parts */
  x: boolean
  /** a validity part */
  v: boolean
  /** format 4: the dictionary is in value order (no sorted codes part) */
  sortedDict: boolean
  /** format 4: [first code, value] of each text frame of a value-ordered dictionary */
  fences: readonly [number, string][] | null
  postings: Postings
}

export class RawColumn {
  readonly e: Enc
  readonly x: boolean
  readonly v: boolean
  /** code width as stored (undefined: 4) */
  readonly width: number | undefined
  /** code width */
  readonly w: number
  readonly postings: Postings
  /** bytes per posting position (1 for format 4's short lists, else 2) */
  readonly positionWidth: number
  private readonly sortedDict: boolean
  private readonly fences: readonly [number, string][] | null
  /** dictionary values parsed so far, by code */
  private readonly memo = new Map<number, unknown>()
  /** codes looked up so far, by value (-1 = absent) */
  private readonly found = new Map<string, number>()
  /** rows built by row views so far (plain, dict, list, addr), kept instead of their pages */
  readonly built = new Map<number, unknown>()
  /** rows' JSON bytes built by `rowTokens` since the last `done`, kept instead of their pages */
  private readonly builtBytes = new Map<number, Buffer>()
  /** the rows built by earlier uses, packed (`KeptRows`) */
  private keptRows: KeptRows = NO_ROWS
  /** two u32 read at once (offset pairs) */
  readonly pair = new Uint32Array(2)
  /** part indexes: text, codes, sorted codes, token offsets, row offsets (-1 = none) */
  readonly pText: number
  readonly pCodes: number
  readonly pSorted: number
  readonly pToff: number
  readonly pOff: number
  readonly dictSize: number

  constructor(
    layout: RawLayout,
    readonly n: number,
    readonly parts: Parts,
  ) {
    const { e, x } = layout
    this.e = e
    this.x = x
    this.v = layout.v
    this.width = layout.w
    this.w = layout.w ?? 4
    this.sortedDict = layout.sortedDict
    this.fences = layout.fences
    this.postings = layout.postings
    const lens = parts.lens
    this.positionWidth = this.postings === 'positions' && lens[7] === 2 * (lens[6] / 4) ? 2 : 1
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
    this.dictSize = this.pSorted >= 0 ? Math.floor(lens[this.pToff] / 4) - 1 : 0
  }

  /** the value of dictionary code c (dict, list) or of row c (plain) */
  token(c: number): unknown {
    return JSON.parse(this.tokenBytes(c).toString('utf8'))
  }

  dictValue(c: number): unknown {
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

  /** a flag per code (index dictSize = null) for the codes given; null when there are none */
  private flags(codes: readonly number[]): Uint8Array | null {
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
  tok(r: number, dense: boolean): [Buffer, number, number] {
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

  /** keeps the rows of `rows[0..count)` matching `op` (in place) and returns their count; -1 when this column cannot tell */
  match(op: MatchOp, rows: Int32Array, count: number): number {
    if ('bool' in op) return this.e === 'bool' ? matchBool(this, op.bool ? 1 : 0, rows, count) : -1
    if (!this.x) return -1
    if ('in' in op) {
      if (this.e === 'dict') {
        const f = this.flags(this.codesIn(op.in))
        return f === null ? 0 : matchDictIn(this, f, rows, count)
      }
      return this.e === 'plain' ? matchPlainIn(this, op.in, rows, count) : -1
    }
    if ('prefix' in op) {
      const test = prefixTest(op.prefix)
      if (!test) return -1
      if (this.e === 'plain') return matchPlainPrefix(this, test, rows, count)
      return this.e === 'dict' ? matchDictPrefix(this, test, rows, count) : -1
    }
    if (this.e !== 'list') return -1
    const codes = this.codesIn('at' in op ? op.values : op.any)
    if (codes.length === 0) return 0
    let n = count
    if (this.postings !== 'none' && n > 0) {
      // postings: only the rows holding one of the values; postings with positions answer `at`
      // without reading the lists
      const positions = this.postings === 'positions'
      const k = matchHits(this.postingRows(codes, positions && 'at' in op ? op.at : -1), rows, n)
      if (!('at' in op) || positions || k === 0) return k
      n = k
    }
    const f = this.flags(codes)!
    return 'at' in op ? matchListAt(this, f, op.at, rows, n) : matchListAny(this, f, rows, n)
  }

  /** `Table.candidates`: the rows in [lo, hi) matching an `at` / `any` op, from the postings */
  candidates(op: MatchOp, lo: number, hi: number): Int32Array | null {
    if (!this.x || this.postings === 'none' || !('at' in op || 'any' in op)) return null
    const codes = this.codesIn('at' in op ? op.values : op.any)
    if (codes.length === 0) return new Int32Array(0)
    const positions = this.postings === 'positions'
    const hits = this.postingRows(codes, positions && 'at' in op ? op.at : -1)
    let a = 0
    let b = hits.length
    while (a < b && hits[a] < lo) a++
    while (b > a && hits[b - 1] >= hi) b--
    const rows = Int32Array.from(hits.subarray(a, b))
    if ('at' in op && !positions) return rows.subarray(0, this.match(op, rows, rows.length))
    return rows
  }

  /** the rows holding one of `codes`, ascending, each once (at that position when `at` >= 0) */
  private postingRows(codes: readonly number[], at: number): Uint32Array {
    return postingRows(this, codes, at)
  }

  listRange(r: number): [number, number] {
    this.parts.u32Pair(this.pOff, r, this.pair)
    return [this.pair[0], this.pair[1]]
  }

  /** codes [a, e) of a list column */
  listCodes(a: number, e: number): ArrayLike<number> {
    const w = this.w
    const b = this.parts.range(this.pCodes, a * w, e * w)
    const out = new Array<number>(e - a)
    for (let i = 0; i < e - a; i++) out[i] = w === 1 ? b[i] : w === 2 ? b.readUInt16LE(2 * i) : b.readUInt32LE(4 * i)
    return out
  }

  /** a row builder that reads through transient pages and accounts for the row it builds */
  keep<T>(make: (i: number) => T): (i: number) => T {
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
   * of strings with the format 2 index parts), 64-bit integers and instruction addresses; null
   * for other columns. The parts are read whole.
   */
  tokens(bigintsAsNumbers: boolean): JsonTokens | null {
    return storedTokens(this, bigintsAsNumbers)
  }

  /**
   * Parts read whole when many rows are read; else rows are built from pages read and not kept,
   * and the built rows are kept with the column (a few rows' values are far smaller than the
   * pages holding them: a chunk's dictionary of accounts is megabytes, a row's list of accounts a
   * few dozen pointers), so a repeated query reads nothing (a list's dictionary is read whole when
   * the rows' elements are many times its pages).
   */
  prefetch(reads: number, lend = false): void {
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
  tokenBytes(c: number): Buffer {
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
    if (first) this.prefetch(reads, true)
    const was = P.transient
    P.transient = true
    let b: Buffer
    try {
      b = buildRowBytes(this, i)
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

  /**
   * rows built when read; null when the column has no cheaper form than its full decode. `reads`:
   * about how many rows will be read (parts are read whole when that is cheaper).
   */
  rowView(reads: number): ArrayLike<unknown> | null {
    return rowView(this, reads)
  }
}
