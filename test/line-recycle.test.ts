/**
 * The memory of big lines is reused once their consumer is done with them (src/query/bytes.ts
 * `recycleLine`): the response writer gives a line buffer back when the socket (or the gzip
 * stream) took its bytes, and the lines rendered after it are written into it; the bytes a client
 * receives stay those of the in-memory store.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { LineBuf, lineStats, recycleLine } from '../src/query/bytes.ts'
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
  // small lines share a buffer: never given back
  const e = line(o, 'small')
  const r1 = lineStats.recycled
  recycleLine(e)
  assert.equal(lineStats.recycled, r1)
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
