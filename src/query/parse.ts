/**
 * Strict validation of a data query (docs/query.md §2) into a plan-ready form. Generic over a
 * dataset declaration (src/dataset/types.ts): its requests, filters, relations and fields.
 */
import { DEFAULT_DATASET } from '../catalogue.ts'
import {
  filterValueKind,
  type Dataset,
  type FieldDef,
  type FilterDecl,
  type RelationDecl,
  type RequestDecl,
} from '../dataset/types.ts'
import { base58Decode, isAddress, isBase58Text } from '../util/base58.ts'
import { QueryError } from './errors.ts'

export interface QueryLimits {
  /** total number of item requests over all kinds */
  maxItemRequests: number
  /** number of values in one filter list */
  maxFilterValues: number
}

export const DEFAULT_LIMITS: QueryLimits = { maxItemRequests: 100, maxFilterValues: 100_000 }

/** One selected output key of a record: the catalogue field and the spelling the query used. */
export interface SelectedField {
  readonly def: FieldDef
  readonly key: string
}

/** selected fields per selector ('block' and each kind of the dataset) */
export type Selection = { readonly [selector: string]: readonly SelectedField[] }

export type CompiledFilter =
  | { readonly op: 'in'; readonly column: string; readonly values: ReadonlySet<string> }
  | { readonly op: 'bool'; readonly column: string; readonly value: boolean }
  | { readonly op: 'at'; readonly column: string; readonly index: number; readonly values: ReadonlySet<string> }
  | {
      readonly op: 'any'
      readonly sources: readonly { column: string; sub?: string }[]
      readonly values: ReadonlySet<string>
    }
  | {
      readonly op: 'prefix'
      readonly column: string
      /** prefix lengths in characters (including `0x`), each with its set of lower-case prefixes */
      readonly groups: readonly { readonly length: number; readonly values: ReadonlySet<string> }[]
    }

export interface ItemRequest {
  readonly kind: string
  /** path of the request in the query, e.g. `.instructions[0]` */
  readonly path: string
  /** AND-ed; empty = matches every row */
  readonly filters: readonly CompiledFilter[]
  readonly relations: readonly RelationDecl[]
}

export interface ParsedQuery {
  /** the dataset queried: its declaration drives planning, execution and rendering */
  dataset: Dataset
  fromBlock: number
  toBlock?: number
  parentBlockHash?: string
  includeAllBlocks: boolean
  /** selected output fields per selector (catalogue order); empty = `{}` records */
  fields: Selection
  /**
   * Item requests that can match something (requests with an empty filter list match nothing and
   * are dropped here), in query order.
   */
  requests: readonly ItemRequest[]
}

/** the members a query of a dataset may have, per dataset */
const TOP_MEMBERS = new WeakMap<Dataset, ReadonlySet<string>>()

function topMembers(ds: Dataset): ReadonlySet<string> {
  let s = TOP_MEMBERS.get(ds)
  if (s === undefined) {
    s = new Set(['type', 'fromBlock', 'toBlock', 'parentBlockHash', 'includeAllBlocks', 'fields'])
    for (const r of ds.requests) (s as Set<string>).add(r.member)
    TOP_MEMBERS.set(ds, s)
  }
  return s
}

function fail(path: string, msg: string): never {
  throw new QueryError(`${path}: ${msg}`)
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function expectObject(v: unknown, path: string): Record<string, unknown> {
  if (!isObject(v)) fail(path, 'expected an object')
  return v
}

function expectBool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') fail(path, 'expected a boolean')
  return v
}

function expectBlockNumber(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(path, 'expected a non-negative integer')
  return v
}

