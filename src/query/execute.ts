/**
 * Generic query execution over columnar chunks: filters evaluated column-wise into candidate row
 * lists, relations (data in spec.ts) run by one planner, rows rendered by compiled writers.
 */
import { BLOCK_MEMBERS, type FieldDef } from '../catalogue.ts'
import type { RecordKind } from '../model.ts'
import type { Chunk, MatchOp, Table } from '../store/chunk.ts'
import type { BlockStore } from '../store/types.ts'
import { formTag, LineBuf, recycleLine, type JsonTokens } from '../util/json-bytes.ts'
import type { CompiledFilter, ItemRequest, ParsedQuery, SelectedField } from './parse.ts'
import {
  compileByteWriter,
  compileWriter,
  selectedDefs,
  type ByteRowWriter,
  type ByteWriterFactory,
  type ColumnTake,
  type RowWriter,
  type WriterFactory,
} from './render.ts'
import type { JoinKind, RelationDecl } from './spec.ts'
import { lowerBound } from '../util/search.ts'

export interface ExecuteOptions {
  /** inclusive upper block bound decided by the server (min(toBlock, head)) */
  to: number
  /** passed to store.chunks */
  finalizedOnly: boolean
  /** render u64/i64 as bare exact integers instead of decimal strings */
  bigintsAsNumbers?: boolean
  /** checked after each produced block is processed; true → end early (at a block boundary) */
  shouldStop?: () => boolean
  /**
   * Called inside the work of a block (filtering a chunk, decoding its columns, rendering the rows
   * of a big block) each time about `sliceMs` of it ran without a yield, so that the caller can let
   * other work run (other streams, the event loop); resolving to false ends the iteration there,
   * without the block (the consumer is gone). Without it a block is one synchronous piece of work.
   */
  pause?: () => Promise<boolean>
  /** ms of work between pauses (default 8) */
  sliceMs?: number
  /**
   * Asked before the work of each chunk begins (the server's memory limit, src/server/memory-gate.ts):
   * resolves to the release called once the chunk's blocks are out (or the iteration ended), or
   * to null to end the iteration there (the consumer is gone)
   */
  enterChunk?: () => Promise<(() => void) | null>
}

const HEADER_OPEN = Buffer.from('{"header":')
const noWriter: RowWriter = () => {
  throw new Error('string writer of a chunk rendered as bytes')
}

/** the engine's clock for `pause`: one reading per PAUSE_ROWS rows rendered */
const PAUSE_ROWS = 64

/**
 * When the current slice of synchronous work began, and the pause to take once it is long. A
 * slice begins at its first check after a yield (`reset` reads no clock: it runs once per block
 * output, and the checks come at most PAUSE_ROWS rows apart, or before a chunk's filters).
 */
class Slicer {
  /** when the slice began; -1: at the next check */
  private start = -1

  constructor(
    private readonly pause: (() => Promise<boolean>) | undefined,
    private readonly sliceMs: number,
  ) {}

  /** a yield happened (the consumer ran): a new slice begins */
  reset(): void {
    this.start = -1
  }

  /** true when the slice is long enough for a pause */
  get due(): boolean {
    if (this.pause === undefined) return false
    const now = performance.now()
    if (this.start < 0) {
      this.start = now
      return false
    }
    return now - this.start >= this.sliceMs
  }

  /** pause now; false = stop */
  async take(): Promise<boolean> {
    const go = await this.pause!()
    this.start = performance.now()
    return go
  }
}

export interface OutputBlock {
  number: number
  hash: string
  /** one JSON object, no newline */
  line: string
  /**
   * the same line as UTF-8 bytes, when the engine rendered it as bytes (then `line` is decoded from
   * them only when read): consumers that write bytes take these
   */
  bytes?: Buffer
  /**
   * true when the block holds no selected row and is output only as a boundary of the range (the
   * first or last produced block, or where `shouldStop` ended it); false with `includeAllBlocks`
   */
  empty: boolean
}

interface KindPlan {
  kind: RecordKind
  /** `,"<member>":[` */
  open: string
  requests: ItemRequest[]
  /** relations of the query that add rows of this kind */
  incoming: RelationDecl[]
  defs: FieldDef[]
  fields: readonly SelectedField[]
  writer: WriterFactory
  /** `open` as bytes */
  openBytes: Uint8Array
  /** byte writers by the way each column is taken (`takesKey`): looked up once per chunk */
  byteWriters: Map<string, ByteWriterFactory>
}

