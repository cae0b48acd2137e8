// A second dataset, declared here, runs through the generic engine (parse → plan → execute →
// render) over the in-memory store and over a cold chunk file: the engine, the stores and the
// schema read the declaration handed to them, never the Solana one. A Solana column, member or
// kind read anywhere on the way fails here (the toy tables have none of them).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { defineDataset, field, type StoredBlock } from '../src/dataset/types.ts'
import { parseQuery } from '../src/query/parse.ts'
import { executeQuery } from '../src/query/execute.ts'
import { QueryError } from '../src/query/errors.ts'
import type { Chunk, Table } from '../src/store/chunk.ts'
import { readFooter, writeChunkFile } from '../src/store/cold/chunk-file.ts'
import { DiskChunk } from '../src/store/cold/disk-chunk.ts'
import { ByteLru } from '../src/store/cold/lru.ts'
import { MemoryChunk } from '../src/store/memory.ts'
import type { BlockStore } from '../src/store/types.ts'
import { blockJsonSchema, queryJsonSchema } from '../src/server/openapi.ts'
import { tempDir } from './support/cold/util.ts'

/** an order's `meta`, written by the dataset's own shaped writer (so that its use shows) */
const shapedMeta = (v: { a: number }) => '{"a":' + v.a + ',"shaped":true}'

const TOY = defineDataset({
  type: 'toy',
  header: [field('number', 'u32'), field('hash', 'safeAscii'), field('timestamp', 'u32')],
  tables: [
    {
      kind: 'order',
      member: 'orders',
      fields: [
        field('orderId', 'u32'),
        field('trader', 'safeAscii'),
        field('amount', 'u64'),
        field('open', 'bool'),
        field('tags', 'safeAsciiList'),
        field('meta', 'json', true, undefined, { render: shapedMeta }),
      ],
      prune: ['trader'],
    },
    {
      kind: 'fill',
      member: 'fills',
      fields: [field('orderId', 'u32'), field('price', 'u64'), field('venue', 'string', true, ['venue', 'market'])],
    },
  ],
  requests: [
    {
      kind: 'order',
      member: 'orders',
      filters: [
        { member: 'trader', op: 'in', column: 'trader', allowed: ['alice', 'bob', 'carol'] },
        { member: 'open', op: 'bool', column: 'open' },
      ],
    },
    {
      kind: 'fill',
      member: 'fills',
      filters: [{ member: 'venue', op: 'in', column: 'venue', allowed: ['dex', 'cex'] }],
    },
  ],
  relations: [
    { from: 'order', flag: 'fills', to: 'fill', join: 'group', group: 'orderId', describe: 'of the same order' },
  ],
})

const header = (number: number) => ({
  number,
  hash: `h${number}`,
  timestamp: 1000 + number,
  parentNumber: number - 1,
  parentHash: `h${number - 1}`,
  height: number,
})

interface ToyBlock {
  header: ReturnType<typeof header>
  orders: {
    orderId: number
    trader: string
    amount: bigint
    open: boolean
    tags: string[]
    meta: { a: number } | null
  }[]
  fills: { orderId: number; price: bigint; venue: string | null }[]
}

const BLOCKS: readonly StoredBlock[] = [
  {
    header: header(10),
    orders: [
      { orderId: 1, trader: 'alice', amount: 5n, open: true, tags: ['x'], meta: { a: 1 } },
      { orderId: 2, trader: 'bob', amount: 7n, open: false, tags: [], meta: null },
    ],
    fills: [
      { orderId: 1, price: 100n, venue: 'dex' },
      { orderId: 1, price: 101n, venue: null },
      { orderId: 2, price: 99n, venue: 'cex' },
    ],
  },
  {
    header: header(11),
    orders: [{ orderId: 1, trader: 'carol', amount: 1n, open: true, tags: ['y', 'z'], meta: { a: 2 } }],
    fills: [],
  },
  { header: header(12), orders: [], fills: [{ orderId: 3, price: 5n, venue: 'dex' }] },
] satisfies ToyBlock[] as ToyBlock[]

const QUERY = {
  type: 'toy',
  fromBlock: 10,
  toBlock: 12,
  fields: {
    block: { number: true, hash: true },
    order: { orderId: true, trader: true, amount: true, tags: true, meta: true },
    fill: { orderId: true, price: true, market: true },
  },
  orders: [{ trader: ['alice', 'carol'], open: true, fills: true }],
  fills: [{ venue: ['cex'] }],
}

