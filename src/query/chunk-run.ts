/**
 * The selection of one chunk: each request's filters evaluated column-wise into candidate rows,
 * then the relations run from them, rows marked in per-kind masks (select.ts).
 */
import type { RelationDecl } from '../dataset/types.ts'
import type { Chunk, Table } from '../store/chunk.ts'
import { applyFilter, indexLookup, mayMatch, pushdownOrder } from './filter.ts'
import { joinRows } from './join.ts'
import type { ItemRequest } from './parse.ts'
import type { Plan } from './plan.ts'
import { maskMemory, Selected } from './select.ts'
import type { Slicer } from './slicer.ts'

/** A source list of rows (ascending) for a relation. */
interface Source {
  rows: Int32Array
  n: number
}

export class ChunkRun {
  private readonly tables = new Map<string, Table>()
  readonly selected = new Map<string, Selected>()
  private readonly sources = new Map<RelationDecl, Source[]>()

  constructor(
    readonly chunk: Chunk,
    readonly plan: Plan,
    /** block positions [bLo, bHi) */
    readonly bLo: number,
    readonly bHi: number,
  ) {}

  table(kind: string): Table {
    let t = this.tables.get(kind)
    if (!t) {
      t = this.chunk.table(kind)
      this.tables.set(kind, t)
    }
    return t
  }

  private sel(kind: string): Selected {
    let s = this.selected.get(kind)
    if (!s) {
      const off = this.table(kind).blockOffsets
      const base = off[this.bLo]
      const size = off[this.bHi] - base
      // a zeroed mask in memory reused from chunk to chunk (a chunk's selection is done with
      // before the next chunk runs)
      const mem = maskMemory(this.plan.masks.get(kind), size)
      this.plan.masks.set(kind, mem)
      s = new Selected(base, mem.buf.subarray(0, size), mem.rows)
      mem.last = s
      this.selected.set(kind, s)
    }
    return s
  }

  /** filters then relations, pausing between steps when a slice is used up; false = stop */
  async run(slicer: Slicer): Promise<boolean> {
    for (const kp of this.plan.kinds) {
      for (const req of kp.requests) {
        if (slicer.due && !(await slicer.take())) return false
        this.evaluate(kp.kind, req)
      }
    }
    for (const rel of this.plan.relations) {
      const srcs = this.sources.get(rel)
      if (!srcs) continue
      if (slicer.due && !(await slicer.take())) return false
      this.join(rel, srcs)
    }
    return true
  }

  /** the candidate row buffer of a request, reused from chunk to chunk */
  private scratch(req: ItemRequest, size: number): Int32Array {
    let buf = this.plan.scratch.get(req)
    if (!buf || buf.length < size) {
      buf = new Int32Array(Math.max(size, buf ? buf.length * 2 : 0))
      this.plan.scratch.set(req, buf)
    }
    return buf
  }

  private evaluate(kind: string, req: ItemRequest): void {
    if (!mayMatch(this.chunk, kind, req)) return
    const t = this.table(kind)
    const off = t.blockOffsets
    const lo = off[this.bLo]
    const hi = off[this.bHi]
    if (hi <= lo) return
    if (req.filters.length === 0 && req.relations.length === 0) {
      this.sel(kind).all()
      return
    }
    const filters = t.match !== undefined ? pushdownOrder(req) : req.filters
    let rows: Int32Array
    let n = 0
    let first = 0
    // the first filter straight from an index when the table has one (only its rows are visited)
    const found = t.candidates !== undefined && filters.length > 0 ? indexLookup(t, filters[0], lo, hi) : null
    if (found !== null) {
      rows = this.scratch(req, found.length)
      rows.set(found)
      n = found.length
      first = 1
      if (n === 0) return
    } else {
      rows = this.scratch(req, hi - lo)
      for (let r = lo; r < hi; r++) rows[n++] = r
    }
    for (let i = first; i < filters.length; i++) {
      n = applyFilter(filters[i], t, rows, n)
      if (n === 0) return
    }
    const s = this.sel(kind)
    for (let j = 0; j < n; j++) s.mark(rows[j])
    s.any = true
    for (const rel of req.relations) {
      let list = this.sources.get(rel)
      if (!list) this.sources.set(rel, (list = []))
      list.push({ rows, n })
    }
  }

  private join(rel: RelationDecl, srcs: Source[]): void {
    const src = this.table(rel.from)
    const dst = this.table(rel.to)
    const sel = this.sel(rel.to)
    const before = sel.any
    let marked = false
    for (const s of srcs) {
      if (joinRows(rel, src, dst, s.rows, s.n, this.bLo, sel)) marked = true
    }
    sel.any = before || marked
  }
}