interface Plan {
  kinds: KindPlan[]
  byKind: Map<RecordKind, KindPlan>
  relations: RelationDecl[]
  headerDefs: FieldDef[]
  headerWriter: WriterFactory
  /** the header as bytes (its values taken as they are) */
  headerBytes: ByteWriterFactory
  /** per request: candidate row buffer reused across chunks (one execution only) */
  scratch: Map<ItemRequest, Int32Array>
  /** per kind: the memory of the selection mask, reused across chunks (one chunk's at a time) */
  masks: Map<RecordKind, MaskMemory>
}

function makePlan(q: ParsedQuery, bigintsAsNumbers: boolean): Plan {
  const relations: RelationDecl[] = []
  for (const r of q.requests) for (const rel of r.relations) if (!relations.includes(rel)) relations.push(rel)
  const kinds: KindPlan[] = []
  const byKind = new Map<RecordKind, KindPlan>()
  for (const { kind, member } of BLOCK_MEMBERS) {
    const requests = q.requests.filter((r) => r.kind === kind)
    const incoming = relations.filter((r) => r.to === kind)
    if (requests.length === 0 && incoming.length === 0) continue
    const fields = q.fields[kind]
    const open = ',' + JSON.stringify(member) + ':['
    const kp: KindPlan = {
      kind,
      open,
      requests,
      incoming,
      defs: selectedDefs(fields),
      fields,
      writer: compileWriter(fields, bigintsAsNumbers),
      openBytes: Buffer.from(open),
      byteWriters: new Map(),
    }
    kinds.push(kp)
    byKind.set(kind, kp)
  }
  const headerDefs = selectedDefs(q.fields.block)
  return {
    kinds,
    byKind,
    relations,
    headerDefs,
    headerWriter: compileWriter(q.fields.block, bigintsAsNumbers),
    headerBytes: compileByteWriter(
      q.fields.block,
      bigintsAsNumbers,
      headerDefs.map(() => false),
    ),
    scratch: new Map(),
    masks: new Map(),
  }
}

function isProperPrefix(a: readonly number[], b: readonly number[]): boolean {
  if (a.length >= b.length) return false
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false
  return true
}

function sameAddress(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false
  return true
}

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
function applyFilter(f: CompiledFilter, t: Table, rows: Int32Array, n: number): number {
  if (t.match !== undefined) {
    const m = cachedMatchOp(f)
    if (m !== null) {
      const k = t.match(m.column, m.op, rows, n)
      if (k >= 0) return k
    }
  }
  let k = 0
  switch (f.op) {
    case 'in': {
      const col = t.column(f.column) as ArrayLike<string | null>
      const set = f.values as ReadonlySet<string | null>
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        if (set.has(col[r])) rows[k++] = r
      }
      return k
    }
    case 'bool': {
      const col = t.column(f.column) as ArrayLike<boolean>
      const v = f.value
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        if (col[r] === v) rows[k++] = r
      }
      return k
    }
    case 'at': {
      const col = t.column(f.column) as ArrayLike<readonly string[]>
      const set = f.values
      const idx = f.index
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        const a = col[r]
        if (a.length > idx && set.has(a[idx])) rows[k++] = r
      }
      return k
    }
    case 'any': {
      // a row passes when any element of any source list is in the set
      const set = f.values
      const cols = f.sources.map((s) => t.column(s.column) as ArrayLike<unknown>)
      const subs = f.sources.map((s) => s.sub)
      const ns = cols.length
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
    case 'prefix': {
      // groups by prefix length, ascending; a value shorter than a group's length matches no later group
      const col = t.column(f.column) as ArrayLike<string>
      const groups = f.groups
      const ng = groups.length
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
  }
}

