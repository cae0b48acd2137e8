/**
 * The published schema against the validator: random valid queries (built from the request
 * declarations and the field catalogue) pass both the generated JSON Schema (checked by Ajv,
 * draft 2020-12) and `parseQuery`; the same queries with one random fault fail both. Then the real
 * server on loopback: `/openapi.json` is the document, its schemas compile in strict mode, and the
 * server's actual answers (every GET endpoint, every stream line with all fields) match the
 * response schemas the document gives them.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { fieldsOf, SELECTOR_INDEX, SELECTOR_NAMES } from '../src/catalogue.ts'
import { sampleLines } from '../src/ingest/sample.ts'
import { parseQuery, QueryError } from '../src/query/index.ts'
import type { QueryLimits } from '../src/query/parse.ts'
import { filterValueKind, RELATIONS, REQUESTS, type FilterDecl, type RequestDecl } from '../src/catalogue.ts'
import { ApiKeys, sha256Hex } from '../src/server/access.ts'
import { Cors } from '../src/server/cors.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { DEFAULT_LIMITS, PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'
import { Metrics } from '../src/server/metrics.ts'
import { Observer } from '../src/server/observe.ts'
import { createLogger } from '../src/log.ts'
import { openApiDocument, queryJsonSchema, type JsonSchema } from '../src/server/openapi.ts'
import { base58Encode } from '../src/util/base58.ts'
import { postJson, request } from './support/http/client.ts'

/** small limits so that the generators reach them */
const LIMITS: QueryLimits = { maxItemRequests: 20, maxFilterValues: 3 }

function newAjv(): Ajv2020 {
  return new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true })
}

const schemaValidate = newAjv().compile(queryJsonSchema(LIMITS))

function validatorAccepts(q: unknown): { ok: true } | { ok: false; reason: string } {
  try {
    parseQuery(q, LIMITS)
    return { ok: true }
  } catch (e) {
    if (!(e instanceof QueryError)) throw e
    return { ok: false, reason: e.message }
  }
}

// --- generators ----------------------------------------------------------------------------------

type Query = Record<string, unknown>

const address = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(base58Encode)

const hex = (bytes: number) =>
  fc
    .tuple(fc.uint8Array({ minLength: bytes, maxLength: bytes }), fc.boolean())
    .map(([b, upper]) => '0x' + (upper ? Buffer.from(b).toString('hex').toUpperCase() : Buffer.from(b).toString('hex')))

function validValue(d: Exclude<FilterDecl, { op: 'bool' }>): fc.Arbitrary<string> {
  switch (filterValueKind(d)) {
    case 'word':
      return fc.constantFrom(...(d.op === 'in' ? (d.allowed ?? []) : []))
    case 'hexPrefix':
      if (d.op !== 'prefix') throw new Error('unreachable')
      return d.bytes > 0 ? hex(d.bytes) : fc.integer({ min: 0, max: d.maxBytes }).chain(hex)
    case 'address':
      return address
  }
}

function validFilter(d: FilterDecl): fc.Arbitrary<unknown> {
  if (d.op === 'bool') return fc.option(fc.boolean(), { nil: null })
  return fc.option(fc.array(validValue(d), { maxLength: LIMITS.maxFilterValues }), { nil: null, freq: 4 })
}

const relationsOf = (decl: RequestDecl) => RELATIONS.filter((r) => r.from === decl.kind)
const prefixMembers = (decl: RequestDecl) => decl.filters.filter((f) => f.op === 'prefix').map((f) => f.member)

function validItem(decl: RequestDecl): fc.Arbitrary<Query> {
  const members: Record<string, fc.Arbitrary<unknown>> = {}
  for (const f of decl.filters) members[f.member] = validFilter(f)
  for (const r of relationsOf(decl)) members[r.flag] = fc.boolean()
  const prefixes = prefixMembers(decl)
  return fc.record(members, { requiredKeys: [] }).map((item: Query) => {
    // at most one prefix member with a list; the others may be null
    let seen = false
    for (const m of prefixes) {
      if (!Array.isArray(item[m])) continue
      if (seen) item[m] = null
      seen = true
    }
    return item
  })
}

