/**
 * The published description of the interface: an OpenAPI 3.1 document whose request schema (the
 * data query) and response schema (one block line) are generated from the same declarations the
 * server runs on, the dataset's declaration (src/dataset/types.ts: fields, requests, relations),
 * so the schema cannot drift from the validator (`src/query/parse.ts`).
 *
 * What JSON Schema cannot say and only the validator checks: `toBlock` >= `fromBlock`, the total
 * number of item requests over all lists (each list alone is bounded), the exact 32-byte length of
 * an address value (the schema bounds its base58 text to 32-44 characters), and `fromBlock` >= the
 * dataset's start block (a 400 from the server).
 */
import { readFileSync } from 'node:fs'
import { DEFAULT_DATASET } from '../catalogue.ts'
import { filterValueKind, type Dataset, type FieldDef, type FilterDecl, type RequestDecl } from '../dataset/types.ts'
import { DEFAULT_LIMITS as QUERY_LIMITS, type QueryLimits } from '../query/parse.ts'
import { securitySchemes, withAccess, type AccessOptions } from './openapi-access.ts'
import { answerSchemas, datasetPaths, servicePaths, type PathsOptions } from './openapi-paths.ts'

export type JsonSchema = { [key: string]: unknown }

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

const MAX_BLOCK = Number.MAX_SAFE_INTEGER

const ADDRESS_PATTERN = '^[1-9A-HJ-NP-Za-km-z]{32,44}$'

/** Adds `null` to the accepted types of a schema that has a `type`. */
function orNull(s: JsonSchema): JsonSchema {
  const t = s.type
  return { ...s, type: Array.isArray(t) ? [...t, 'null'] : [t, 'null'] }
}

// --- the request ---------------------------------------------------------------------------------

function hexPattern(d: Extract<FilterDecl, { op: 'prefix' }>): string {
  return d.bytes > 0 ? `^0x[0-9a-fA-F]{${2 * d.bytes}}$` : `^0x([0-9a-fA-F]{2}){0,${d.maxBytes}}$`
}

function hexDescription(d: Extract<FilterDecl, { op: 'prefix' }>): string {
  return d.bytes > 0
    ? `0x and ${2 * d.bytes} hex digits (${d.bytes} byte${d.bytes > 1 ? 's' : ''})`
    : `0x and an even number of hex digits (up to ${d.maxBytes} bytes)`
}

function filterDescription(kind: string, d: FilterDecl): string {
  switch (d.op) {
    case 'in':
      return `${kind}s whose ${d.column} is one of the values`
    case 'bool':
      return `${kind}s whose ${d.column} equals the value`
    case 'at':
      return `${kind}s whose ${d.column}[${d.index}] is one of the values`
    case 'any':
      return `${kind}s whose ${d.sources.map((s) => (s.sub ? `${s.column}.${s.sub}` : s.column)).join(' or ')} contain one of the values`
    case 'prefix':
      return d.bytes > 0
        ? `${kind}s whose data starts with one of these ${d.bytes}-byte prefixes (0x + hex)`
        : `${kind}s whose data starts with one of these prefixes of up to ${d.maxBytes} bytes (0x + even number of hex digits)`
  }
}

/** JSON Schema of one filter member of an item request. */
function filterSchema(kind: string, d: FilterDecl, limits: QueryLimits): JsonSchema {
  const description = filterDescription(kind, d)
  // null = absent, for every filter (the reference types them as optional)
  if (d.op === 'bool') return { type: ['boolean', 'null'], description }
  let value: JsonSchema
  switch (filterValueKind(d)) {
    case 'hexPrefix':
      value = {
        type: 'string',
        pattern: hexPattern(d as Extract<FilterDecl, { op: 'prefix' }>),
        description: hexDescription(d as Extract<FilterDecl, { op: 'prefix' }>),
      }
      break
    case 'word':
      value = { type: 'string', enum: [...(d as Extract<FilterDecl, { op: 'in' }>).allowed!] }
      break
    case 'address':
      // 32 bytes are 32 to 44 base58 characters; the exact byte length is checked by the server
      value = { type: 'string', pattern: ADDRESS_PATTERN, description: 'a base58 address (32 bytes)' }
  }
  return {
    type: ['array', 'null'],
    items: value,
    maxItems: limits.maxFilterValues,
    description: `${description}; an empty list matches nothing`,
  }
}