const EXPECTED = [
  '{"header":{"number":10,"hash":"h10"},' +
    '"orders":[{"orderId":1,"trader":"alice","amount":"5","tags":["x"],"meta":{"a":1,"shaped":true}}],' +
    '"fills":[{"orderId":1,"price":"100","market":"dex"},{"orderId":1,"price":"101","market":null},' +
    '{"orderId":2,"price":"99","market":"cex"}]}',
  '{"header":{"number":11,"hash":"h11"},' +
    '"orders":[{"orderId":1,"trader":"carol","amount":"1","tags":["y","z"],"meta":{"a":2,"shaped":true}}]}',
  // the last block of the range, output as its boundary
  '{"header":{"number":12,"hash":"h12"}}',
]

function storeOf(chunk: Chunk): BlockStore {
  const none = () => {
    throw new Error('not used')
  }
  return {
    firstBlock: () => chunk.firstBlock,
    head: none,
    finalizedHead: none,
    chainBefore: none,
    waitFor: none,
    async *chunks() {
      yield chunk
    },
  }
}

/** the chunk's tables without stored JSON tokens: the engine renders them as strings */
function withoutTokens(chunk: Chunk): Chunk {
  return {
    firstBlock: chunk.firstBlock,
    lastBlock: chunk.lastBlock,
    blockCount: chunk.blockCount,
    header: (f) => chunk.header(f),
    table(kind: string): Table {
      const t = chunk.table(kind)
      return { rowCount: t.rowCount, blockOffsets: t.blockOffsets, column: (f) => t.column(f) }
    },
  }
}

async function run(chunk: Chunk, body: unknown = QUERY): Promise<{ lines: string[]; empty: boolean[] }> {
  const q = parseQuery(body, undefined, TOY)
  const lines: string[] = []
  const empty: boolean[] = []
  for await (const b of executeQuery(storeOf(chunk), q, { to: 12, finalizedOnly: true })) {
    lines.push(b.line)
    empty.push(b.empty)
  }
  return { lines, empty }
}

test('a toy dataset runs through the engine over the in-memory store (bytes and strings)', async () => {
  const chunk = new MemoryChunk(BLOCKS, TOY)
  for (const c of [chunk, withoutTokens(chunk)]) {
    const r = await run(c)
    assert.deepEqual(r.lines, EXPECTED)
    assert.deepEqual(r.empty, [false, false, true])
  }
})

test('a toy dataset runs through the engine over a cold chunk file', async () => {
  const path = join(tempDir('solportal-toy-'), 'chunk')
  await writeChunkFile(path, BLOCKS, { dataset: TOY, fsync: false })
  const { footer } = readFooter(path)
  assert.deepEqual(Object.keys(footer.kinds).sort(), ['fill', 'order'])
  const chunk = new DiskChunk(path, footer, new ByteLru(16 << 20), undefined, TOY)
  assert.deepEqual((await run(chunk)).lines, EXPECTED)
  // the pruning index is the toy's: a trader no chunk holds prunes the request
  assert.equal(chunk.mayContain('order', 'trader', new Set(['bob'])), true)
  const none = { ...QUERY, orders: [{ trader: ['carol'], open: false }], fills: undefined }
  assert.deepEqual((await run(chunk, none)).lines, [
    '{"header":{"number":10,"hash":"h10"}}',
    '{"header":{"number":12,"hash":"h12"}}',
  ])
})

test("the toy dataset's query is validated against its own declaration", () => {
  assert.throws(
    () => parseQuery({ ...QUERY, type: 'solana' }, undefined, TOY),
    (e: unknown) => e instanceof QueryError && /unsupported dataset type "solana", expected "toy"/.test(e.message),
  )
  assert.throws(() => parseQuery({ fromBlock: 0, transactions: [] }, undefined, TOY), /\.transactions: unknown member/)
  assert.throws(() => parseQuery({ fromBlock: 0, orders: [{ trader: ['dave'] }] }, undefined, TOY), /expected one of/)
  assert.throws(() => parseQuery({ fromBlock: 0, fields: { transaction: {} } }, undefined, TOY), /unknown member/)
  const schema = queryJsonSchema({}, TOY) as { properties: Record<string, unknown> }
  assert.deepEqual(Object.keys(schema.properties).slice(-2), ['orders', 'fills'])
  const block = blockJsonSchema(TOY) as { properties: Record<string, unknown> }
  assert.deepEqual(Object.keys(block.properties), ['header', 'orders', 'fills'])
})
