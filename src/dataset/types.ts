/**
 * What a dataset declares, and the engine's view of one declaration (`defineDataset`).
 *
 * A dataset is block headers plus record kinds, each stored as one table whose rows are grouped by
 * block. The declaration names everything the query engine, the stores, the export and the
 * published schema need to know of it: the kinds and the block member holding each kind's list,
 * the fields (types, nullability, the spellings a `fields` selector accepts, a shaped JSON
 * rendering), the item requests and their filters, the relations their flags pull in (joined on
 * named key columns) and the fields a chunk indexes for pruning. None of those layers names a
 * column or a kind of its own; a second declaration runs side by side with the first.
 */
import type { BlockHeader } from '../model.ts'

/**
 * Value types:
 * - u32: small non-negative integer (JS number)
 * - u64 / i64: bigint; rendered as a decimal string (or a bare integer with `bigintsAsNumbers`)
 * - safeAscii: text proven at ingest to need no JSON escaping, rendered between quotes as is
 *   (base58 checked by the normalizer, `0x` hex computed from checked data, or a word the
 *   normalizer writes itself). A value that fails its check never gets here.
 * - string: arbitrary text (JSON-escaped)
 * - bool
 * - json: arbitrary JSON value (rendered with JSON.stringify, or by the field's `render`)
 * - address: number[] (a path in a tree of records, e.g. an instruction's address)
 * - safeAsciiList: string[] of safeAscii values
 * - version: 'legacy' | number
 */
export type FieldType =
  'u32' | 'u64' | 'i64' | 'safeAscii' | 'string' | 'bool' | 'json' | 'address' | 'safeAsciiList' | 'version'

/**
 * A structural writer of a `json` field whose shape the dataset fixes: the non-null value's JSON
 * text (checked values written without JSON.stringify; anything else falls back to it).
 */
export type ShapedJson = (v: never, bigintsAsNumbers: boolean) => string

export interface FieldDef {
  /** property name in the stored record */
  name: string
  type: FieldType
  nullable: boolean
  /** names accepted in the `fields` selector; each renders under its own spelling */
  selectors: readonly string[]
  /** `json` fields of a fixed shape: their structural writer */
  render?: ShapedJson
  /**
   * `json` fields a chunk indexes for pruning (`TableDecl.prune`): adds the strings of a value a
   * filter may look for to `out`
   */
  strings?: (v: unknown, out: Set<string>) => void
  /** `json` fields of a fixed shape: the JSON Schema of a value in the published document */
  schema?: { readonly [key: string]: unknown }
}

/** One record kind: its table of rows. */
export interface TableDecl {
  kind: string
  /** the block member holding the kind's list, in stored blocks and in rendered output */
  member: string
  /** selectable fields, in output order */
  fields: readonly FieldDef[]
  /** stored but never selectable fields (filters use them) */
  internal?: readonly FieldDef[]
  /** the fields a chunk indexes (Bloom filters or exact dictionaries) so that filters can skip it */
  prune?: readonly string[]
}

/** How a filter member is validated and evaluated. */
export type FilterDecl =
  /**
   * scalar column value in a list of strings (null never matches): the `allowed` words, or else
   * base58 addresses (32 bytes; anything else is a 400, as for `at` and `any`)
   */
  | { member: string; op: 'in'; column: string; allowed?: readonly string[] }
  /** boolean column equals the given boolean */
  | { member: string; op: 'bool'; column: string }
  /** element `index` of a list column in a list of strings */
  | { member: string; op: 'at'; column: string; index: number }
  /** any element of any of the list sources in a list of strings */
  | { member: string; op: 'any'; sources: readonly { column: string; sub?: string }[] }
  /**
   * prefix of a lower-case `0x…` hex column; `bytes` = exact length of every value, or 0 for
   * `0x` + an even number of hex digits up to `maxBytes`. All members with op 'prefix' of one
   * request are mutually exclusive.
   */
  | { member: string; op: 'prefix'; column: string; bytes: number; maxBytes: number }

/**
 * What each value of a filter list must be: one of the `allowed` words, a `0x` hex prefix, or a
 * base58 address of 32 bytes. The validator checks it and the published schema states it.
 */
export type FilterValueKind = 'word' | 'hexPrefix' | 'address'

export function filterValueKind(d: Exclude<FilterDecl, { op: 'bool' }>): FilterValueKind {
  if (d.op === 'prefix') return 'hexPrefix'
  return d.op === 'in' && d.allowed ? 'word' : 'address'
}