/** JSON Schema of one item request (filters AND-ed, relation flags). */
export function itemRequestSchema(
  decl: RequestDecl,
  limits: QueryLimits = QUERY_LIMITS,
  ds: Dataset = DEFAULT_DATASET,
): JsonSchema {
  const properties: JsonSchema = {}
  for (const f of decl.filters) properties[f.member] = filterSchema(decl.kind, f, limits)
  for (const r of ds.relations) {
    if (r.from !== decl.kind) continue
    properties[r.flag] = { type: 'boolean', description: `also select the ${r.to} rows ${r.describe}` }
  }
  const schema: JsonSchema = {
    type: 'object',
    description: `selects the ${decl.kind}s matching every filter given (none: all ${decl.kind}s)`,
    properties,
    additionalProperties: false,
  }
  // at most one prefix member (non-null) per request
  const prefixes = decl.filters.filter((f) => f.op === 'prefix').map((f) => f.member)
  if (prefixes.length > 1) {
    schema.allOf = prefixes.map((m) => ({
      if: { properties: { [m]: { type: 'array' } }, required: [m] },
      then: { properties: Object.fromEntries(prefixes.filter((o) => o !== m).map((o) => [o, { type: 'null' }])) },
    }))
  }
  return schema
}

function fieldsSchema(ds: Dataset): JsonSchema {
  const properties: JsonSchema = {}
  for (const sel of ds.selectorNames) {
    const fields: JsonSchema = {}
    for (const def of ds.fieldsOf(sel)) {
      for (const s of def.selectors) {
        fields[s] = {
          type: 'boolean',
          description: s === def.name ? `select ${def.name}` : `select ${def.name}, rendered as ${s}`,
        }
      }
    }
    properties[sel] = { type: 'object', properties: fields, additionalProperties: false }
  }
  return {
    type: 'object',
    description: 'output fields per record kind (block = the header); nothing selected renders {}',
    properties,
    additionalProperties: false,
  }
}

/**
 * The data query as a standalone JSON Schema (draft 2020-12, no references), for the given
 * validator limits.
 */
export function queryJsonSchema(limits: Partial<QueryLimits> = {}, ds: Dataset = DEFAULT_DATASET): JsonSchema {
  const lim: QueryLimits = { ...QUERY_LIMITS, ...limits }
  const block = { type: 'integer', minimum: 0, maximum: MAX_BLOCK }
  const properties: JsonSchema = {
    type: { const: ds.type, description: 'dataset type; optional' },
    fromBlock: { ...block, description: 'first slot of the range (at least the dataset start_block)' },
    toBlock: orNull({
      ...block,
      description: 'last slot of the range (inclusive; at least fromBlock); absent: follow the head',
    }),
    parentBlockHash: orNull({
      type: 'string',
      description: 'expected hash of the block before fromBlock; a mismatch answers 409',
    }),
    includeAllBlocks: { type: 'boolean', description: 'output every block of the range, even without selected rows' },
    fields: fieldsSchema(ds),
  }
  for (const decl of ds.requests) {
    properties[decl.member] = {
      type: 'array',
      description: `${decl.kind} requests (OR-ed); at most ${lim.maxItemRequests} item requests over all lists`,
      items: itemRequestSchema(decl, lim, ds),
      maxItems: lim.maxItemRequests,
    }
  }
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: 'DataQuery',
    type: 'object',
    properties,
    required: ['fromBlock'],
    additionalProperties: false,
    // the dataset's example query, without its range (the query page starts from it)
    ...(ds.example ? { examples: [{ type: ds.type, fromBlock: 0, ...ds.example }] } : {}),
  }
}

