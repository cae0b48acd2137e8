/**
 * Filters evaluated over a table's candidate rows: pushed down to the table's stored form where it
 * can answer them (`Table.match`, `Table.candidates`), else one tight loop per operator over
 * `column()`; and the chunk-level pruning hint (`Chunk.mayContain`).
 */
import type { Chunk, MatchOp, Table } from '../store/chunk.ts'
import type { CompiledFilter, ItemRequest } from './parse.ts'

type Filter<Op extends CompiledFilter['op']> = Extract<CompiledFilter, { op: Op }>

/** the filter as a `Table.match` operation, or null when it has none (`any` over several or sub-fields) */
function matchOp(f: CompiledFilter): { column: string; op: MatchOp } | null {
  switch (f.op) {
    case 'in':
      return { column: f.column, op: { in: f.values } }
    case 'at':
      return { column: f.column, op: { at: f.index, values: f.values } }
    case 'prefix':
      return { column: f.column, op: { prefix: f.groups } }
    case 'bool':
      return { column: f.column, op: { bool: f.value } }
    case 'any':
      return f.sources.length === 1 && f.sources[0].sub === undefined
        ? { column: f.sources[0].column, op: { any: f.values } }
        : null
    default:
      return null
  }
}

const MATCH_OPS = new WeakMap<CompiledFilter, { column: string; op: MatchOp } | null>()

function cachedMatchOp(f: CompiledFilter): { column: string; op: MatchOp } | null {
  let m = MATCH_OPS.get(f)
  if (m === undefined) MATCH_OPS.set(f, (m = matchOp(f)))
  return m
}

/**
 * Keep the rows of `rows[0..n)` that pass one filter (in place); returns how many were kept.
 * Pushed down to the table when it can evaluate the filter on its stored form (`Table.match`),
 * else every operator is one tight loop over the candidate rows of `column()`.
 */
export function applyFilter(f: CompiledFilter, t: Table, rows: Int32Array, n: number): number {
  if (t.match !== undefined) {
    const m = cachedMatchOp(f)
    if (m !== null) {
      const k = t.match(m.column, m.op, rows, n)
      if (k >= 0) return k
    }
  }
  switch (f.op) {
    case 'in':
      return keepIn(f, t, rows, n)
    case 'bool':
      return keepBool(f, t, rows, n)
    case 'at':
      return keepAt(f, t, rows, n)
    case 'any':
      return keepAny(f, t, rows, n)
    case 'prefix':
      return keepPrefix(f, t, rows, n)
  }
}

function keepIn(f: Filter<'in'>, t: Table, rows: Int32Array, n: number): number {
  const col = t.column(f.column) as ArrayLike<string | null>
  const set = f.values as ReadonlySet<string | null>
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    if (set.has(col[r])) rows[k++] = r
  }
  return k
}

function keepBool(f: Filter<'bool'>, t: Table, rows: Int32Array, n: number): number {
  const col = t.column(f.column) as ArrayLike<boolean>
  const v = f.value
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    if (col[r] === v) rows[k++] = r
  }
  return k
}

function keepAt(f: Filter<'at'>, t: Table, rows: Int32Array, n: number): number {
  const col = t.column(f.column) as ArrayLike<readonly string[]>
  const set = f.values
  const idx = f.index
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    const a = col[r]
    if (a.length > idx && set.has(a[idx])) rows[k++] = r
  }
  return k
}

/** a row passes when any element of any source list is in the set */
function keepAny(f: Filter<'any'>, t: Table, rows: Int32Array, n: number): number {
  const set = f.values
  const cols = f.sources.map((s) => t.column(s.column) as ArrayLike<unknown>)
  const subs = f.sources.map((s) => s.sub)
  const ns = cols.length
  let k = 0
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    let hit = false
    for (let s = 0; s < ns && !hit; s++) {
      let v = cols[s][r] as unknown
      const sub = subs[s]
      if (sub !== undefined && v !== null && v !== undefined) v = (v as Record<string, unknown>)[sub]
      if (v === null || v === undefined) continue
      const list = v as readonly string[]
      for (let e = 0; e < list.length; e++) {
        if (set.has(list[e])) {
          hit = true
          break
        }
      }
    }
    if (hit) rows[k++] = r
  }
  return k
}

/** groups by prefix length, ascending; a value shorter than a group's length matches no later group */
function keepPrefix(f: Filter<'prefix'>, t: Table, rows: Int32Array, n: number): number {
  const col = t.column(f.column) as ArrayLike<string>
  const groups = f.groups
  const ng = groups.length
  let k = 0
  if (ng === 1 && groups[0].values.size === 1) {
    const p = groups[0].values.values().next().value as string
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      if (col[r].startsWith(p)) rows[k++] = r
    }
    return k
  }
  for (let j = 0; j < n; j++) {
    const r = rows[j]
    const s = col[r]
    for (let g = 0; g < ng; g++) {
      const len = groups[g].length
      if (s.length < len) break
      if (groups[g].values.has(s.length === len ? s : s.slice(0, len))) {
        rows[k++] = r
        break
      }
    }
  }
  return k
}

/** the rows in [lo, hi) passing an account filter, from the table's index; null when it has none */
export function indexLookup(t: Table, f: CompiledFilter, lo: number, hi: number): Int32Array | null {
  if (f.op !== 'at' && f.op !== 'any') return null
  const m = cachedMatchOp(f)
  return m === null ? null : t.candidates!(m.column, m.op, lo, hi)
}

const PUSHDOWN_ORDER = new WeakMap<ItemRequest, readonly CompiledFilter[]>()

/**
 * The filters of a request in the order used with `Table.match`: account filters (`at`, `any`) first,
 * since a table can answer them from postings without touching the other rows (filters are AND-ed:
 * the order does not change the result).
 */
export function pushdownOrder(req: ItemRequest): readonly CompiledFilter[] {
  let o = PUSHDOWN_ORDER.get(req)
  if (o === undefined) {
    const list = (f: CompiledFilter) => f.op === 'at' || (f.op === 'any' && matchOp(f) !== null)
    o = [...req.filters.filter(list), ...req.filters.filter((f) => !list(f))]
    PUSHDOWN_ORDER.set(req, o)
  }
  return o
}

/** false when the chunk's pruning hint proves that the request matches no row */
export function mayMatch(chunk: Chunk, kind: string, req: ItemRequest): boolean {
  if (!chunk.mayContain) return true
  for (const f of req.filters) {
    if (f.op === 'in' || f.op === 'at') {
      if (!chunk.mayContain(kind, f.column, f.values)) return false
    } else if (f.op === 'any') {
      let maybe = false
      for (const s of f.sources) {
        if (chunk.mayContain(kind, s.column, f.values)) {
          maybe = true
          break
        }
      }
      if (!maybe) return false
    }
  }
  return true
}