const validFields: fc.Arbitrary<Query> = fc.record(
  Object.fromEntries(
    SELECTOR_NAMES.map((sel) => [
      sel,
      fc.record(Object.fromEntries(fieldsOf(sel).flatMap((d) => d.selectors.map((s) => [s, fc.boolean()]))), {
        requiredKeys: [],
      }),
    ]),
  ),
  { requiredKeys: [] },
)

const validQuery: fc.Arbitrary<Query> = fc
  .record(
    {
      type: fc.constant('solana'),
      fromBlock: fc.oneof(fc.nat(1_000), fc.maxSafeNat()),
      toBlock: fc.option(fc.nat(), { nil: null }),
      parentBlockHash: fc.option(fc.oneof(address, fc.string()), { nil: null }),
      includeAllBlocks: fc.boolean(),
      fields: validFields,
      ...Object.fromEntries(REQUESTS.map((d) => [d.member, fc.array(validItem(d), { maxLength: 3 })])),
    },
    { requiredKeys: ['fromBlock'] },
  )
  .map((q: Query) => {
    // toBlock was drawn as the distance above fromBlock
    if (typeof q.toBlock === 'number')
      q.toBlock = Math.min(Number.MAX_SAFE_INTEGER, (q.fromBlock as number) + q.toBlock)
    return q
  })

// --- faults: each turns a valid query into an invalid one ----------------------------------------

type Fault = (q: Query) => void

const TOP = new Set(Object.keys((queryJsonSchema().properties as JsonSchema) ?? {}))
const anyDecl = fc.constantFrom(...REQUESTS)
const notIn = (names: ReadonlySet<string>) =>
  fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !names.has(s) && s !== '__proto__')

/** appends an item to a request list (the list is created when absent) */
function push(q: Query, member: string, item: unknown): void {
  q[member] = [...((q[member] as unknown[] | undefined) ?? []), item]
}

const listFilters = (decl: RequestDecl) =>
  decl.filters.filter((f): f is Exclude<FilterDecl, { op: 'bool' }> => f.op !== 'bool')

