/**
 * The one storage interface the query engine runs on (in-memory, hot and cold stores alike).
 *
 * A chunk is a contiguous range of produced blocks with all their rows in columnar form. Rows of
 * each kind are grouped by block (ascending block position) and, inside a block, sorted in the
 * order of semantics.md §2. Column values have the model's types (src/model.ts): bigint for u64,
 * null for absent values, arrays for list fields.
 */
import type { BlockHeader, RecordKind } from '../model.ts'

export interface Table {
  readonly rowCount: number
  /** length blockCount + 1: rows of block position b are [blockOffsets[b], blockOffsets[b + 1]) */
  readonly blockOffsets: ArrayLike<number>
  /** a stored column by model field name (catalogue `columnsOf(kind)`); throws for unknown names */
  column(field: string): ArrayLike<unknown>
}

export interface Chunk {
  /** lowest and highest block number held */
  readonly firstBlock: number
  readonly lastBlock: number
  /** number of produced blocks held (skipped slots are not blocks) */
  readonly blockCount: number
  /** header column, indexed by block position 0..blockCount-1, ascending block number */
  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]>
  table(kind: RecordKind): Table
  /**
   * Optional pruning hint: return false only when certainly no row of `kind` has a value of
   * `field` in `values` (for list fields such as `accounts`: any element). true = "maybe".
   */
  mayContain?(kind: RecordKind, field: string, values: ReadonlySet<string>): boolean
}

export interface HeadInfo {
  number: number
  hash: string
}
