/**
 * The HTTP server under hostile and slow clients (real server on loopback, real sockets, real
 * gzip, real chunk files): malformed requests are 4xx without a logged stack, timestamp lookups are
 * bounded, slow uploads and clients that never read free their slots, store read errors are never
 * an empty or clean 200, shutdown ends streams on a complete line with a closed gzip stream.
 */
import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { test } from 'node:test'
import zlib from 'node:zlib'
import type { Block } from '../src/model.ts'
import type { DatasetConfig } from '../src/server/datasets.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import type { RateLimit, ServerLimits } from '../src/server/http.ts'
import { PortalServer } from '../src/server/http.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { coldDir, openDatasetDir, writeDatasetMeta } from '../src/store/dataset-dir.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { tempDir, writeStore } from './support/cold/util.ts'
import { lines, postJson, request } from './support/http/client.ts'
import { everything, neverReader, postFrom, rawExchange, slowUpload, statusOf, until } from './support/http/hostile.ts'
import { GENESIS, mkChain } from './support/realtime/blocks.ts'

interface Started {
  url: string
  port: number
  server: PortalServer
  logged: string[]
}

async function start(
  store: BlockStore,
  limits: Partial<ServerLimits> = {},
  rateLimit: RateLimit | null = null,
  extra: Partial<DatasetConfig> = {},
): Promise<Started> {
  const logged: string[] = []
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'd', aliases: [], store, realTime: false, ...extra }]),
    limits,
    rateLimit,
    log: (level, msg) => {
      if (level === 'error') logged.push(msg)
    },
  })
  const url = await server.listen(0, '127.0.0.1')
  return { url, port: Number(new URL(url).port), server, logged }
}

/** `count` blocks each carrying a log message of `bytes` random base64 characters */
function bigBlocks(count: number, bytes: number): Block[] {
  return mkChain(GENESIS, count).map((b) => {
    b.logs[0] = { ...b.logs[0], message: randomBytes((bytes * 3) / 4).toString('base64') }
    return b
  })
}

const SMALL = mkChain(GENESIS, 20)
const FIRST = SMALL[0].header.number

test('malformed request targets are 400 without a logged error, and rate limited', async () => {
  const { url, port, server, logged } = await start(new StaticStore(SMALL), {}, { perSecond: 1, burst: 5 })
  try {
    assert.equal((await request(`${url}/datasets/d/%E0%A4%A`)).status, 400)
    assert.equal((await request(`${url}/%ZZ`)).status, 400)
    assert.equal((await request(`${url}/datasets/%ZZ/head`)).status, 400)
    const raw = (target: string) => rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    assert.equal(statusOf(await raw('http://a:b:c/')), 400)
    assert.equal(statusOf(await raw('/datasets/%/head')), 400)
    assert.deepEqual(logged, [])
    // every request counts against the client's rate limit, malformed ones too
    const r = await request(`${url}/%ZZ`)
    assert.equal(r.status, 429)
    assert.ok(Number(r.headers['retry-after']) >= 1)
  } finally {
    await server.close()
  }
})

test('timestamp lookups open O(log n) chunks, and are rate limited', async () => {
  const blocks = mkChain(GENESIS, 2_000, 'a', (slot) => slot % 7 === 0)
  const inner = new StaticStore(blocks, 4)
  let opened = 0
  const counting: BlockStore = {
    firstBlock: () => inner.firstBlock(),
    head: () => inner.head(),
    finalizedHead: () => inner.finalizedHead(),
    chainBefore: (n, l) => inner.chainBefore(n, l),
    waitFor: (n, f, t, s) => inner.waitFor(n, f, t, s),
    async *chunks(from, to, fin): AsyncIterable<Chunk> {
      for await (const c of inner.chunks(from, to, fin)) {
        opened++
        yield c
      }
    },
  }
  const { url, server } = await start(counting, {}, { perSecond: 1, burst: 12 })
  try {
    const times = blocks.map((b) => b.header.timestamp)
    const probes = [0, times[0], times[0] + 1, times[777] - 1, times[1500], times[1999], times[1999] + 1]
    for (const ts of probes) {
      opened = 0
      const r = await request(`${url}/datasets/d/timestamps/${ts}/block`)
      const expected = blocks.find((b) => b.header.timestamp >= ts)
      if (!expected) {
        assert.equal(r.status, 404)
      } else {
        assert.equal(r.status, 200)
        assert.deepEqual(JSON.parse(r.text), { block_number: expected.header.number })
      }
      // 500 chunks of 4 blocks: a scan opens hundreds; the search ~2 per halving of ~2,300 slots
      assert.ok(opened <= 30, `${opened} chunks opened for ${ts}`)
    }
    let limited = 0
    for (let i = 0; i < 10; i++) {
      if ((await request(`${url}/datasets/d/timestamps/${times[5]}/block`)).status === 429) limited++
    }
    assert.ok(limited >= 4, `${limited} of 10 lookups above the burst were limited`)
  } finally {
    await server.close()
  }
})