const faults: fc.Arbitrary<[string, Fault]>[] = [
  notIn(TOP).map((name) => ['unknown top-level member', (q) => void (q[name] = 1)]),
  fc.constant(['fromBlock missing', (q) => void delete q.fromBlock]),
  fc
    .constantFrom(-1, 1.5, '5', null, 2 ** 60, true, {})
    .map((v) => ['fromBlock not a block number', (q) => void (q.fromBlock = v)]),
  fc.constantFrom('evm', 1, null, '', 'Solana').map((v) => ['type not solana', (q) => void (q.type = v)]),
  fc
    .constantFrom(-1, 1.5, 'a', true, 2 ** 60, {})
    .map((v) => ['toBlock not a block number', (q) => void (q.toBlock = v)]),
  fc.constantFrom(5, true, {}, []).map((v) => ['parentBlockHash not a string', (q) => void (q.parentBlockHash = v)]),
  fc.constantFrom(null, 'yes', 1).map((v) => ['includeAllBlocks not a boolean', (q) => void (q.includeAllBlocks = v)]),
  fc.constantFrom(null, [], true, 'x').map((v) => ['fields not an object', (q) => void (q.fields = v)]),
  notIn(new Set(SELECTOR_NAMES)).map((name) => [
    'unknown selector',
    (q) => void (q.fields = { ...(q.fields as Query), [name]: {} }),
  ]),
  fc
    .constantFrom(...SELECTOR_NAMES)
    .chain((sel) => notIn(new Set(SELECTOR_INDEX[sel].keys())).map((name) => [sel, name] as const))
    .map(([sel, name]) => [
      'unknown field',
      (q) =>
        void (q.fields = { ...(q.fields as Query), [sel]: { ...((q.fields as Query)?.[sel] as Query), [name]: true } }),
    ]),
  fc
    .constantFrom(...SELECTOR_NAMES)
    .chain((sel) => fc.tuple(fc.constant(sel), fc.constantFrom(...SELECTOR_INDEX[sel].keys())))
    .chain(([sel, name]) => fc.constantFrom(1, null, 'true', {}).map((v) => [sel, name, v] as const))
    .map(([sel, name, v]) => ['field not a boolean', (q) => void (q.fields = { [sel]: { [name]: v } })]),
  fc
    .tuple(anyDecl, fc.constantFrom({}, null, 'x', 1))
    .map(([d, v]) => ['request list not an array', (q) => void (q[d.member] = v)]),
  fc
    .tuple(anyDecl, fc.constantFrom(null, 5, [], 'x'))
    .map(([d, v]) => ['item not an object', (q) => push(q, d.member, v)]),
  anyDecl
    .chain((d) =>
      notIn(new Set([...d.filters.map((f) => f.member), ...relationsOf(d).map((r) => r.flag)])).map(
        (name) => [d, name] as const,
      ),
    )
    .map(([d, name]) => ['unknown item member', (q) => push(q, d.member, { [name]: [] })]),
  anyDecl
    .chain((d) => fc.tuple(fc.constant(d), fc.constantFrom(...listFilters(d))))
    .chain(([d, f]) => fc.constantFrom<unknown>('x', 5, {}, true, [5], [null], [['a']]).map((v) => [d, f, v] as const))
    .map(([d, f, v]) => ['filter not a list of strings', (q) => push(q, d.member, { [f.member]: v })]),
  fc
    .constantFrom(...REQUESTS.filter((d) => prefixMembers(d).length > 0))
    .chain((d) => fc.tuple(fc.constant(d), fc.constantFrom(...listFilters(d).filter((f) => f.op === 'prefix'))))
    .chain(([d, f]) => {
      if (f.op !== 'prefix') throw new Error('unreachable')
      const wrong = [
        // wrong length
        fc
          .integer({ min: 0, max: (f.bytes || f.maxBytes) + 2 })
          .filter((n) => (f.bytes > 0 ? n !== f.bytes : n > f.maxBytes))
          .chain(hex),
        // an odd number of digits
        hex(f.bytes || 1).map((s) => s.slice(0, -1)),
        // no 0x, or a non-hex digit
        hex(f.bytes || 1).map((s) => s.slice(2).padEnd(s.length, '0')),
        hex(f.bytes || 1).map((s) => s.slice(0, -1) + 'g'),
      ]
      return fc.oneof(...wrong).map((v) => [d, f.member, v] as const)
    })
    .map(([d, m, v]) => ['malformed prefix', (q) => push(q, d.member, { [m]: [v] })]),
  fc
    .constantFrom(...REQUESTS.filter((d) => prefixMembers(d).length > 1))
    .chain((d) => fc.tuple(fc.constant(d), fc.shuffledSubarray(prefixMembers(d), { minLength: 2, maxLength: 2 })))
    .map(([d, [a, b]]) => ['two prefix members', (q) => push(q, d.member, { [a]: [], [b]: [] })]),
  fc
    .constantFrom(
      ...REQUESTS.flatMap((d) => listFilters(d).map((f) => [d, f] as const)).filter(
        ([, f]) => filterValueKind(f) === 'address',
      ),
    )
    .chain(([d, f]) =>
      fc
        .oneof(
          // too short, too long, empty, or a character outside the alphabet
          fc.tuple(address, fc.nat(31)).map(([a, n]) => a.slice(0, n)),
          fc.tuple(address, address).map(([a, b]) => (a + b).slice(0, 45 + (a.length % 10))),
          fc
            .tuple(address, fc.constantFrom('0', 'O', 'I', 'l', '+', ' ', 'é'), fc.nat(31))
            .map(([a, c, i]) => a.slice(0, i) + c + a.slice(i + 1)),
        )
        .map((v) => [d, f, v] as const),
    )
    .map(([d, f, v]) => ['address value malformed', (q) => push(q, d.member, { [f.member]: [v] })]),
  fc
    .constantFrom(...REQUESTS.flatMap((d) => d.filters.map((f) => [d, f] as const)))
    .filter(([, f]) => f.op === 'in' && !!f.allowed)
    .chain(([d, f]) =>
      notIn(new Set(f.op === 'in' ? f.allowed : [])).map((v) => [
        'value not allowed',
        (q: Query) => push(q, d.member, { [f.member]: [v] }),
      ]),
    ) as fc.Arbitrary<[string, Fault]>,
  anyDecl
    .filter((d) => relationsOf(d).length > 0)
    .chain((d) => fc.tuple(fc.constant(d), fc.constantFrom(...relationsOf(d)), fc.constantFrom(null, 'true', 1)))
    .map(([d, r, v]) => ['relation flag not a boolean', (q) => push(q, d.member, { [r.flag]: v })]),
  fc
    .constantFrom(...REQUESTS.flatMap((d) => d.filters.filter((f) => f.op === 'bool').map((f) => [d, f] as const)))
    .chain(([d, f]) => fc.constantFrom('yes', 1, []).map((v) => [d, f, v] as const))
    .map(([d, f, v]) => ['boolean filter not a boolean', (q) => push(q, d.member, { [f.member]: v })]),
  anyDecl
    .chain((d) => fc.tuple(fc.constant(d), fc.constantFrom(...listFilters(d))))
    .chain(([d, f]) =>
      fc
        .array(validValue(f), { minLength: LIMITS.maxFilterValues + 1, maxLength: LIMITS.maxFilterValues + 2 })
        .map((values) => [d, f, values] as const),
    )
    .map(([d, f, values]) => ['too many filter values', (q) => push(q, d.member, { [f.member]: values })]),
  anyDecl.map((d) => [
    'too many item requests in one list',
    (q) => void (q[d.member] = Array.from({ length: LIMITS.maxItemRequests + 1 }, () => ({}))),
  ]),
]

