/**
 * The paths of the OpenAPI document (src/server/openapi.ts) and the schemas of their small JSON
 * answers: the dataset routes (streams, metadata, heads, timestamp lookup) and the service routes
 * (probes, metrics, the document itself, the query page), as the server answers them
 * (src/server/http.ts, observe.ts, pages.ts).
 */
import type { JsonSchema } from './openapi.ts'

export interface PathsOptions {
  /** largest accepted request body (bytes), for the description */
  maxBodyBytes?: number
}

export const text = (description: string, headers?: JsonSchema): JsonSchema => ({
  description,
  content: { 'text/plain': { schema: { type: 'string' } } },
  ...(headers ? { headers } : {}),
})

const json = (description: string, schema: JsonSchema): JsonSchema => ({
  description,
  content: { 'application/json': { schema } },
})

const status = (value: string): JsonSchema => ({
  type: 'object',
  properties: { status: { const: value } },
  required: ['status'],
})

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` })

const HEAD_HEADERS: JsonSchema = {
  'X-Sqd-Head-Number': {
    description: 'the head of the endpoint (the finalized head for /finalized-stream)',
    schema: { type: 'integer' },
  },
  'X-Sqd-Finalized-Head-Number': { description: 'the latest finalized slot', schema: { type: 'integer' } },
  'X-Sqd-Finalized-Head-Hash': { description: 'hash of that block', schema: { type: 'string' } },
}

const RETRY_AFTER: JsonSchema = { 'Retry-After': { description: 'seconds', schema: { type: 'integer' } } }

const DATASET_PARAM = {
  name: 'dataset',
  in: 'path',
  required: true,
  description: 'dataset name or alias (GET /datasets lists them)',
  schema: { type: 'string' },
}

const NOT_FOUND = text('unknown dataset')
const LOADING = text('the datasets are still loading', RETRY_AFTER)

/** POST /stream and /finalized-stream */
function streamOperation(finalized: boolean, maxBodyBytes: number | undefined): JsonSchema {
  return {
    operationId: finalized ? 'finalizedStream' : 'stream',
    summary: finalized ? 'stream finalized blocks (never above the finalized head)' : 'stream blocks',
    description:
      'Blocks of [fromBlock, toBlock] as JSON lines, ascending. The response may end early (time or byte budget) on a complete line: resume with fromBlock = last + 1 and parentBlockHash = its hash. Without toBlock, the response follows the head. Request bodies may be gzip (Content-Encoding: gzip)' +
      (maxBodyBytes ? `, at most ${maxBodyBytes} bytes decoded.` : '.'),
    parameters: [DATASET_PARAM],
    requestBody: { required: true, content: { 'application/json': { schema: ref('Query') } } },
    responses: {
      '200': {
        description: 'JSON lines, one Block per line (gzip when Accept-Encoding allows it)',
        headers: HEAD_HEADERS,
        content: { 'application/jsonl': { schema: ref('Block') } },
      },
      '204': text('fromBlock is above the head (after waiting up to 5 s)', HEAD_HEADERS),
      '400': text('Bad request: <reason naming the member or the body limit>'),
      '404': NOT_FOUND,
      '409': json('parentBlockHash is not the parent of fromBlock on the current chain', ref('Conflict')),
      '429': text('above the per-client rate limit or the per-client concurrent streams', RETRY_AFTER),
      '501': text('a Transfer-Encoding other than "chunked" (compress with Content-Encoding: gzip)'),
      '503': text('above the concurrent stream limit, or the datasets are still loading', RETRY_AFTER),
    },
  }
}

/** a GET of one dataset */
function datasetGet(operationId: string, summary: string, ok: JsonSchema, extra: JsonSchema = {}): JsonSchema {
  return {
    get: {
      operationId,
      summary,
      parameters: [DATASET_PARAM],
      responses: { '200': ok, '404': NOT_FOUND, '503': LOADING },
      ...extra,
    },
  }
}

function metadataGet(operationId: string): JsonSchema {
  return datasetGet(operationId, 'dataset metadata', json('metadata', ref('DatasetMetadata')), {
    parameters: [
      DATASET_PARAM,
      {
        name: 'expand[]',
        in: 'query',
        required: false,
        description: '`metadata` adds the metadata member',
        schema: { type: 'string', enum: ['metadata'] },
      },
    ],
  })
}

function timestampGet(): JsonSchema {
  return {
    get: {
      operationId: 'timestampToBlock',
      summary: 'the first block whose timestamp is at or after a time',
      parameters: [
        DATASET_PARAM,
        {
          name: 'seconds',
          in: 'path',
          required: true,
          description: 'unix seconds',
          schema: { type: 'integer', minimum: 0 },
        },
      ],
      responses: {
        '200': json('the block', {
          type: 'object',
          properties: { block_number: { type: 'integer' } },
          required: ['block_number'],
        }),
        '400': text('the timestamp is not a non-negative integer'),
        '429': text('above the per-client rate limit', RETRY_AFTER),
        '503': LOADING,
        '404': {
          description: 'unknown dataset (text), or no block at or after that time (JSON)',
          content: {
            'application/json': {
              schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
            },
            'text/plain': { schema: { type: 'string' } },
          },
        },
      },
    },
  }
}

/** the routes under /datasets (the ones API keys guard) */
export function datasetPaths(opts: PathsOptions): JsonSchema {
  return {
    '/datasets': {
      get: {
        operationId: 'datasets',
        summary: 'the served datasets',
        responses: {
          '200': json('metadata of every dataset', { type: 'array', items: ref('DatasetMetadata') }),
          '503': LOADING,
        },
      },
    },
    '/datasets/{dataset}/stream': { post: streamOperation(false, opts.maxBodyBytes) },
    '/datasets/{dataset}/finalized-stream': { post: streamOperation(true, opts.maxBodyBytes) },
    '/datasets/{dataset}/metadata': metadataGet('metadata'),
    '/datasets/{dataset}': metadataGet('dataset'),
    '/datasets/{dataset}/head': datasetGet('head', 'the highest available block', json('head', ref('Head'))),
    '/datasets/{dataset}/finalized-head': datasetGet(
      'finalizedHead',
      'the highest finalized block',
      json('finalized head', ref('Head')),
    ),
    '/datasets/{dataset}/timestamps/{seconds}/block': timestampGet(),
  }
}

/** the probes, the metrics, this document and the query page */
export function servicePaths(): JsonSchema {
  const get = (operationId: string, summary: string, responses: JsonSchema): JsonSchema => ({
    get: { operationId, summary, responses },
  })
  return {
    '/health': get('health', 'liveness', { '200': json('the process runs', status('ok')) }),
    '/ready': get(
      'ready',
      'readiness: the datasets are loaded, each has a head and its object store (if any) answers',
      {
        '200': json('ready', status('ready')),
        '503': {
          ...json('starting, or a dataset\'s object store is unreachable (status "unavailable")', {
            ...status('starting'),
            properties: { status: { enum: ['starting', 'unavailable'] }, reason: { type: 'string' } },
            required: ['status', 'reason'],
          }),
          headers: RETRY_AFTER,
        },
      },
    ),
    '/metrics': get('metrics', 'Prometheus metrics (when the server records them)', {
      '200': {
        description: 'Prometheus text exposition format',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '404': text('metrics are off'),
    }),
    '/openapi.json': get('openapi', 'this document', { '200': json('OpenAPI 3.1', { type: 'object' }) }),
    '/': get('queryPage', 'the query page (HTML)', {
      '200': { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } },
    }),
  }
}

const HEAD_SCHEMA: JsonSchema = {
  type: 'object',
  properties: { number: { type: 'integer' }, hash: { type: 'string' } },
  required: ['number', 'hash'],
}

/** the schemas of the JSON answers besides the query and the block lines */
export function answerSchemas(): JsonSchema {
  return {
    Head: { ...HEAD_SCHEMA, type: ['object', 'null'] },
    Conflict: {
      type: 'object',
      description: 'blocks of the current chain, ascending, ending with the expected parent (up to 100)',
      properties: { previousBlocks: { type: 'array', items: HEAD_SCHEMA } },
      required: ['previousBlocks'],
    },
    DatasetMetadata: {
      type: 'object',
      properties: {
        dataset: { type: 'string' },
        aliases: { type: 'array', items: { type: 'string' } },
        real_time: { type: 'boolean' },
        start_block: { type: 'integer' },
        metadata: {
          type: 'object',
          properties: { kind: { type: 'string' }, display_name: { type: 'string' }, type: { type: 'string' } },
        },
      },
      required: ['dataset', 'aliases', 'real_time', 'start_block'],
    },
  }
}
