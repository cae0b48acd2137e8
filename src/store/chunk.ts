/**
 * The one storage interface the query engine runs on (in-memory, hot and cold stores alike).
 *
 * A chunk is a contiguous range of produced blocks with all their rows in columnar form. Rows of
 * each kind are grouped by block (ascending block position) and, inside a block, sorted in the
 * order of docs/query.md §2. Column values have the model's types (src/model.ts): bigint for u64,
 * null for absent values, arrays for list fields.
 */
import type { BlockHeader } from '../model.ts'
import type { JsonTokens } from '../util/json-bytes.ts'

/**
 * A filter a table may evaluate on its stored (encoded) data, see `Table.match`. String values
 * only; semantics identical to the query engine's own loops over `column()`:
 * - `in`: a scalar column's value is in the set;
 * - `prefix`: a scalar string column starts with one of the values of a group (groups ascending
 *   by length in characters, values of one group all of that length);
 * - `at`: a list column has an element at `at` and it is in the set;
 * - `any`: some element of a list column is in the set;
 * - `bool`: a bool column's value is this one (null matches neither).
 */
export type MatchOp =
  | { readonly in: ReadonlySet<string | null> }
  | { readonly prefix: readonly { readonly length: number; readonly values: ReadonlySet<string> }[] }
  | { readonly at: number; readonly values: ReadonlySet<string> }
  | { readonly any: ReadonlySet<string> }
  | { readonly bool: boolean }

export interface Table {
  readonly rowCount: number
  /** length blockCount + 1: rows of block position b are [blockOffsets[b], blockOffsets[b + 1]) */
  readonly blockOffsets: ArrayLike<number>
  /** a stored column by field name (the dataset's `columnsOf(kind)`); throws for unknown names */
  column(field: string): ArrayLike<unknown>
  /**
   * Optional filter push-down: keep the rows of `rows[0..n)` (ascending row indexes) whose
   * `field` matches `op`, in place and in order; returns how many were kept, or -1 when this table
   * cannot evaluate it on its stored form (the caller then filters over `column(field)`).
   */
  match?(field: string, op: MatchOp, rows: Int32Array, n: number): number
  /**
   * Optional index lookup: the rows in [lo, hi) whose `field` matches `op`, ascending, found
   * without visiting the other rows (e.g. from postings of a list column); null when this table
   * has no index for it. Same rows as `match` over all of [lo, hi).
   */
  candidates?(field: string, op: MatchOp, lo: number, hi: number): Int32Array | null
  /**
   * Optional: `field` for reading a few rows (values built when a row is read, nothing decoded
   * up front), or null when this table has no cheaper form than `column(field)`. Same values as
   * `column(field)` at every row index of the table. `reads`: about how many rows will be read.
   */
  rowView?(field: string, reads: number): ArrayLike<unknown> | null
  /**
   * Optional: `field` rendered from its stored JSON form (bytes copied, see util/json-bytes.ts), or null
   * when this table holds it in no such form. Same text as the compiled writers render from
   * `column(field)` at every row index (u64 and i64 as bare integers with `bigintsAsNumbers`).
   */
  tokens?(field: string, bigintsAsNumbers: boolean): JsonTokens | null
  /**
   * Optional: `tokens` for reading a few rows (each row's JSON built when first written, nothing
   * read up front), or null when this table has no such form (then `rowView`). Same text as
   * `tokens` (u64 and i64 as bare integers with `bigintsAsNumbers`). `reads`: about how many rows
   * will be written.
   */
  rowTokens?(field: string, reads: number, bigintsAsNumbers?: boolean): JsonTokens | null
}

export interface Chunk {
  /** lowest and highest block number held */
  readonly firstBlock: number
  readonly lastBlock: number
  /** number of produced blocks held (skipped slots are not blocks) */
  readonly blockCount: number
  /** header column, indexed by block position 0..blockCount-1, ascending block number */
  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]>
  /** the table of a record kind of the chunk's dataset */
  table(kind: string): Table
  /**
   * Optional pruning hint: return false only when certainly no row of `kind` has a value of
   * `field` in `values` (for list fields such as `accounts`: any element). true = "maybe".
   */
  mayContain?(kind: string, field: string, values: ReadonlySet<string>): boolean
}

export interface HeadInfo {
  number: number
  hash: string
}