const invalidQuery = fc.tuple(validQuery, fc.oneof(...faults)).map(([q, [name, fault]]) => {
  const copy = structuredClone(q)
  fault(copy)
  return { name, query: copy }
})

function explain(v: ValidateFunction): string {
  return JSON.stringify(v.errors?.slice(0, 3))
}

describe('the query schema and the validator agree', () => {
  test('random valid queries pass both', () => {
    fc.assert(
      fc.property(validQuery, (q) => {
        const r = validatorAccepts(q)
        assert.ok(r.ok, `validator refused ${JSON.stringify(q)}: ${r.ok ? '' : r.reason}`)
        assert.ok(schemaValidate(q), `schema refused ${JSON.stringify(q)}: ${explain(schemaValidate)}`)
      }),
      { numRuns: 600 },
    )
  })

  test('random invalid queries fail both', () => {
    const seen = new Set<string>()
    fc.assert(
      fc.property(invalidQuery, ({ name, query }) => {
        seen.add(name)
        const r = validatorAccepts(query)
        assert.ok(!r.ok, `${name}: validator accepted ${JSON.stringify(query)}`)
        assert.ok(!schemaValidate(query), `${name}: schema accepted ${JSON.stringify(query)} (validator: ${r.reason})`)
      }),
      { numRuns: 1500 },
    )
    // every kind of fault was drawn
    assert.equal(seen.size, faults.length, `faults drawn: ${[...seen].join(', ')}`)
  })

  test('what the schema cannot say is documented, and only the validator checks it', () => {
    const doc = openApiDocument() as { info: { description: string } }
    assert.match(doc.info.description, /toBlock >= fromBlock/)
    assert.match(doc.info.description, /total number of item requests/)
    const below = { fromBlock: 10, toBlock: 5 }
    assert.ok(schemaValidate(below))
    assert.equal(validatorAccepts(below).ok, false)
    // 44 base58 characters may hold 33 bytes: only the validator counts them
    const long = { fromBlock: 0, balances: [{ account: ['z'.repeat(44)] }] }
    assert.ok(schemaValidate(long))
    assert.equal(validatorAccepts(long).ok, false)
    assert.match(doc.info.description, /32-byte length of an address/)
    const many = Object.fromEntries(REQUESTS.slice(0, 2).map((d) => [d.member, Array(15).fill({})]))
    assert.ok(schemaValidate({ fromBlock: 0, ...many }))
    assert.equal(validatorAccepts({ fromBlock: 0, ...many }).ok, false)
  })
})

