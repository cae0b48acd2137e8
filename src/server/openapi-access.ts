/**
 * What API keys and CORS add to the OpenAPI document (src/server/openapi.ts), when the server has
 * them (src/server/access.ts, cors.ts):
 *
 * - API keys: a security scheme (`Authorization: Bearer KEY`, or the header the operator named),
 *   required by every operation under /datasets, which may then answer 401 (no key, or an unknown
 *   one) and, for one dataset, 403 (the key may not use it). The probes, the metrics, the document
 *   and the query page need no key.
 * - CORS: the preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) of every
 *   path: 204 for an allowed origin, 403 for another; it needs no key.
 */
import type { JsonSchema } from './openapi.ts'
import { text } from './openapi-paths.ts'

export interface AccessOptions {
  /** the header API keys are sent in (`authorization`: as a Bearer token); absent: no keys */
  apiKeyHeader?: string
  /** origins may call from a browser (preflights answered) */
  cors?: boolean
}

const SCHEME = 'apiKey'

/** `components.securitySchemes` with keys on */
export function securitySchemes(header: string): JsonSchema {
  const description =
    'An API key per client (its own rate limit and concurrent streams; possibly only some datasets). A request without a valid key is answered 401, and counts against its address rate limit.'
  const scheme =
    header === 'authorization'
      ? { type: 'http', scheme: 'bearer', description }
      : { type: 'apiKey', in: 'header', name: header, description }
  return { [SCHEME]: scheme }
}

const UNAUTHORIZED = text('Unauthorized: no API key, or an unknown one', {
  'WWW-Authenticate': { description: 'Bearer realm="solportal"', schema: { type: 'string' } },
})
const FORBIDDEN = text('Forbidden: the API key may not use this dataset')

/** an operation under /datasets with keys on: the key required, 401, and 403 for one dataset */
function guarded(op: JsonSchema, oneDataset: boolean): JsonSchema {
  const responses: JsonSchema = { ...(op.responses as JsonSchema), '401': UNAUTHORIZED }
  if (oneDataset) responses['403'] = FORBIDDEN
  return { ...op, security: [{ [SCHEME]: [] }], responses }
}

const PREFLIGHT: JsonSchema = {
  summary: 'CORS preflight (needs no API key)',
  parameters: [
    { name: 'Origin', in: 'header', required: true, schema: { type: 'string' } },
    { name: 'Access-Control-Request-Method', in: 'header', required: true, schema: { type: 'string' } },
    {
      name: 'Access-Control-Request-Headers',
      in: 'header',
      required: false,
      description: 'given back in Access-Control-Allow-Headers',
      schema: { type: 'string' },
    },
  ],
  responses: {
    '204': {
      description: 'the origin is allowed',
      headers: {
        'Access-Control-Allow-Origin': { description: 'the origin, or *', schema: { type: 'string' } },
        'Access-Control-Allow-Methods': { schema: { const: 'GET, HEAD, POST' } },
        'Access-Control-Allow-Headers': { description: 'the headers asked for', schema: { type: 'string' } },
        'Access-Control-Max-Age': { description: 'seconds', schema: { type: 'integer' } },
      },
    },
    '403': text('Forbidden: the origin is not allowed'),
  },
}

/**
 * The paths with what keys and CORS add (new objects: the ones given are not changed). The dataset
 * paths are the ones starting with /datasets.
 */
export function withAccess(paths: JsonSchema, opts: AccessOptions): JsonSchema {
  const out: JsonSchema = {}
  for (const [path, item] of Object.entries(paths) as [string, JsonSchema][]) {
    const ops: JsonSchema = {}
    for (const [method, op] of Object.entries(item) as [string, JsonSchema][]) {
      ops[method] = opts.apiKeyHeader && path.startsWith('/datasets') ? guarded(op, path !== '/datasets') : op
    }
    if (opts.cors) ops.options = preflight(path)
    out[path] = ops
  }
  return out
}

/** the preflight of a path (with its path parameters, which OpenAPI requires of every operation) */
function preflight(path: string): JsonSchema {
  const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }))
  const parameters = [...pathParams, ...(PREFLIGHT.parameters as JsonSchema[])]
  return { ...PREFLIGHT, operationId: `preflight${operationSuffix(path)}`, parameters }
}

/** a path as an operation id suffix: /datasets/{dataset}/head -> DatasetsDatasetHead, / -> Root */
function operationSuffix(path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter((w) => w !== '')
  return words.length === 0 ? 'Root' : words.map((w) => w[0].toUpperCase() + w.slice(1)).join('')
}
