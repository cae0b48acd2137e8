/**
 * Where the served dataset is wired: the Solana declaration (src/dataset/solana.ts) as the default
 * dataset, and its tables under the names the Solana-specific layers use (normalization, the
 * import pipeline, the cold store's file readers). The query engine, the stores' generic parts, the
 * export and the published schema take a `Dataset` instead and name none of its columns.
 */
import { SOLANA } from './dataset/solana.ts'
import type { Dataset, FieldDef } from './dataset/types.ts'
import type { Block, RecordKind } from './model.ts'

export type { FieldDef, FieldType, FilterDecl, RelationDecl, RequestDecl, JoinKind } from './dataset/types.ts'
export { filterValueKind } from './dataset/types.ts'

/** the dataset served when none is named */
export const DEFAULT_DATASET: Dataset = SOLANA

export type SelectorName = 'block' | RecordKind

export const HEADER_FIELDS: readonly FieldDef[] = SOLANA.header

export const RECORD_FIELDS = Object.fromEntries(SOLANA.tables.map((t) => [t.kind, t.fields])) as {
  readonly [K in RecordKind]: readonly FieldDef[]
}

/** Internal, stored but never selectable, fields (filters use them). */
export const INTERNAL_FIELDS = Object.fromEntries(
  SOLANA.tables.filter((t) => t.internal !== undefined).map((t) => [t.kind, t.internal]),
) as { readonly [K in RecordKind]?: readonly FieldDef[] }

export function fieldsOf(selector: SelectorName): readonly FieldDef[] {
  return SOLANA.fieldsOf(selector)
}

/** Every stored column of a kind: the selectable fields plus the internal ones. */
export function columnsOf(kind: RecordKind): readonly FieldDef[] {
  return SOLANA.columnsOf(kind)
}

/** Map selector spelling → field definition, per selector. */
export const SELECTOR_INDEX = Object.fromEntries(SOLANA.selectorNames.map((s) => [s, SOLANA.selectorIndex(s)])) as {
  readonly [S in SelectorName]: ReadonlyMap<string, FieldDef>
}

/** Names of the `fields` members (selectors) in a query. */
export const SELECTOR_NAMES = SOLANA.selectorNames as readonly SelectorName[]

/** The JSON member name of each kind's list in a rendered block, in output order (docs/query.md §3). */
export const BLOCK_MEMBERS = SOLANA.tables.map(({ kind, member }) => ({ kind, member })) as readonly {
  kind: RecordKind
  member: string
}[]

/** The members of a block holding its record lists, in output order. */
export const RECORD_LISTS = BLOCK_MEMBERS.map((m) => m.member) as readonly Exclude<keyof Block, 'header'>[]

/** item requests and relations of the Solana dataset */
export const REQUESTS = SOLANA.requests
export const RELATIONS = SOLANA.relations