// --- the served document and the server's answers ------------------------------------------------

type Operation = {
  security?: Record<string, string[]>[]
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>
}

type Doc = {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, JsonSchema>; securitySchemes?: Record<string, JsonSchema> }
}

/** replaces `#/components/schemas/X` references by the schemas (the components have no cycles) */
function deref(doc: Doc, s: unknown): unknown {
  if (Array.isArray(s)) return s.map((x) => deref(doc, x))
  if (typeof s !== 'object' || s === null) return s
  const ref = (s as JsonSchema).$ref
  if (typeof ref === 'string') return deref(doc, doc.components.schemas[ref.replace('#/components/schemas/', '')])
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, deref(doc, v)]))
}

describe('GET /openapi.json on the real server', () => {
  let url: string
  let server: PortalServer
  let doc: Doc
  let first: number
  const ajv = newAjv()
  const limits = { maxItemRequests: 50, maxFilterValues: 1000 }

  /** the schema of one documented response */
  function responseSchema(path: string, method: string, status: number, type = 'application/json'): ValidateFunction {
    const op = doc.paths[path]?.[method]
    assert.ok(op, `${method} ${path} is documented`)
    const content = op.responses[String(status)]?.content?.[type]
    assert.ok(content, `${method} ${path} documents ${status} ${type}`)
    return ajv.compile(deref(doc, content.schema) as JsonSchema)
  }

  async function check(path: string, url: string, docPath: string, status = 200): Promise<unknown> {
    const r = await request(url + path)
    assert.equal(r.status, status, path)
    const body = JSON.parse(r.text)
    const v = responseSchema(docPath, 'get', status)
    assert.ok(v(body), `${path}: ${r.text.slice(0, 200)} ${explain(v)}`)
    return body
  }

  before(async () => {
    const { store } = await loadStaticStore(sampleLines())
    first = store.firstBlock()!
    server = new PortalServer({
      datasets: new DatasetRegistry([
        { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store, realTime: false },
        { name: 'numbers', aliases: [], store, realTime: false, bigintsAsNumbers: true },
      ]),
      limits,
      log: () => {},
      observer: new Observer({ logger: createLogger({ level: 'silent' }), metrics: new Metrics() }),
    })
    url = await server.listen(0, '127.0.0.1')
    const r = await request(`${url}/openapi.json`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], 'application/json')
    doc = JSON.parse(r.text)
  })
  after(() => server.close())

  test('the document: OpenAPI 3.1 with the server limits, every schema compiles (strict)', () => {
    assert.equal(doc.openapi, '3.1.0')
    assert.deepEqual(
      doc,
      JSON.parse(JSON.stringify(openApiDocument({ limits, maxBodyBytes: DEFAULT_LIMITS.maxBodyBytes }))),
    )
    for (const [name, s] of Object.entries(doc.components.schemas)) {
      assert.doesNotThrow(() => newAjv().compile(deref(doc, s) as JsonSchema), name)
    }
    for (const p of [
      '/datasets',
      '/datasets/{dataset}/stream',
      '/datasets/{dataset}/finalized-stream',
      '/datasets/{dataset}/metadata',
      '/datasets/{dataset}/head',
      '/datasets/{dataset}/finalized-head',
      '/datasets/{dataset}/timestamps/{seconds}/block',
    ]) {
      assert.ok(doc.paths[p], p)
    }
    const stream = doc.paths['/datasets/{dataset}/stream'].post.responses
    assert.deepEqual(Object.keys(stream).sort(), ['200', '204', '400', '404', '409', '429', '501', '503'])
    // the served Query schema uses the server's limits
    const q = doc.components.schemas.Query as { properties: Record<string, { maxItems?: number }> }
    assert.equal(q.properties.instructions.maxItems, 50)
  })

  test('the GET endpoints answer what the document says', async () => {
    const list = (await check('/datasets', url, '/datasets')) as { dataset: string }[]
    assert.equal(list.length, 2)
    await check('/datasets/solana-complete/metadata', url, '/datasets/{dataset}/metadata')
    await check('/datasets/solana-complete/metadata?expand[]=metadata', url, '/datasets/{dataset}/metadata')
    const head = (await check('/datasets/solana-complete/head', url, '/datasets/{dataset}/head')) as { number: number }
    assert.ok(head.number > 0)
    await check('/datasets/solana-complete/finalized-head', url, '/datasets/{dataset}/finalized-head')
    await check('/health', url, '/health')
    await check('/ready', url, '/ready')
    const metrics = await request(`${url}/metrics`)
    assert.equal(metrics.status, 200)
    assert.ok(doc.paths['/metrics'].get.responses['200'].content?.['text/plain'])
    await check('/datasets/solana-complete/timestamps/0/block', url, '/datasets/{dataset}/timestamps/{seconds}/block')
    await check(
      '/datasets/solana-complete/timestamps/99999999999/block',
      url,
      '/datasets/{dataset}/timestamps/{seconds}/block',
      404,
    )
  })

  test('every stream line with every field matches the Block schema (strings and bare integers)', async () => {
    const v = responseSchema('/datasets/{dataset}/stream', 'post', 200, 'application/jsonl')
    const fields = Object.fromEntries(
      SELECTOR_NAMES.map((s) => [s, Object.fromEntries([...SELECTOR_INDEX[s].keys()].map((k) => [k, true]))]),
    )
    const everything = Object.fromEntries(REQUESTS.map((d) => [d.member, [{}]]))
    for (const ds of ['solana-mainnet-complete', 'numbers']) {
      const r = await postJson(`${url}/datasets/${ds}/stream`, { fromBlock: first, fields, ...everything })
      assert.equal(r.status, 200)
      const lines = r.text.split('\n').filter((l) => l)
      assert.ok(lines.length > 10)
      for (const line of lines) assert.ok(v(JSON.parse(line)), `${line.slice(0, 200)}: ${explain(v)}`)
    }
  })

  test('every documented GET path is served, with a documented status', async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!ops.get) continue
      const concrete = path.replace('{dataset}', 'solana-complete').replace('{seconds}', '0')
      const r = await request(url + concrete)
      assert.ok(String(r.status) in ops.get.responses, `${path}: ${r.status}`)
    }
  })

  test('documented errors: 400 and 404 as text, 405 on the document', async () => {
    const bad = await postJson(`${url}/datasets/solana-complete/stream`, { fromBlock: 0, foo: 1 })
    assert.equal(bad.status, 400)
    assert.ok(doc.paths['/datasets/{dataset}/stream'].post.responses['400'].content?.['text/plain'])
    const missing = await postJson(`${url}/datasets/nope/stream`, { fromBlock: 0 })
    assert.equal(missing.status, 404)
    const post = await request(`${url}/openapi.json`, { method: 'POST' })
    assert.equal(post.status, 405)
    assert.equal(post.headers.allow, 'GET, HEAD')
  })
})

