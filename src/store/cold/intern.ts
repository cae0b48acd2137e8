/**
 * The accounts of a chunk, interned once for all its account columns (chunk-file.ts `encodeChunk`,
 * format 4): an account appears in many columns (a transaction's keys, its instructions' accounts
 * and program ids, token balances' accounts and owners), and each column used to hash every value
 * into its own dictionary and sort that dictionary's strings. Here each distinct string gets an id
 * once (one hash table for the chunk), the strings are sorted once, and a column's value-ordered
 * dictionary and codes are then built from small integers: the same bytes as encode/column.ts writes for
 * the column alone (`orderedDict`, `indexedList`).
 */
import { encodeColumn } from './encode/column.ts'
import { indexedList, orderedDict } from './encode/dictionaries.ts'
import { widthFor, type Encoded } from './encode/encoded.ts'
import { IdList } from './id-list.ts'
import { sortOrder } from './sort-strings.ts'

/** a column's values as ids: one per row (-1: null) or, for a list column, one per element */
export interface InternedColumn {
  ids: Int32Array
  /** list columns: the elements of row i are ids[offsets[i]..offsets[i + 1]) */
  offsets?: Uint32Array
}

/**
 * The interner's cache: the last string seen in each of 2^CACHE_BITS slots (chosen by four of its
 * characters) and its id. A transaction's accounts come back in its instructions, balances and
 * token balances as the very same string objects (the parser made them once), so most lookups
 * end at the cache's comparison, which for the same object is one pointer comparison, instead of
 * hashing a fresh string for the hash table: taking 21 freshly parsed generated blocks of 1,500
 * transactions into columns measured 23.0-23.9 against 25.0-25.8 ms per block.
 */
const CACHE_BITS = 14
const CACHE_SHIFT = 32 - CACHE_BITS

export class AccountInterner {
  private readonly index = new Map<string, number>()
  /** the string of each id */
  readonly values: string[] = []
  /** ids in value order (JS string order), and the rank of each id in it: set by `seal` */
  private order: Uint32Array | null = null
  private rank: Uint32Array | null = null
  /** per id: -1, or (while a column is being built) its code in the column */
  private code = new Int32Array(0)

  /** the last string seen per cache slot (`id`), and its id */
  private readonly cacheKeys: (string | null)[] = new Array<string | null>(1 << CACHE_BITS).fill(null)
  private readonly cacheIds = new Int32Array(1 << CACHE_BITS)

  private id(s: string): number {
    const n = s.length
    const slot =
      n < 4
        ? 0
        : Math.imul(
            s.charCodeAt(0) | (s.charCodeAt(1) << 8) | (s.charCodeAt(n - 1) << 16) | (s.charCodeAt(n - 2) << 24),
            0x9e3779b1,
          ) >>> CACHE_SHIFT
    if (this.cacheKeys[slot] === s) return this.cacheIds[slot]
    let c = this.index.get(s)
    if (c === undefined) {
      c = this.values.length
      this.index.set(s, c)
      this.values.push(s)
    }
    this.cacheKeys[slot] = s
    this.cacheIds[slot] = c
    return c
  }

  /** The ids of a column of strings (null / undefined: -1); null when a value is not a string (left to encodeColumn, which names it). */
  internValues(values: ArrayLike<unknown>): InternedColumn | null {
    const ids = new IdList()
    return this.appendValues(values, ids) ? { ids: ids.view() } : null
  }

  /** The ids of a column of string lists; null when a row is not a list of strings. */
  internLists(values: ArrayLike<unknown>): InternedColumn | null {
    const ids = new IdList()
    const offsets = new IdList()
    offsets.push(0)
    if (!this.appendLists(values, ids, offsets)) return null
    return { ids: ids.view(), offsets: new Uint32Array(offsets.view()) }
  }

  /**
   * Append the ids of a column's next rows (strings; null / undefined: -1) to `ids`; false, with
   * `ids` as it was, when a value is not a string
   */
  appendValues(values: ArrayLike<unknown>, ids: IdList): boolean {
    if (this.order) throw new Error('cold store: interner sealed')
    const n = values.length
    const start = ids.length
    // a run of one value (a program id over an instruction's logs) costs a comparison
    let prev: unknown = null
    let prevId = -1
    for (let i = 0; i < n; i++) {
      const x = values[i]
      if (x === null || x === undefined) ids.push(-1)
      else if (x === prev) ids.push(prevId)
      else if (typeof x !== 'string') {
        ids.length = start
        return false
      } else {
        prevId = this.id(x)
        ids.push(prevId)
        prev = x
      }
    }
    return true
  }