test('the response size budget counts UTF-8 bytes, not UTF-16 units', async () => {
  const blocks = mkChain(GENESIS, 10).map((b) => {
    b.logs[0] = { ...b.logs[0], message: 'ü'.repeat(1_000) }
    return b
  })
  const limit = 3_000
  const { url, server } = await start(new StaticStore(blocks), { responseBytes: limit })
  try {
    const r = await postJson(`${url}/datasets/d/stream`, {
      fromBlock: blocks[0].header.number,
      fields: { log: { message: true } },
      logs: [{}],
    })
    assert.equal(r.status, 200)
    const ls = r.text.split('\n').filter((l) => l.length > 0)
    const bytes = ls.map((l) => Buffer.byteLength(l) + 1)
    const before = bytes.slice(0, -1).reduce((a, b) => a + b, 0)
    assert.ok(bytes[0] > 2_000 && ls[0].length < 1_200, 'lines of 2-byte characters')
    assert.ok(before < limit, `the response went on past ${limit} bytes (${before} before its last line)`)
    assert.ok(before + bytes[bytes.length - 1] >= limit)
  } finally {
    await server.close()
  }
})

/** the zlib stream owning a native zlib handle (node links them with its owner symbol) */
function ownerOf(handle: object): zlib.Gzip | undefined {
  for (const sym of Object.getOwnPropertySymbols(handle)) {
    const v = (handle as Record<symbol, unknown>)[sym]
    if (v && typeof v === 'object' && 'destroyed' in v) return v as zlib.Gzip
  }
  return undefined
}