// --- the response --------------------------------------------------------------------------------

function valueSchema(def: FieldDef): JsonSchema {
  let s: JsonSchema
  switch (def.type) {
    case 'u32':
      s = { type: 'integer', minimum: 0 }
      break
    case 'u64':
      s = { type: ['string', 'integer'], pattern: '^[0-9]+$', minimum: 0 }
      break
    case 'i64':
      s = { type: ['string', 'integer'], pattern: '^-?[0-9]+$' }
      break
    case 'bool':
      s = { type: 'boolean' }
      break
    case 'json':
      if (def.schema !== undefined) return def.schema
      return def.nullable ? {} : { type: ['object', 'array', 'string', 'number', 'boolean'] }
    case 'address':
      s = { type: 'array', items: { type: 'integer', minimum: 0 } }
      break
    case 'version': {
      const anyOf: JsonSchema[] = [{ const: 'legacy' }, { type: 'integer', minimum: 0 }]
      return { anyOf: def.nullable ? [...anyOf, { type: 'null' }] : anyOf }
    }
    default:
      // the text types (how a text is stored and escaped does not change its JSON type): a string,
      // or a list of strings for the list types
      s = String(def.type).endsWith('List') ? { type: 'array', items: { type: 'string' } } : { type: 'string' }
  }
  return def.nullable ? orNull(s) : s
}

function recordSchema(defs: readonly FieldDef[]): JsonSchema {
  const properties: JsonSchema = {}
  for (const def of defs) for (const sel of def.selectors) properties[sel] = valueSchema(def)
  return { type: 'object', properties, additionalProperties: false }
}

/** One line of a stream response: a block with the selected fields of its selected rows. */
export function blockJsonSchema(ds: Dataset = DEFAULT_DATASET): JsonSchema {
  const properties: JsonSchema = { header: recordSchema(ds.header) }
  for (const { member, fields } of ds.tables) {
    properties[member] = { type: 'array', items: recordSchema(fields), minItems: 1 }
  }
  return {
    title: 'Block',
    description:
      'one JSON line per block; a list appears only when non-empty; every record holds exactly the selected fields (64-bit amounts are decimal strings, or integers with bigintsAsNumbers)',
    type: 'object',
    properties,
    required: ['header'],
    additionalProperties: false,
  }
}

// --- the document --------------------------------------------------------------------------------

export interface OpenApiOptions extends PathsOptions, AccessOptions {
  limits?: Partial<QueryLimits>
  /** the dataset whose query and block schemas are published (default: the default dataset) */
  dataset?: Dataset
  version?: string
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

/**
 * The OpenAPI 3.1 document of the whole interface: the paths (src/server/openapi-paths.ts) with
 * what API keys and CORS add when the server has them (src/server/openapi-access.ts), and the
 * schemas of the query and the block lines (above).
 */
export function openApiDocument(opts: OpenApiOptions = {}): JsonSchema {
  const query = queryJsonSchema(opts.limits, opts.dataset)
  delete query.$schema // the document declares the dialect once
  const paths = { ...datasetPaths(opts), ...servicePaths() }
  const components: JsonSchema = { schemas: { Query: query, Block: blockJsonSchema(opts.dataset), ...answerSchemas() } }
  if (opts.apiKeyHeader) components.securitySchemes = securitySchemes(opts.apiKeyHeader)
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: {
      title: 'solportal',
      version: opts.version ?? packageVersion(),
      description:
        'Solana block data query and streaming service (the Portal interface). The Query schema is generated from the same declarations as the server-side validator; only toBlock >= fromBlock, the total number of item requests, the exact 32-byte length of an address (the schema bounds its text to 32-44 base58 characters) and the dataset start block are checked by the server alone. Every response carries an X-Request-Id.',
    },
    paths: opts.apiKeyHeader || opts.cors ? withAccess(paths, opts) : paths,
    components,
  }
}
