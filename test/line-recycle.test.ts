/**
 * The memory of big lines is reused once their consumer is done with them (src/util/json-bytes.ts
 * `recycleLine`): the response writer gives a line buffer back when the socket (or the gzip
 * stream) took its bytes, and the lines rendered after it are written into it; the bytes a client
 * receives stay those of the in-memory store.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { LineBuf, lineStats, recycleLine } from '../src/util/json-bytes.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import type { Block } from '../src/model.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { StaticStore } from '../src/store/static.ts'
import type { DatasetDirStore } from '../src/store/dataset-dir.ts'
import { datasetOf } from './support/cold/util.ts'
import { request } from './support/http/client.ts'
import { everything } from './support/http/hostile.ts'
import { randomBlocks } from './support/random-blocks.ts'

function line(o: LineBuf, text: string): Buffer {
  o.begin()
  o.str(text)
  return o.takeLine()
}

test('a big line given back is written over by a later line; shared or unknown buffers are not', () => {
  const o = new LineBuf()
  const big = 'x'.repeat(100_000)
  const a = line(o, big) // its buffer to itself
  const b = line(o, big) // in the buffer made after a
  assert.equal(a.toString(), big + '\n')
  const r0 = lineStats.reused
  recycleLine(a)
  recycleLine(a) // twice: once only
  recycleLine(Buffer.alloc(200_000)) // not a line's buffer
  const c = line(o, 'y'.repeat(100_000)) // in the buffer made after b: a's, given back
  const d = line(o, 'z'.repeat(100_000))
  assert.equal(lineStats.reused - r0, 1)
  assert.equal(d.buffer, a.buffer, "the line after c went into a's memory")
  assert.equal(b.toString(), big + '\n')
  assert.equal(c.toString(), 'y'.repeat(100_000) + '\n')
  assert.equal(d.toString(), 'z'.repeat(100_000) + '\n')
  // a small line in the buffer the LineBuf still writes into: not given back
  const e = line(o, 'small')
  const r1 = lineStats.recycled
  recycleLine(e)
  assert.equal(lineStats.recycled, r1)
})

test('small lines share a buffer: reused once the LineBuf left it and every line of it is back', () => {
  const o = new LineBuf(1 << 19)
  const text = 'x'.repeat(10_000)
  const first = [line(o, text)]
  const ab = first[0].buffer
  let l = line(o, text)
  for (; l.buffer === ab; l = line(o, text)) first.push(l)
  assert.ok(first.length > 10, 'many lines in the first buffer')
  const r0 = lineStats.recycled
  // all but the first line back, as one view of adjacent lines (as the response writer merges them)
  const rest = first.slice(1)
  recycleLine(
    Buffer.from(
      ab,
      rest[0].byteOffset,
      rest.reduce((n, x) => n + x.length, 0),
    ),
  )
  assert.equal(lineStats.recycled, r0, 'a line is still out')
  let m = line(o, text)
  for (; m.buffer === l.buffer; m = line(o, text));
  assert.notEqual(m.buffer, ab, 'not reused while a line of it is out')
  recycleLine(first[0])
  assert.equal(lineStats.recycled, r0 + 1)
  assert.equal(first[0].toString(), text + '\n', 'the lines are intact until written over')
  let k = line(o, text)
  for (const b = m.buffer; k.buffer === b; k = line(o, text));
  assert.equal(k.buffer, ab, 'the next buffer is the first one, given back')
  assert.equal(k.toString(), text + '\n')
})

test("a query's last line buffer comes back once its lines are given back, and the next query starts in it", async () => {
  const few = randomBlocks(6, { blocks: 6, maxTx: 4 })
  const last = few[few.length - 1].header.number
  const body = { fromBlock: few[0].header.number, fields: { block: { number: true } }, includeAllBlocks: true }
  const run = async () => {
    const out: Buffer[] = []
    for await (const b of executeQuery(new StaticStore(few, 2), parseQuery(body), { to: last, finalizedOnly: true }))
      out.push((b as { data?: Buffer }).data!)
    return out
  }
  const a = await run()
  assert.ok(a.length === few.length && a.every((l) => l.buffer === a[0].buffer), 'small lines in one buffer')
  const r0 = lineStats.recycled
  for (const l of a) recycleLine(l)
  assert.equal(lineStats.recycled, r0 + 1, 'the buffer the query ended in is given back')
  const b = await run()
  assert.equal(b[0].buffer, a[0].buffer, 'the next query writes into it')
})

const blocks: Block[] = randomBlocks(5, { blocks: 30, maxTx: 120 })
let store: DatasetDirStore
let server: PortalServer
let url: string

before(async () => {
  store = await datasetOf(blocks, { targetBlocks: 8 })
  server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'd', aliases: [], store, realTime: false, coldDir: store.cold.dir }]),
    limits: { responseTimeMs: 600_000 },
    rateLimit: null,
    log: () => {},
    renderPool: null,
  })
  url = await server.listen(0, '127.0.0.1')
})

after(async () => {
  await server.close()
  await store.close()
})

test('a selective stream gives its shared line buffers back and sends the in-memory store lines', async () => {
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const body = {
    type: 'solana',
    fromBlock: first,
    toBlock: last,
    fields: { block: { number: true }, instruction: { data: true } },
    instructions: [{}],
  }
  const want: string[] = []
  for await (const b of executeQuery(new StaticStore(blocks, 8), parseQuery(body), { to: last, finalizedOnly: true }))
    want.push(b.line)
  assert.ok(want.every((l) => l.length < 1 << 16) && want.join('\n').length > 1 << 18, 'lines that share buffers')
  const r0 = lineStats.recycled
  const reply = await request(`${url}/datasets/d/stream`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  assert.equal(reply.status, 200)
  assert.deepEqual(reply.text.split('\n').slice(0, -1), want)
  assert.ok(lineStats.recycled > r0, 'shared line buffers given back once written')
})

test('lines held back and then not handed out (an empty block ending a chunk) go back too: every line buffer of a query comes back', async () => {
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  // a program of some blocks only, such that a chunk (8 blocks) ends on a block without it and a
  // later block has it: the engine holds that block's line back, then drops it
  const programsOf = (b: Block) => new Set(b.instructions.map((i) => i.programId))
  const program = [...new Set(blocks.flatMap((b) => [...programsOf(b)]))].find((p) =>
    [7, 15, 23].some((e) => !programsOf(blocks[e]).has(p) && blocks.slice(e + 1, -1).some((b) => programsOf(b).has(p))),
  )
  assert.ok(program !== undefined, 'a program missing from a chunk-ending block')
  const body = {
    type: 'solana',
    fromBlock: first,
    toBlock: last,
    fields: { block: { number: true }, instruction: { data: true } },
    instructions: [{ programId: [program] }],
  }
  const out: Buffer[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: true }))
    out.push((b as { data?: Buffer }).data!)
  assert.ok(out.length > 1 && out.every((l) => l !== undefined), 'lines as bytes')
  const r0 = lineStats.recycled
  for (const l of out) recycleLine(l)
  assert.equal(lineStats.recycled - r0, new Set(out.map((l) => l.buffer)).size, 'every line buffer back')
})

test('a wide stream reuses its line buffers and sends the in-memory store lines, identity and gzip', async () => {
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const body = everything(first, last)
  const want: string[] = []
  for await (const b of executeQuery(new StaticStore(blocks, 8), parseQuery(body), { to: last, finalizedOnly: true }))
    want.push(b.line)
  assert.ok(
    want.filter((l) => l.length >= 1 << 16).length >= 10,
    'lines big enough to get a buffer each (64 KiB and more)',
  )
  for (const gzip of [false, true]) {
    const r0 = lineStats.reused
    const reply = await request(`${url}/datasets/d/stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
      body: JSON.stringify(body),
    })
    assert.equal(reply.status, 200)
    assert.equal(reply.headers['content-encoding'], gzip ? 'gzip' : undefined)
    assert.deepEqual(reply.text.split('\n').slice(0, -1), want)
    assert.ok(lineStats.reused > r0, `line buffers reused (gzip: ${gzip})`)
  }
})