function unknownMember(path: string, name: string): never {
  // a name from the request is quoted unless it is a plain identifier (no control characters echoed)
  fail(
    /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name.slice(0, 64))}]`,
    'unknown member',
  )
}

const HEX = /^0x[0-9a-fA-F]*$/

function parseStringList(v: unknown, path: string, limits: QueryLimits): string[] {
  if (!Array.isArray(v)) fail(path, 'expected an array of strings')
  if (v.length > limits.maxFilterValues) {
    fail(
      path,
      `${v.length} values, but at most ${limits.maxFilterValues} are allowed per filter (limit maxFilterValues)`,
    )
  }
  for (let i = 0; i < v.length; i++) {
    if (typeof v[i] !== 'string') fail(`${path}[${i}]`, 'expected a string')
  }
  return v as string[]
}

/** A filter value for an address column: a 32-byte base58 address, else a 400 naming the member. */
function checkAddressValue(s: string, path: string): void {
  const v: string = s
  if (isAddress(v)) return
  const shown = JSON.stringify(s.length > 64 ? s.slice(0, 64) + '…' : s)
  if (!isBase58Text(s)) fail(path, `expected a base58 address, got ${shown} (characters outside the base58 alphabet)`)
  fail(path, `expected a base58 address of 32 bytes, got ${shown} (${base58Decode(s).length} bytes)`)
}

/** returns null when the filter matches nothing (empty list) */
function compileFilter(d: FilterDecl, v: unknown, path: string, limits: QueryLimits): CompiledFilter | null {
  if (d.op === 'bool') return { op: 'bool', column: d.column, value: expectBool(v, path) }
  const list = parseStringList(v, path, limits)
  if (filterValueKind(d) === 'address')
    for (let i = 0; i < list.length; i++) checkAddressValue(list[i], `${path}[${i}]`)
  switch (d.op) {
    case 'in':
      if (d.allowed) {
        for (let i = 0; i < list.length; i++) {
          if (!d.allowed.includes(list[i])) {
            fail(`${path}[${i}]`, `expected one of ${d.allowed.map((a) => JSON.stringify(a)).join(', ')}`)
          }
        }
      }
      return list.length ? { op: 'in', column: d.column, values: new Set(list) } : null
    case 'at':
      return list.length ? { op: 'at', column: d.column, index: d.index, values: new Set(list) } : null
    case 'any':
      return list.length ? { op: 'any', sources: d.sources, values: new Set(list) } : null
    case 'prefix': {
      const byLength = new Map<number, Set<string>>()
      for (let i = 0; i < list.length; i++) {
        const s = list[i]
        if (d.bytes > 0) {
          if (s.length !== 2 + 2 * d.bytes || !HEX.test(s)) {
            fail(`${path}[${i}]`, `expected 0x followed by ${2 * d.bytes} hex digits`)
          }
        } else if (!HEX.test(s) || s.length % 2 !== 0 || s.length > 2 + 2 * d.maxBytes) {
          fail(`${path}[${i}]`, `expected 0x followed by an even number of hex digits, at most ${2 * d.maxBytes}`)
        }
        let set = byLength.get(s.length)
        if (!set) byLength.set(s.length, (set = new Set()))
        set.add(s.toLowerCase())
      }
      if (!list.length) return null
      const groups = [...byLength.entries()].sort((a, b) => a[0] - b[0]).map(([length, values]) => ({ length, values }))
      return { op: 'prefix', column: d.column, groups }
    }
  }
}

/** evaluation cost rank: cheap scalar tests first */
function filterRank(f: CompiledFilter): number {
  switch (f.op) {
    case 'in':
      return 0
    case 'prefix':
      return 1
    case 'at':
      return 2
    case 'bool':
      return 3
    case 'any':
      return 4
  }
}

function parseFields(v: unknown, ds: Dataset): Selection {
  const out: { [selector: string]: SelectedField[] } = {}
  for (const s of ds.selectorNames) out[s] = []
  if (v === undefined) return out
  const obj = expectObject(v, '.fields')
  for (const name of Object.keys(obj)) {
    if (!ds.selectorNames.includes(name)) unknownMember('.fields', name)
    const sel = name
    const path = `.fields.${sel}`
    const members = expectObject(obj[name], path)
    const index = ds.selectorIndex(sel)
    const chosen = new Set<string>()
    for (const key of Object.keys(members)) {
      if (!index.has(key)) unknownMember(path, key)
      if (expectBool(members[key], `${path}.${key}`)) chosen.add(key)
    }
    for (const def of ds.fieldsOf(sel)) {
      for (const key of def.selectors) if (chosen.has(key)) out[sel].push({ def, key })
    }
  }
  return out
}

/** a request's filters and relation flags, by member name, per request declaration */
const MEMBERS = new WeakMap<
  RequestDecl,
  { filters: Map<string, FilterDecl>; relations: Map<string, RelationDecl>; prefixes: string }
>()

function membersOf(ds: Dataset, decl: RequestDecl) {
  let m = MEMBERS.get(decl)
  if (m === undefined) {
    m = {
      filters: new Map(decl.filters.map((f) => [f.member, f])),
      relations: new Map(ds.relations.filter((r) => r.from === decl.kind).map((r) => [r.flag, r])),
      prefixes: decl.filters
        .filter((f) => f.op === 'prefix')
        .map((f) => f.member)
        .join(', '),
    }
    MEMBERS.set(decl, m)
  }
  return m
}

/** One item request; null when it matches nothing (an empty filter list). */
function parseRequest(ds: Dataset, decl: RequestDecl, v: unknown, path: string, lim: QueryLimits): ItemRequest | null {
  const { filters: filterDecls, relations: relDecls, prefixes } = membersOf(ds, decl)
  const item = expectObject(v, path)
  const filters: CompiledFilter[] = []
  const relations: RelationDecl[] = []
  let never = false
  let prefixMember: string | undefined
  for (const name of Object.keys(item)) {
    const v = item[name]
    const fd = filterDecls.get(name)
    if (fd) {
      if (v === undefined || v === null) continue // absent (the reference's optional filters accept null)
      if (fd.op === 'prefix') {
        if (prefixMember !== undefined) {
          fail(path, `at most one of ${prefixes} is allowed, got ${prefixMember} and ${name}`)
        }
        prefixMember = name
      }
      const f = compileFilter(fd, v, `${path}.${name}`, lim)
      if (f) filters.push(f)
      else never = true
      continue
    }
    const rd = relDecls.get(name)
    if (rd) {
      if (expectBool(v, `${path}.${name}`)) relations.push(rd)
      continue
    }
    unknownMember(path, name)
  }
  if (never) return null
  filters.sort((a, b) => filterRank(a) - filterRank(b))
  return { kind: decl.kind, path, filters, relations }
}

/**
 * Validate a query body (already JSON-parsed) against a dataset's declaration (the default
 * dataset when none is given). Throws QueryError with the reason.
 */
export function parseQuery(body: unknown, limits?: Partial<QueryLimits>, ds: Dataset = DEFAULT_DATASET): ParsedQuery {
  const lim: QueryLimits = {
    maxItemRequests: limits?.maxItemRequests ?? DEFAULT_LIMITS.maxItemRequests,
    maxFilterValues: limits?.maxFilterValues ?? DEFAULT_LIMITS.maxFilterValues,
  }
  if (!isObject(body)) throw new QueryError('the query must be a JSON object')
  const top = topMembers(ds)
  for (const name of Object.keys(body)) if (!top.has(name)) unknownMember('', name)

  if (body.type !== undefined) {
    if (typeof body.type !== 'string') fail('.type', 'expected a string')
    if (body.type !== ds.type)
      fail('.type', `unsupported dataset type ${JSON.stringify(body.type)}, expected ${JSON.stringify(ds.type)}`)
  }
  if (body.fromBlock === undefined) fail('.fromBlock', 'missing required member')
  const fromBlock = expectBlockNumber(body.fromBlock, '.fromBlock')
  let toBlock: number | undefined
  if (body.toBlock !== undefined && body.toBlock !== null) {
    toBlock = expectBlockNumber(body.toBlock, '.toBlock')
    if (toBlock < fromBlock) fail('.toBlock', `toBlock ${toBlock} is below fromBlock ${fromBlock}`)
  }
  let parentBlockHash: string | undefined
  if (body.parentBlockHash !== undefined && body.parentBlockHash !== null) {
    if (typeof body.parentBlockHash !== 'string') fail('.parentBlockHash', 'expected a string')
    parentBlockHash = body.parentBlockHash
  }
  const includeAllBlocks =
    body.includeAllBlocks === undefined ? false : expectBool(body.includeAllBlocks, '.includeAllBlocks')
  const fields = parseFields(body.fields, ds)

  let itemCount = 0
  for (const decl of ds.requests) {
    const list = body[decl.member]
    if (list === undefined) continue
    if (!Array.isArray(list)) fail(`.${decl.member}`, 'expected an array')
    itemCount += list.length
  }
  if (itemCount > lim.maxItemRequests) {
    throw new QueryError(
      `query contains ${itemCount} item requests, but at most ${lim.maxItemRequests} are allowed (limit maxItemRequests)`,
    )
  }

  const requests: ItemRequest[] = []
  for (const decl of ds.requests) {
    const list = body[decl.member] as unknown[] | undefined
    if (list === undefined) continue
    for (let i = 0; i < list.length; i++) {
      const r = parseRequest(ds, decl, list[i], `.${decl.member}[${i}]`, lim)
      if (r !== null) requests.push(r)
    }
  }

  const q: ParsedQuery = { dataset: ds, fromBlock, includeAllBlocks, fields, requests }
  if (toBlock !== undefined) q.toBlock = toBlock
  if (parentBlockHash !== undefined) q.parentBlockHash = parentBlockHash
  return q
}