describe('API keys and CORS in the served document', () => {
  let url: string
  let server: PortalServer
  let doc: Doc
  const KEY = 'numbers-only-key'
  const ORIGIN = 'https://app.example'

  before(async () => {
    const { store } = await loadStaticStore(sampleLines())
    server = new PortalServer({
      datasets: new DatasetRegistry([
        { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store, realTime: false },
        { name: 'numbers', aliases: [], store, realTime: false },
      ]),
      log: () => {},
      apiKeys: new ApiKeys({
        keys: [{ id: 'numbers', sha256: sha256Hex(KEY), datasets: ['numbers'] }],
        header: 'X-Api-Key',
        rateLimit: null,
        maxStreamsPerClient: 4,
      }),
      cors: new Cors([ORIGIN]),
    })
    url = await server.listen(0, '127.0.0.1')
    const r = await request(`${url}/openapi.json`)
    assert.equal(r.status, 200, 'the document needs no key')
    doc = JSON.parse(r.text)
  })
  after(() => server.close())

  test('without keys and CORS the document has neither', () => {
    const plain = openApiDocument() as unknown as Doc
    assert.equal(plain.components.securitySchemes, undefined)
    for (const [path, ops] of Object.entries(plain.paths)) {
      assert.equal(ops.options, undefined, path)
      for (const op of Object.values(ops)) assert.equal(op.security, undefined, path)
    }
  })

  test('the key header is the security scheme; a Bearer token by default', () => {
    assert.deepEqual(
      doc,
      JSON.parse(
        JSON.stringify(
          openApiDocument({ maxBodyBytes: DEFAULT_LIMITS.maxBodyBytes, apiKeyHeader: 'x-api-key', cors: true }),
        ),
      ),
    )
    const scheme = doc.components.securitySchemes?.apiKey as JsonSchema
    assert.deepEqual([scheme.type, scheme.in, scheme.name], ['apiKey', 'header', 'x-api-key'])
    const bearer = (openApiDocument({ apiKeyHeader: 'authorization' }) as unknown as Doc).components.securitySchemes
    assert.deepEqual([bearer?.apiKey.type, bearer?.apiKey.scheme], ['http', 'bearer'])
  })

  test('every dataset operation needs the key and documents 401 (403 for one dataset); the others need none', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const guarded = path.startsWith('/datasets') && method !== 'options'
        assert.equal(op.security !== undefined, guarded, `${method} ${path}`)
        if (!guarded) continue
        assert.deepEqual(op.security, [{ apiKey: [] }], `${method} ${path}`)
        assert.ok(op.responses['401']?.content?.['text/plain'], `${method} ${path} 401`)
        assert.equal('403' in op.responses, path !== '/datasets', `${method} ${path} 403`)
      }
    }
  })

  test('the server answers the documented 401 and 403, and 200 with the key', async () => {
    const documented = (path: string, method: string, status: number) =>
      assert.ok(String(status) in doc.paths[path][method].responses, `${method} ${path} ${status}`)
    const none = await request(`${url}/datasets/numbers/head`)
    assert.equal(none.status, 401)
    documented('/datasets/{dataset}/head', 'get', 401)
    const headers = { 'X-Api-Key': KEY }
    const other = await postJson(`${url}/datasets/solana-complete/stream`, { fromBlock: 0 }, headers)
    assert.equal(other.status, 403)
    documented('/datasets/{dataset}/stream', 'post', 403)
    const ok = await request(`${url}/datasets/numbers/head`, { headers })
    assert.equal(ok.status, 200)
    const list = await request(`${url}/datasets`, { headers })
    assert.deepEqual(
      (JSON.parse(list.text) as { dataset: string }[]).map((d) => d.dataset),
      ['numbers'],
    )
  })

  test('the documented preflight: 204 for the allowed origin, 403 for another, no key needed', async () => {
    for (const path of Object.keys(doc.paths)) assert.ok(doc.paths[path].options, `OPTIONS ${path}`)
    const ids = Object.values(doc.paths).map((ops) => (ops.options as unknown as { operationId: string }).operationId)
    assert.equal(new Set(ids).size, ids.length, 'preflight operation ids are unique')
    const preflight = (origin: string) =>
      request(`${url}/datasets/numbers/stream`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'x-api-key',
        },
      })
    const allowed = await preflight(ORIGIN)
    assert.equal(allowed.status, 204)
    assert.equal(allowed.headers['access-control-allow-origin'], ORIGIN)
    assert.equal(allowed.headers['access-control-allow-methods'], 'GET, HEAD, POST')
    const op = doc.paths['/datasets/{dataset}/stream'].options as unknown as {
      responses: Record<string, { headers?: Record<string, unknown> }>
    }
    for (const h of ['Access-Control-Allow-Origin', 'Access-Control-Allow-Methods', 'Access-Control-Max-Age'])
      assert.ok(op.responses['204'].headers?.[h], h)
    const refused = await preflight('https://elsewhere.example')
    assert.equal(refused.status, 403)
    assert.ok('403' in op.responses)
  })
})