test('an aborted gzip response destroys its gzip stream', async () => {
  const handles: object[] = []
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'ZLIB') handles.push(resource)
    },
  }).enable()
  const blocks = bigBlocks(40, 256 * 1024)
  const { url, server } = await start(new StaticStore(blocks), { responseBytes: 1e9 })
  try {
    await new Promise<void>((resolve, reject) => {
      const req = http.request(
        `${url}/datasets/d/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json', 'Accept-Encoding': 'gzip' } },
        (res) => {
          assert.equal(res.headers['content-encoding'], 'gzip')
          res.once('data', () => {
            req.destroy()
            resolve()
          })
        },
      )
      req.on('error', () => undefined)
      req.on('response', () => undefined)
      req.end(JSON.stringify({ fromBlock: blocks[0].header.number, fields: { log: { message: true } }, logs: [{}] }))
      setTimeout(() => reject(new Error('no data')), 20_000).unref()
    })
    await until(() => server.activeStreamCount === 0, 20_000, 'the stream to end')
    const streams = handles.map(ownerOf)
    assert.ok(streams.length >= 1 && streams.every((z) => z != null))
    await until(() => streams.every((z) => z!.destroyed), 5_000, 'the gzip stream to be destroyed')
  } finally {
    hook.disable()
    await server.close()
  }
})

test('slow uploads hold no stream slot and end with 408; per-address stream cap is 429', async () => {
  const { url, port, server } = await start(new StaticStore(SMALL), {
    maxConcurrentStreams: 1,
    maxStreamsPerClient: 3,
    // generous: the uploads must still be open when the 4th request comes, on a loaded machine too
    bodyTimeoutMs: 8_000,
    headWaitMs: 1_500,
  })
  try {
    const slow = [1, 2, 3].map(() => slowUpload(port, 100, '127.0.0.2'))
    await until(() => server.streamsOf('127.0.0.2') === 3, 7_000, 'the three uploads to be counted')
    // the slot is free: the uploads have not sent their bodies
    const r = await postJson(`${url}/datasets/d/stream`, { fromBlock: FIRST, toBlock: FIRST })
    assert.equal(r.status, 200)
    // their address holds its 3 streams: a 4th is refused at once
    const fourth = await postFrom(`${url}/datasets/d/stream`, { fromBlock: FIRST }, { localAddress: '127.0.0.2' })
    assert.equal(fourth.status, 429)
    assert.equal(fourth.headers['retry-after'], '1')
    for (const s of slow) assert.equal(statusOf(await s.answer), 408)
  } finally {
    await server.close()
  }
})

test('a client that never reads is cut after the write timeout and frees its slot', async () => {
  const blocks = bigBlocks(64, 1024 * 1024)
  const { url, port, server } = await start(new StaticStore(blocks), {
    maxConcurrentStreams: 1,
    writeTimeoutMs: 1_000,
    responseBytes: 1e9,
    responseTimeMs: 120_000,
  })
  try {
    const q = { fromBlock: blocks[0].header.number, fields: { log: { message: true } }, logs: [{}] }
    const staller = neverReader(port, '/datasets/d/stream', q)
    await until(() => server.activeStreamCount === 1, 10_000, 'the stalled stream to start')
    // the slot is taken now; the stalled response is cut once its socket stops taking bytes
    await until(() => server.activeStreamCount === 0, 20_000, 'the stalled stream to be cut')
    const r = await postJson(`${url}/datasets/d/stream`, {
      fromBlock: blocks[0].header.number,
      toBlock: blocks[0].header.number,
    })
    assert.equal(r.status, 200)
    assert.equal(server.bufferedBytes, 0)
    staller.close()
  } finally {
    await server.close()
  }
})

test(
  'clients that never read fill the stream buffer budget: a point query still answers from the reserve',
  { timeout: 60_000 },
  async () => {
    const blocks = bigBlocks(48, 1024 * 1024)
    const budget = 256 * 1024
    const { url, port, server } = await start(new StaticStore(blocks), {
      streamBufferBytes: budget,
      writeTimeoutMs: 0,
      responseBytes: 1e9,
      responseTimeMs: 120_000,
    })
    const stallers: { close: () => void }[] = []
    try {
      const q = { fromBlock: blocks[0].header.number, fields: { log: { message: true } }, logs: [{}] }
      for (let i = 0; i < 4; i++) stallers.push(neverReader(port, '/datasets/d/stream', q))
      // 1 MiB blocks pile up in sockets nobody reads: the budget is overfull, no response of the
      // ordinary kind renders, and none of these is cut (no write timeout)
      await until(() => server.bufferedBytes >= 2 * budget, 20_000, 'the budget to fill')
      const mid = blocks[20].header.number
      const r = await postJson(`${url}/datasets/d/stream`, {
        fromBlock: mid,
        toBlock: mid,
        fields: { block: { number: true } },
      })
      assert.equal(r.status, 200)
      assert.deepEqual(JSON.parse(r.text), { header: { number: mid } })
      // an open range near the head (a client following it) is as short
      const near = blocks[blocks.length - 2].header.number
      const tail = await postJson(`${url}/datasets/d/stream`, { fromBlock: near, fields: { block: { number: true } } })
      assert.equal(tail.status, 200)
      assert.deepEqual(lines(tail), [{ header: { number: near } }, { header: { number: near + 1 } }])
      assert.equal(server.activeStreamCount, 4, 'the stalled responses are still open')
      // bounded: twice the budget plus the reserve plus a block per rendering stream (2)
      assert.ok(server.bufferedBytes <= 3 * budget + 2 * 1.5 * 1024 * 1024, `${server.bufferedBytes} bytes in flight`)
    } finally {
      for (const st of stallers) st.close()
      await server.close()
    }
  },
)

test('a flood of point queries does not starve a big stream', { timeout: 120_000 }, async () => {
  const blocks = bigBlocks(48, 256 * 1024)
  const { url, server } = await start(new StaticStore(blocks), { responseBytes: 1e9, responseTimeMs: 120_000 })
  try {
    // 16 clients asking for one block each, one request after another, until the big stream ends:
    // point queries go first (smallest response first, a reserve of their own), yet the big
    // stream must get every block while they keep coming
    let bigDone = false
    let answered = 0
    const flood = async (i: number) => {
      for (let k = i; !bigDone; k += 16) {
        const n = blocks[k % blocks.length].header.number
        const r = await postJson(`${url}/datasets/d/stream`, {
          fromBlock: n,
          toBlock: n,
          fields: { block: { number: true } },
        })
        assert.equal(r.status, 200)
        assert.deepEqual(JSON.parse(r.text), { header: { number: n } })
        answered++
      }
    }
    const floods = Array.from({ length: 16 }, (_, i) => flood(i))
    await until(() => answered >= 32, 30_000, 'the point queries to flow')
    const before = answered
    const big = await postJson(`${url}/datasets/d/stream`, {
      fromBlock: blocks[0].header.number,
      fields: { block: { number: true }, log: { message: true } },
      logs: [{}],
    })
    const during = answered - before
    bigDone = true
    await Promise.all(floods)
    assert.equal(big.status, 200)
    const got = lines(big) as { header: { number: number }; logs: unknown[] }[]
    assert.deepEqual(
      got.map((b) => b.header.number),
      blocks.map((b) => b.header.number),
    )
    assert.ok(
      got.every((b) => b.logs.length === 1),
      'every block with its log',
    )
    assert.ok(during >= 16, `${during} point queries answered while the big stream ran`)
    assert.equal(server.bufferedBytes, 0)
  } finally {
    await server.close()
  }
})

test('a chunk failing its checksum: 500 before any line, a cut connection after lines', async () => {
  const blocks = generateBlocks({ seed: 21, count: 30, txPerBlock: 30 })
  const dir = tempDir()
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false })
  await writeStore(coldDir(dir), blocks, { targetBlocks: 10 })
  const chunkDir = join(coldDir(dir), 'chunks')
  const files = readdirSync(chunkDir).sort()
  assert.equal(files.length, 3)
  const victim = join(chunkDir, files[1])
  const b = readFileSync(victim)
  b[100] ^= 0xff
  writeFileSync(victim, b)
  const store = await openDatasetDir(dir)
  const { url, server, logged } = await start(store)
  try {
    const n = (i: number) => blocks[i].header.number
    const before = await postFrom(`${url}/datasets/d/stream`, everything(n(10), n(19)))
    assert.equal(before.status, 500)
    const after = await postFrom(`${url}/datasets/d/stream`, everything(n(0), n(19)))
    assert.equal(after.status, 200)
    assert.ok(after.raw.length > 64 * 1024, `lines were sent (${after.raw.length} bytes)`)
    assert.equal(after.complete, false, 'the connection is cut, not ended cleanly')
    assert.ok(logged.some((l) => /checksum/.test(l)))
  } finally {
    await server.close()
    await store.close()
  }
})

test('shutdown ends an open stream on a complete line with a closed gzip stream', async () => {
  const blocks = mkChain(GENESIS, 20)
  const { url, server } = await start(new StaticStore(blocks), { responseTimeMs: 60_000 }, null, { realTime: true })
  const got = postFrom(
    `${url}/datasets/d/stream`,
    { fromBlock: blocks[0].header.number, fields: { block: { number: true } }, instructions: [{}] },
    { headers: { 'Accept-Encoding': 'gzip' } },
  )
  // the stream follows the head: it sent the 20 blocks and waits for the next one
  await until(() => server.activeStreamCount === 1, 10_000, 'the stream to open')
  await new Promise((r) => setTimeout(r, 300))
  await server.close()
  const { raw, complete } = await got
  assert.ok(complete, 'the body ended cleanly')
  const text = zlib.gunzipSync(raw).toString('utf8') // throws on a truncated gzip stream
  assert.ok(text.endsWith('\n'))
  const numbers = text
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { header: { number: number } }).header.number)
  assert.deepEqual(
    numbers,
    blocks.map((b) => b.header.number),
  )
})
