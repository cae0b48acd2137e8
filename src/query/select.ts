/**
 * The rows of one chunk selected for output, per kind: a mask over the chunk's rows in range and,
 * while they are few, the list of the rows marked (memory reused from chunk to chunk).
 */

/**
 * A chunk's selected rows of a kind are "few" when fewer than 1 in SPARSE of its rows in range:
 * then they are rendered from `Table.rowView` (rows built when read) instead of fully decoded columns.
 */
export const SPARSE = 8

/** the memory of a kind's selection masks and the selection that used it last (cleared before reuse) */
export interface MaskMemory {
  buf: Uint8Array
  /** the memory of the selections' lists of rows (`Selected.list`), as reused */
  rows: Int32Array
  last: Selected | null
}

/** rows selected for output of one kind in one chunk */
export class Selected {
  /** mask[r - base] = 1 when row r is selected */
  readonly mask: Uint8Array
  any = false
  /**
   * the selected rows in the order they were marked while they are few (fewer than 1 in SPARSE
   * rows of the range): list[0, count), so that output visits them only; null when many (output
   * scans the mask). Memory reused from chunk to chunk (no array grown per chunk and run).
   */
  list: Int32Array | null
  count = 0
  private readonly limit: number

  constructor(
    readonly base: number,
    /** size bytes, all 0 */
    mask: Uint8Array,
    /** at least ceil(size / SPARSE) elements */
    rows: Int32Array,
  ) {
    this.mask = mask
    this.list = rows
    this.limit = mask.length / SPARSE
  }

  mark(r: number): void {
    const i = r - this.base
    if (this.mask[i] === 1) return
    this.mask[i] = 1
    const l = this.list
    if (l !== null) {
      if (this.count < this.limit) l[this.count++] = r
      else this.list = null
    }
  }

  all(): void {
    this.mask.fill(1)
    this.list = null
    this.any = true
  }

  /** the selected rows ascending when few, else null */
  sorted(): Int32Array | null {
    return this.list === null ? null : this.list.subarray(0, this.count).sort()
  }
}

/**
 * a kind's mask memory with at least `size` zeroed bytes: `mem` with the marks of the chunk that
 * used it last cleared, or new memory (twice as large) when it is too small
 */
export function maskMemory(mem: MaskMemory | undefined, size: number): MaskMemory {
  if (!mem || mem.buf.length < size) {
    const n = Math.max(size, mem ? mem.buf.length * 2 : 0)
    return { buf: new Uint8Array(n), rows: new Int32Array(Math.ceil(n / SPARSE) + 1), last: null }
  }
  if (mem.last !== null) {
    // the previous chunk's marks: the few rows it listed, else all of its range
    const prev = mem.last
    if (prev.list !== null) for (let k = 0; k < prev.count; k++) mem.buf[prev.list[k] - prev.base] = 0
    else mem.buf.fill(0, 0, prev.mask.length)
  }
  return mem
}