/** the rows in [lo, hi) passing an account filter, from the table's index; null when it has none */
function indexLookup(t: Table, f: CompiledFilter, lo: number, hi: number): Int32Array | null {
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
function pushdownOrder(req: ItemRequest): readonly CompiledFilter[] {
  let o = PUSHDOWN_ORDER.get(req)
  if (o === undefined) {
    const list = (f: CompiledFilter) => f.op === 'at' || (f.op === 'any' && matchOp(f) !== null)
    o = [...req.filters.filter(list), ...req.filters.filter((f) => !list(f))]
    PUSHDOWN_ORDER.set(req, o)
  }
  return o
}

/** false when the chunk's pruning hint proves that the request matches no row */
function mayMatch(chunk: Chunk, kind: RecordKind, req: ItemRequest): boolean {
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

/** the memory of a kind's selection masks and the selection that used it last (cleared before reuse) */
interface MaskMemory {
  buf: Uint8Array
  /** the memory of the selections' lists of rows (`Selected.list`), as reused */
  rows: Int32Array
  last: Selected | null
}

/** rows selected for output of one kind in one chunk */
class Selected {
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

/** A source list of rows (ascending) for a relation. */
interface Source {
  rows: Int32Array
  n: number
}

class ChunkRun {
  private readonly tables = new Map<RecordKind, Table>()
  readonly selected = new Map<RecordKind, Selected>()
  private readonly sources = new Map<RelationDecl, Source[]>()

  constructor(
    readonly chunk: Chunk,
    readonly plan: Plan,
    /** block positions [bLo, bHi) */
    readonly bLo: number,
    readonly bHi: number,
  ) {}

  table(kind: RecordKind): Table {
    let t = this.tables.get(kind)
    if (!t) {
      t = this.chunk.table(kind)
      this.tables.set(kind, t)
    }
    return t
  }

  private sel(kind: RecordKind): Selected {
    let s = this.selected.get(kind)
    if (!s) {
      const off = this.table(kind).blockOffsets
      const base = off[this.bLo]
      const mask = this.mask(kind, off[this.bHi] - base)
      const mem = this.plan.masks.get(kind)!
      s = new Selected(base, mask, mem.rows)
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

  /**
   * a zeroed mask of `size` bytes for `kind`, in memory reused from chunk to chunk (a chunk's
   * selection is done with before the next chunk runs)
   */
  private mask(kind: RecordKind, size: number): Uint8Array {
    let mem = this.plan.masks.get(kind)
    if (!mem || mem.buf.length < size) {
      const n = Math.max(size, mem ? mem.buf.length * 2 : 0)
      mem = { buf: new Uint8Array(n), rows: new Int32Array(Math.ceil(n / SPARSE) + 1), last: null }
      this.plan.masks.set(kind, mem)
    } else if (mem.last !== null) {
      // the previous chunk's marks: the few rows it listed, else all of its range
      const prev = mem.last
      if (prev.list !== null) for (let k = 0; k < prev.count; k++) mem.buf[prev.list[k] - prev.base] = 0
      else mem.buf.fill(0, 0, prev.mask.length)
    }
    return mem.buf.subarray(0, size)
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

  private evaluate(kind: RecordKind, req: ItemRequest): void {
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
      if (joinRows(rel.join, src, dst, s.rows, s.n, this.bLo, sel)) marked = true
    }
    sel.any = before || marked
  }
}

/** Mark the rows of `dst` related to the source rows; returns whether any row was marked. */
function joinRows(
  join: JoinKind,
  src: Table,
  dst: Table,
  rows: Int32Array,
  n: number,
  bLo: number,
  sel: Selected,
): boolean {
  const sOff = src.blockOffsets
  const dOff = dst.blockOffsets
  const sTx = src.column('transactionIndex') as ArrayLike<number>
  const dTx = dst.column('transactionIndex') as ArrayLike<number>
  const few = n * SPARSE < src.rowCount
  const addrOf = (t: Table) =>
    ((few && t.rowView !== undefined ? t.rowView('instructionAddress', n * 4) : null) ??
      t.column('instructionAddress')) as ArrayLike<readonly number[]>
  let marked = false
  let b = bLo
  let lastB = -1
  let lastT = -1
  switch (join) {
    case 'tx': {
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
    case 'subtree': {
      // instructions are in depth-first order: the subtree follows its root contiguously
      const addr = addrOf(src)
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
    case 'parents': {
      const addr = addrOf(src)
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
    case 'address': {
      const sAddr = addrOf(src)
      const dAddr = addrOf(dst)
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        while (sOff[b + 1] <= r) b++
        const t = sTx[r]
        const a = sAddr[r]
        const end = dOff[b + 1]
        for (let x = lowerBound(dTx, t, dOff[b], end); x < end && dTx[x] === t; x++) {
          if (sameAddress(a, dAddr[x])) {
            sel.mark(x)
            marked = true
          }
        }
      }
      return marked
    }
  }
}

/**
 * A chunk's selected rows of a kind are "few" when fewer than 1 in SPARSE of its rows in range:
 * then they are rendered from `Table.rowView` (rows built when read) instead of fully decoded columns.
 */
const SPARSE = 8

/**
 * the columns for rendering the selected rows of `t` in [lo, hi) (decoding a column is a piece of
 * work of its own: a pause may come between columns); null = stop
 */
async function renderColumns(
  t: Table,
  defs: readonly FieldDef[],
  s: Selected,
  lo: number,
  hi: number,
  slicer: Slicer,
  /** take a column's stored JSON tokens where the table has them (byte output) */
  tokens: boolean,
  bigintsAsNumbers: boolean,
): Promise<(ArrayLike<unknown> | JsonTokens)[] | null> {
  let few = false
  let count = 0
  if (t.rowView !== undefined && s.list !== null) {
    count = s.count
    few = count < (hi - lo) / SPARSE
  } else if (t.rowView !== undefined) {
    const m = s.mask
    const limit = (hi - lo) / SPARSE
    for (let x = lo - s.base, end = hi - s.base; x < end && count < limit; x++) count += m[x]
    few = count < limit
  }
  const out: (ArrayLike<unknown> | JsonTokens)[] = []
  for (const d of defs) {
    if (slicer.due && !(await slicer.take())) return null
    out.push(
      (few
        ? ((tokens ? (t.rowTokens?.(d.name, count, bigintsAsNumbers) ?? null) : null) ?? t.rowView!(d.name, count))
        : tokens
          ? t.tokens!(d.name, bigintsAsNumbers)
          : null) ?? t.column(d.name),
    )
  }
  return out
}

function isTokens(c: ArrayLike<unknown> | JsonTokens): c is JsonTokens {
  return typeof (c as JsonTokens).write === 'function'
}

/** the plan's byte writer for columns taken as `takes` (compiled, or found in the writers' cache, once per plan) */
function byteWriterOf(kp: KindPlan, bigintsAsNumbers: boolean, takes: readonly ColumnTake[]): ByteWriterFactory {
  let key = ''
  for (const t of takes) key += (t === false ? '-' : t === true ? '+' : t) + '\u0001'
  let w = kp.byteWriters.get(key)
  if (w === undefined) {
    w = compileByteWriter(kp.fields, bigintsAsNumbers, takes)
    kp.byteWriters.set(key, w)
  }
  return w
}

/** how the byte writer takes a column: its values, its tokens' `write`, or their stored form inline */
function takeOf(c: ArrayLike<unknown> | JsonTokens): ColumnTake {
  if (!isTokens(c)) return false
  return c.form === undefined ? true : formTag(c.form)
}

/**
 * A block rendered as bytes (the cold store's tokens copied): `data` is its line and newline (as a
 * render worker's block carries them: the response writer takes them as they are), `bytes` the
 * line; `line`, the same as a string, is decoded only when read. Setting `line` or `data` drops
 * the bytes (a consumer done with them).
 */
class ByteBlock implements OutputBlock {
  private text: string | null = null
  /** the line without its newline, once asked for (`bytes`), or dropped (undefined) */
  private view: Buffer | null | undefined = null
  private full: Buffer

  constructor(
    readonly number: number,
    readonly hash: string,
    /** the line and its newline */
    data: Buffer,
    readonly empty: boolean,
  ) {
    this.full = data
  }

  /** the line (a view of `data` made when first read: the server writes `data` only) */
  get bytes(): Buffer | undefined {
    if (this.view === null) this.view = this.full.subarray(0, this.full.length - 1)
    return this.view
  }

  set bytes(v: Buffer | undefined) {
    this.view = v
  }

  get data(): Buffer {
    return this.full
  }

  set data(v: Buffer) {
    this.full = v
    this.view = undefined
    this.text = null
  }

  get line(): string {
    if (this.text === null) {
      const b = this.bytes
      this.text = b === undefined ? '' : b.toString('utf8')
    }
    return this.text
  }

  set line(v: string) {
    this.text = v
    this.view = undefined
    this.full = NO_BYTES
  }
}

const NO_BYTES = Buffer.alloc(0)

/**
 * A block held back and not handed out after all: its line's bytes go back to their line buffer
 * (`recycleLine`), which is reused once its other lines are back too; null.
 */
function drop(b: OutputBlock): null {
  if (b instanceof ByteBlock) recycleLine(b.data)
  return null
}

interface BoundKind {
  open: string
  mask: Uint8Array
  base: number
  /** the selected rows ascending when few (then output visits them only), else null */
  rows: Int32Array | null
  /** next position in rows */
  p: number
  offsets: ArrayLike<number>
  write: RowWriter
  /** byte output: `open` as bytes and the byte writer (null in string output) */
  openBytes: Uint8Array | null
  writeBytes: ByteRowWriter | null
}

/**
 * Stream the query's output blocks (docs/query.md §4): ascending, produced blocks only, the first
 * and the last produced block of the covered range always present.
 */
export async function* executeQuery(
  store: BlockStore,
  q: ParsedQuery,
  opts: ExecuteOptions,
): AsyncGenerator<OutputBlock> {
  const from = q.fromBlock
  const to = q.toBlock !== undefined && q.toBlock < opts.to ? q.toBlock : opts.to
  if (to < from) return
  const bigints = opts.bigintsAsNumbers === true
  const plan = makePlan(q, bigints)
  let lineBuf: LineBuf | null = null
  const shouldStop = opts.shouldStop
  const slicer = new Slicer(opts.pause, opts.sliceMs ?? 8)
  const pausing = opts.pause !== undefined
  let first = true
  let pending: OutputBlock | null = null
  const enterChunk = opts.enterChunk
  /** the release of the chunk being worked on (see `enterChunk`) */
  let leave: (() => void) | null = null
  try {
    for await (const chunk of store.chunks(from, to, opts.finalizedOnly)) {
      if (chunk.blockCount === 0 || chunk.lastBlock < from || chunk.firstBlock > to) continue
      const numbers = chunk.header('number')
      const bLo = lowerBound(numbers, from, 0, chunk.blockCount)
      const bHi = lowerBound(numbers, to + 1, bLo, chunk.blockCount)
      if (bLo >= bHi) continue
      const hashes = chunk.header('hash')

      leave?.()
      leave = null
      if (enterChunk !== undefined && (leave = await enterChunk()) === null) return
      const run = new ChunkRun(chunk, plan, bLo, bHi)
      if (!(await run.run(slicer))) return
      const bound: BoundKind[] = []
      /** the columns of this chunk's render (`done` once its blocks are written) */
      const used: (ArrayLike<unknown> | JsonTokens)[] = []
      // byte output when every rendered table can hand over stored JSON tokens (the cold store)
      let bytes = true
      for (const kp of plan.kinds) {
        const s = run.selected.get(kp.kind)
        if (s && s.any && run.table(kp.kind).tokens === undefined) bytes = false
      }
      for (const kp of plan.kinds) {
        const s = run.selected.get(kp.kind)
        if (!s || !s.any) continue
        const t = run.table(kp.kind)
        const cols = await renderColumns(
          t,
          kp.defs,
          s,
          t.blockOffsets[bLo],
          t.blockOffsets[bHi],
          slicer,
          bytes,
          bigints,
        )
        if (cols === null) return
        used.push(...cols)
        const takes = cols.map(takeOf)
        bound.push({
          open: kp.open,
          mask: s.mask,
          base: s.base,
          rows: s.sorted(),
          p: 0,
          offsets: t.blockOffsets,
          write: bytes ? noWriter : kp.writer(cols as ArrayLike<unknown>[]),
          openBytes: bytes ? kp.openBytes : null,
          writeBytes: bytes ? byteWriterOf(kp, bigints, takes)(cols) : null,
        })
      }
      const headerCols = plan.headerDefs.map((d) => chunk.header(d.name as 'number'))

      if (bytes) {
        const header = plan.headerBytes(headerCols)
        const o = (lineBuf ??= new LineBuf())
        for (let b = bLo; b < bHi; b++) {
          if (pending !== null) pending = drop(pending) // a later block exists: the pending one was not the last
          o.begin()
          o.raw(HEADER_OPEN)
          header(b, o)
          const headerEnd = o.pos
          for (let k = 0; k < bound.length; k++) {
            const bk = bound[k]
            const w = bk.writeBytes!
            let open = false
            const rows = bk.rows
            if (rows !== null) {
              const endRow = bk.offsets[b + 1]
              let p = bk.p
              for (; p < rows.length && rows[p] < endRow; p++) {
                if (open) o.byte(0x2c)
                else o.raw(bk.openBytes!)
                open = true
                w(rows[p], o)
                if (pausing && p % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return
              }
              bk.p = p
            } else {
              const m = bk.mask
              const base = bk.base
              const end = bk.offsets[b + 1] - base
              for (let x = bk.offsets[b] - base; x < end; x++) {
                if (m[x] === 1) {
                  if (open) o.byte(0x2c)
                  else o.raw(bk.openBytes!)
                  open = true
                  w(x + base, o)
                }
                if (pausing && x % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return
              }
            }
            if (open) o.byte(0x5d)
          }
          o.byte(0x7d)
          const number = numbers[b]
          const empty = o.pos === headerEnd + 1 && !q.includeAllBlocks
          let emitted = false
          if (!empty || first || number === to) {
            emitted = true
            yield new ByteBlock(number, hashes[b], o.takeLine(), empty)
            slicer.reset()
          } else if (b === bHi - 1) {
            // possibly the last produced block of the range: keep it until a later block shows up
            pending = new ByteBlock(number, hashes[b], o.takeLine(), empty)
          }
          first = false
          if (shouldStop !== undefined && shouldStop()) {
            if (!emitted) {
              const p = pending ?? new ByteBlock(number, hashes[b], o.takeLine(), empty)
              pending = null
              yield p
            }
            return
          }
        }
        for (const c of used) if (isTokens(c)) c.done?.()
        continue
      }
      const header = plan.headerWriter(headerCols)
      for (let b = bLo; b < bHi; b++) {
        if (pending !== null) pending = drop(pending) // a later block exists: the pending one was not the last
        let body = ''
        for (let k = 0; k < bound.length; k++) {
          const bk = bound[k]
          let part = ''
          let sep = bk.open
          const rows = bk.rows
          if (rows !== null) {
            const endRow = bk.offsets[b + 1]
            let p = bk.p
            for (; p < rows.length && rows[p] < endRow; p++) {
              part += sep + bk.write(rows[p])
              sep = ','
              if (pausing && p % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return
            }
            bk.p = p
          } else {
            const m = bk.mask
            const base = bk.base
            const end = bk.offsets[b + 1] - base
            for (let x = bk.offsets[b] - base; x < end; x++) {
              if (m[x] === 1) {
                part += sep + bk.write(x + base)
                sep = ','
              }
              if (pausing && x % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return
            }
          }
          if (part !== '') body += part + ']'
        }
        const number = numbers[b]
        const empty = body === '' && !q.includeAllBlocks
        let emitted = false
        if (!empty || first || number === to) {
          emitted = true
          yield { number, hash: hashes[b], line: '{"header":' + header(b) + body + '}', empty }
          slicer.reset()
        } else if (b === bHi - 1) {
          // possibly the last produced block of the range: keep it until a later block shows up
          pending = { number, hash: hashes[b], line: '{"header":' + header(b) + '}', empty }
        }
        first = false
        if (shouldStop !== undefined && shouldStop()) {
          if (!emitted) yield pending ?? { number, hash: hashes[b], line: '{"header":' + header(b) + '}', empty }
          return
        }
      }
    }
    if (pending !== null) {
      const p = pending
      pending = null
      yield p
    }
  } finally {
    ;(leave as (() => void) | null)?.()
    // a line taken and never handed out (the iteration ended early) is back too
    if (pending !== null) drop(pending)
    // the lines' memory comes back once they are written (src/server/line-writer.ts)
    ;(lineBuf as LineBuf | null)?.close()
  }
}