  /**
   * Append the ids of a list column's next rows (lists of strings) to `ids`, and the end of each
   * row's elements in `ids` to `offsets` (which holds the start of the first); false, with both as
   * they were, when a row is not a list of strings
   */
  appendLists(values: ArrayLike<unknown>, ids: IdList, offsets: IdList): boolean {
    if (this.order) throw new Error('cold store: interner sealed')
    const n = values.length
    const start = ids.length
    const rows = offsets.length
    for (let i = 0; i < n; i++) {
      const row = values[i]
      if (!Array.isArray(row)) {
        ids.length = start
        offsets.length = rows
        return false
      }
      for (const e of row) {
        if (typeof e !== 'string') {
          ids.length = start
          offsets.length = rows
          return false
        }
        ids.push(this.id(e))
      }
      offsets.push(ids.length)
    }
    return true
  }

  /** The values of an interned column again: its strings (null for -1), or a list column's lists. */
  strings(col: InternedColumn): (string | null)[] | string[][] {
    const { ids, offsets } = col
    if (offsets) {
      const rows: string[][] = []
      for (let i = 0; i + 1 < offsets.length; i++) {
        const row: string[] = []
        for (let k = offsets[i]; k < offsets[i + 1]; k++) row.push(this.values[ids[k]])
        rows.push(row)
      }
      return rows
    }
    return Array.from(ids, (id) => (id < 0 ? null : this.values[id]))
  }

  /** Every column interned: sort the strings once. */
  seal(): void {
    const n = this.values.length
    this.order = sortOrder(this.values)
    this.rank = new Uint32Array(n)
    for (let r = 0; r < n; r++) this.rank[this.order[r]] = r
    this.code = new Int32Array(n).fill(-1)
  }

  /**
   * The distinct ids of `ids` (-1 skipped) in value order, each given its code (its place in that
   * order) in `this.code` until `release`
   */
  private distinct(ids: Int32Array): number[] {
    const code = this.code
    const seen: number[] = []
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]
      if (id >= 0 && code[id] < 0) {
        code[id] = 0
        seen.push(id)
      }
    }
    const order = this.order!
    let sorted: number[]
    if (seen.length * 16 < order.length) {
      // a few values: sort their ranks
      const ranks = new Uint32Array(seen.length)
      for (let j = 0; j < seen.length; j++) ranks[j] = this.rank![seen[j]]
      ranks.sort()
      sorted = Array.from(ranks, (r) => order[r])
    } else {
      // most of the chunk's accounts: one pass over all of them in value order
      sorted = []
      for (let r = 0; r < order.length; r++) if (code[order[r]] >= 0) sorted.push(order[r])
    }
    for (let j = 0; j < sorted.length; j++) code[sorted[j]] = j
    return sorted
  }

  private release(ids: readonly number[]): void {
    for (const id of ids) this.code[id] = -1
  }

  /**
   * The column (catalogue type safeAscii or safeAsciiList, format 4 with index parts) as
   * `encodeColumn` encodes it (a string column stored plain, when the dictionary would not be
   * smaller, is left to it)
   */
  encode(name: string, list: boolean, col: InternedColumn): Encoded {
    if (!this.order) throw new Error('cold store: interner not sealed')
    const ids = col.ids
    const sorted = this.distinct(ids)
    try {
      const code = this.code
      const dict = sorted.map((id) => this.values[id])
      if (list) {
        const codes = new Uint32Array(ids.length)
        for (let k = 0; k < ids.length; k++) codes[k] = code[ids[k]]
        return indexedList(col.offsets!, dict, codes, true, true)
      }
      // encodeStrings' choice between a dictionary and the plain list, on the same sums
      const n = ids.length
      let nulls = 0
      let plainChars = 0
      for (let i = 0; i < n; i++) {
        const id = ids[i]
        if (id < 0) nulls++
        else plainChars += this.values[id].length + 3
      }
      let dictChars = 0
      for (const s of dict) dictChars += s.length + 3
      if (dictChars + n * widthFor(dict.length) >= plainChars + nulls * 5)
        return encodeColumn(name, 'safeAscii', this.strings(col), true, true, true)
      const codes = new Uint32Array(n)
      for (let i = 0; i < n; i++) {
        const id = ids[i]
        codes[i] = id < 0 ? dict.length : code[id]
      }
      return orderedDict(dict, codes, true)
    } finally {
      this.release(sorted)
    }
  }
}
