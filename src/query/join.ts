/**
 * Relations run over one chunk: the rows of the target table related to the source rows, found
 * through the relation's key columns (a group column such as a transaction's index, and for the
 * tree relations a path column such as an instruction's address). Rows of a table are grouped by
 * block and ascending by the group column inside a block; a tree is stored depth-first.
 */
import type { RelationDecl } from '../dataset/types.ts'
import type { Table } from '../store/chunk.ts'
import { lowerBound } from '../util/search.ts'
import { SPARSE, type Selected } from './select.ts'

function isProperPrefix(a: readonly number[], b: readonly number[]): boolean {
  if (a.length >= b.length) return false
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false
  return true
}

function samePath(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false
  return true
}

/** the path column of `t`: built per row read when the source rows are few and the table can */
function pathColumn(t: Table, column: string, few: boolean, n: number): ArrayLike<readonly number[]> {
  return ((few && t.rowView !== undefined ? t.rowView(column, n * 4) : null) ?? t.column(column)) as ArrayLike<
    readonly number[]
  >
}

/**
 * Mark the rows of `dst` related to the source rows `rows[0..n)` of `src` (ascending, from block
 * position `bLo` on); returns whether any row was marked.
 */
export function joinRows(
  rel: RelationDecl,
  src: Table,
  dst: Table,
  rows: Int32Array,
  n: number,
  bLo: number,
  sel: Selected,
): boolean {
  const few = n * SPARSE < src.rowCount
  switch (rel.join) {
    case 'group':
      return joinGroup(rel.group, src, dst, rows, n, bLo, sel)
    case 'subtree':
      return joinSubtree(rel.group, pathColumn(src, rel.path!, few, n), src, rows, n, bLo, sel)
    case 'parents':
      return joinParents(rel.group, pathColumn(src, rel.path!, few, n), src, rows, n, bLo, sel)
    case 'path':
      return joinPath(
        rel,
        pathColumn(src, rel.path!, few, n),
        pathColumn(dst, rel.path!, few, n),
        src,
        dst,
        rows,
        n,
        bLo,
        sel,
      )
  }
}

/** target rows of the same group */
function joinGroup(group: string, src: Table, dst: Table, rows: Int32Array, n: number, bLo: number, sel: Selected) {
  const sOff = src.blockOffsets
  const dOff = dst.blockOffsets
  const sTx = src.column(group) as ArrayLike<number>
  const dTx = dst.column(group) as ArrayLike<number>
  let marked = false
  let b = bLo
  let lastB = -1
  let lastT = -1
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    while (sOff[b + 1] <= r) b++
    const t = sTx[r]
    if (b === lastB && t === lastT) continue
    lastB = b
    lastT = t
    const end = dOff[b + 1]
    for (let x = lowerBound(dTx, t, dOff[b], end); x < end && dTx[x] === t; x++) {
      sel.mark(x)
      marked = true
    }
  }
  return marked
}

/** the subtree of each source row: it follows its root contiguously (depth-first order) */
function joinSubtree(
  group: string,
  addr: ArrayLike<readonly number[]>,
  src: Table,
  rows: Int32Array,
  n: number,
  bLo: number,
  sel: Selected,
): boolean {
  const sOff = src.blockOffsets
  const sTx = src.column(group) as ArrayLike<number>
  let marked = false
  let b = bLo
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    while (sOff[b + 1] <= r) b++
    const end = sOff[b + 1]
    const t = sTx[r]
    const a = addr[r]
    for (let x = r + 1; x < end && sTx[x] === t && isProperPrefix(a, addr[x]); x++) {
      sel.mark(x)
      marked = true
    }
  }
  return marked
}

/** the ancestors of each source row: before it in its group, up to a root (a path of length 1) */
function joinParents(
  group: string,
  addr: ArrayLike<readonly number[]>,
  src: Table,
  rows: Int32Array,
  n: number,
  bLo: number,
  sel: Selected,
): boolean {
  const sOff = src.blockOffsets
  const sTx = src.column(group) as ArrayLike<number>
  let marked = false
  let b = bLo
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    while (sOff[b + 1] <= r) b++
    const start = sOff[b]
    const t = sTx[r]
    const a = addr[r]
    if (a.length <= 1) continue
    for (let x = r - 1; x >= start && sTx[x] === t; x--) {
      const p = addr[x]
      if (isProperPrefix(p, a)) {
        sel.mark(x)
        marked = true
      }
      if (p.length === 1) break
    }
  }
  return marked
}

/** target rows of the same group with the same path */
function joinPath(
  rel: RelationDecl,
  sAddr: ArrayLike<readonly number[]>,
  dAddr: ArrayLike<readonly number[]>,
  src: Table,
  dst: Table,
  rows: Int32Array,
  n: number,
  bLo: number,
  sel: Selected,
): boolean {
  const sOff = src.blockOffsets
  const dOff = dst.blockOffsets
  const sTx = src.column(rel.group) as ArrayLike<number>
  const dTx = dst.column(rel.group) as ArrayLike<number>
  let marked = false
  let b = bLo
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    while (sOff[b + 1] <= r) b++
    const t = sTx[r]
    const a = sAddr[r]
    const end = dOff[b + 1]
    for (let x = lowerBound(dTx, t, dOff[b], end); x < end && dTx[x] === t; x++) {
      if (samePath(a, dAddr[x])) {
        sel.mark(x)
        marked = true
      }
    }
  }
  return marked
}