/**
 * How a relation finds the target rows of one source row (same block always). `group` is a u32
 * column of both tables, rows ascending by it inside a block; `path` an `address` column (a path in
 * a tree stored depth-first inside a group):
 * - group: target rows with the same `group` value
 * - subtree: target rows of the same group whose path has the source's as proper prefix (the
 *   source and target tables are one)
 * - parents: target rows of the same group whose path is a proper prefix of the source's (the
 *   source and target tables are one)
 * - path: target rows of the same group with exactly the same path
 */
export type JoinKind = 'group' | 'subtree' | 'parents' | 'path'

export interface RelationDecl {
  from: string
  flag: string
  to: string
  join: JoinKind
  /** the key columns joined on */
  group: string
  path?: string
  /** how the target rows relate to the source row, for the published schema ("of the same …") */
  describe: string
}

export interface RequestDecl {
  kind: string
  /** member of the query holding the list of requests (also the output member name) */
  member: string
  filters: readonly FilterDecl[]
}

export interface DatasetDecl {
  /** the query's `type` member (optional in a query; when given, it must be this) */
  type: string
  /** the block header's fields (the `block` selector); `number` and `hash` are required of every dataset */
  header: readonly FieldDef[]
  /** the record kinds, in the order of a rendered block's members */
  tables: readonly TableDecl[]
  requests: readonly RequestDecl[]
  relations: readonly RelationDecl[]
  /**
   * an example query's `fields` and item request lists (without its range), published with the
   * query schema for the query page to start from
   */
  example?: { readonly [member: string]: unknown }
}

/** A declaration with the lookups the engine, the stores and the schema use, built once. */
export interface Dataset extends DatasetDecl {
  /** the kinds, in table order */
  readonly kinds: readonly string[]
  /** names of the `fields` members (selectors) in a query: 'block' and then the kinds */
  readonly selectorNames: readonly string[]
  /** the table of a kind; throws for an unknown kind */
  table(kind: string): TableDecl
  /** the selectable fields of a selector ('block' or a kind) */
  fieldsOf(selector: string): readonly FieldDef[]
  /** every stored column of a kind: the selectable fields plus the internal ones */
  columnsOf(kind: string): readonly FieldDef[]
  /** selector spelling → field, per selector */
  selectorIndex(selector: string): ReadonlyMap<string, FieldDef>
  /** the fields a chunk indexes for pruning, per kind */
  pruneFields(kind: string): readonly string[]
}

/** A field definition (the usual shorthand of declarations). */
export function field(
  name: string,
  type: FieldType,
  nullable = false,
  selectors: readonly string[] = [name],
  extra: Pick<FieldDef, 'render' | 'strings' | 'schema'> = {},
): FieldDef {
  return { name, type, nullable, selectors, ...extra }
}

/** The engine's view of a declaration: its tables by kind, fields by selector spelling. */
export function defineDataset(decl: DatasetDecl): Dataset {
  const tables = new Map(decl.tables.map((t) => [t.kind, t]))
  const columns = new Map(decl.tables.map((t) => [t.kind, [...t.fields, ...(t.internal ?? [])]]))
  const selectorNames = ['block', ...decl.tables.map((t) => t.kind)]
  const index = new Map<string, Map<string, FieldDef>>()
  const table = (kind: string): TableDecl => {
    const t = tables.get(kind)
    if (t === undefined) throw new Error(`unknown kind ${kind}`)
    return t
  }
  const fieldsOf = (selector: string) => (selector === 'block' ? decl.header : table(selector).fields)
  for (const sel of selectorNames) {
    const m = new Map<string, FieldDef>()
    for (const fd of fieldsOf(sel)) for (const s of fd.selectors) m.set(s, fd)
    index.set(sel, m)
  }
  for (const t of decl.tables) {
    for (const name of t.prune ?? []) {
      const d = columns.get(t.kind)!.find((x) => x.name === name)
      if (d === undefined || (d.type === 'json' && d.strings === undefined))
        throw new Error(`${t.kind}.${name}: a pruned field must exist, and a json one declare its strings`)
    }
  }
  for (const r of decl.requests) table(r.kind)
  for (const r of decl.relations) {
    table(r.from)
    table(r.to)
  }
  return {
    ...decl,
    kinds: decl.tables.map((t) => t.kind),
    selectorNames,
    table,
    fieldsOf,
    columnsOf: (kind) => columns.get(kind) ?? table(kind).fields,
    selectorIndex: (selector) => {
      const m = index.get(selector)
      if (m === undefined) throw new Error(`unknown selector ${selector}`)
      return m
    },
    pruneFields: (kind) => table(kind).prune ?? [],
  }
}

/**
 * A block as stored: its header and, under each table's `member`, the list of its rows of that
 * kind (objects with the kind's columns as properties).
 */
export interface StoredBlock {
  readonly header: BlockHeader
}
