// Stream responses whose finalized ranges are rendered by worker threads (src/server/render-pool.ts):
// the same bytes as the in-thread path, workers released when the client leaves, bounded read-ahead.
import assert from 'node:assert/strict'
import http from 'node:http'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer, type ServerLimits } from '../src/server/http.ts'
import { RenderPool, type PooledBlock } from '../src/server/render-pool.ts'
import { cacheShares } from '../src/server/render-threads.ts'
import { executeQuery, parseQuery, type OutputBlock } from '../src/query/index.ts'
import { ByteBudget } from '../src/server/budget.ts'
import type { DatasetDirStore } from '../src/store/dataset-dir.ts'
import { benchQueries, randomCase } from './support/conformance.ts'
import { datasetOf } from './support/cold/util.ts'
import { request } from './support/http/client.ts'
import { everything } from './support/http/hostile.ts'
import { makePools, randomBlocks, Rng } from './support/random-blocks.ts'
import { runInline } from './support/inline.ts'
import type { Block } from '../src/model.ts'

const P = makePools()
const blocks: Block[] = randomBlocks(21, { blocks: 90, pools: P, maxTx: 10 })
let store: DatasetDirStore
const servers: PortalServer[] = []
const pools: RenderPool[] = []

before(async () => {
  // small chunks: segments cross chunk boundaries and start inside chunks
  store = await datasetOf(blocks, { targetBlocks: 7, fanout: 3 }, [5, 11, 2])
})

after(async () => {
  for (const s of servers) await s.close()
  for (const p of pools) await p.close()
  await store.close()
})

/** bytes every server socket was handed (sent, or pending in the socket) */
const sockets: import('node:net').Socket[] = []
function handedBytes(): number {
  let n = 0
  for (const s of sockets) n += s.bytesWritten + s.writableLength
  return n
}

async function start(pool: RenderPool | null, limits: Partial<ServerLimits> = {}): Promise<string> {
  const server = new PortalServer({
    datasets: new DatasetRegistry([
      { name: 'd', aliases: [], store, realTime: false, coldDir: store.cold.dir },
      { name: 'n', aliases: [], store, realTime: false, coldDir: store.cold.dir, bigintsAsNumbers: true },
    ]),
    limits: { responseTimeMs: 600_000, ...limits },
    rateLimit: null,
    log: () => {},
    renderPool: pool,
  })
  servers.push(server)
  server.server.on('connection', (s) => sockets.push(s))
  const url = await server.listen(0, '127.0.0.1')
  return `${url}/datasets/`
}

function newPool(o: Partial<ConstructorParameters<typeof RenderPool>[0]> = {}): RenderPool {
  const p = new RenderPool({ threads: 2, minSlots: 1, segmentBytes: 2048, readAheadBytes: 16 * 1024, ...o })
  pools.push(p)
  return p
}

function post(url: string, body: unknown, gzip = false) {
  return request(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
    body: JSON.stringify(body),
  })
}

for (const streamed of [true, false])
  test(`conformance queries through the render pool give the bytes of the in-thread path (${streamed ? 'streamed ranges' : 'split ranges'})`, async () => {
    const pool = newPool({ streamed })
    // a response budget of 3,000 bytes: responses end early at the same block boundary
    for (const responseBytes of [20 * 1024 * 1024, 3_000]) {
      const plain = await start(null, { responseBytes })
      const pooled = await start(pool, { responseBytes })
      const first = blocks[0].header.number
      const cases: { ds: string; body: Record<string, unknown> }[] = []
      for (const { body } of benchQueries()) cases.push({ ds: 'd', body: { ...body, fromBlock: first } })
      cases.push({ ds: 'd', body: everything(first) }, { ds: 'n', body: everything(first + 10, first + 80) })
      const r = new Rng(5)
      for (let i = 0; i < 80; i++) {
        const c = randomCase(r, P, blocks)
        cases.push({ ds: c.bigintsAsNumbers ? 'n' : 'd', body: { ...c.body, toBlock: c.body.toBlock ?? c.to } })
      }
      let nonEmpty = 0
      const before = pool.stats.segments
      const local0 = pool.stats.local
      const runs0 = pool.stats.runs
      for (const [i, c] of cases.entries()) {
        const gzip = i % 5 === 0
        const [a, b] = await Promise.all([
          post(`${plain}${c.ds}/stream`, c.body, gzip),
          post(`${pooled}${c.ds}/stream`, c.body, gzip),
        ])
        assert.equal(b.status, a.status, JSON.stringify(c))
        assert.equal(b.text, a.text, `query ${JSON.stringify(c)} (response budget ${responseBytes})`)
        if (a.status === 200 && a.text.length > 0) nonEmpty++
      }
      assert.ok(nonEmpty > 60, `only ${nonEmpty} queries had output`)
      assert.ok(pool.stats.segments - before > cases.length, 'the pool rendered the ranges')
      if (streamed) {
        // one worker rendered each range, the main thread none of it
        assert.equal(pool.stats.local, local0)
        assert.ok(pool.stats.runs - runs0 >= cases.length / 2, `${pool.stats.runs - runs0} streamed ranges`)
      }
      // the main thread rendered its share of the ranges between the workers' segments
      else
        assert.ok(
          pool.stats.local - local0 > cases.length / 2,
          `${pool.stats.local - local0} segments in the main thread`,
        )
    }
    // segments a worker was rendering when a response ended finish and are discarded
    await until(
      () => pool.activeStreams === 0 && pool.pendingSegments === 0 && pool.pendingRuns === 0,
      'the streams to end',
    )
  })

/** resolves once `cond` holds, checking every 20 ms (fails after `ms`) */
async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

test('a client that leaves mid-stream frees its workers: no queued or running segment, no open stream', async () => {
  const pool = newPool({ segmentBytes: 512, readAheadBytes: 4 * 1024 })
  const base = await start(pool, { streamBufferBytes: 64 * 1024 })
  const first = blocks[0].header.number
  const got = await new Promise<number>((resolve, reject) => {
    const req = http.request(
      base + 'd/stream',
      { method: 'POST', headers: { 'Content-Type': 'application/json' } },
      (res) => {
        let n = 0
        res.on('data', (c: Buffer) => {
          n += c.length
          if (n > 0) {
            // gone after the first bytes
            req.destroy()
            resolve(n)
          }
        })
        res.on('error', () => {})
      },
    )
    req.on('error', (e) => (req.destroyed ? undefined : reject(e)))
    req.end(JSON.stringify(everything(first)))
  })
  assert.ok(got > 0)
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the stream to leave the pool')
  assert.equal(pool.heldBytes, 0)
  // what was rendered is far less than the whole response
  const whole = (await post(base + 'd/stream', everything(first))).text.length
  assert.ok(whole > 100_000, `the response is ${whole} bytes`)
  const rendered = pool.stats.bytes
  // the complete request rendered `whole` bytes through the pool as well
  assert.ok(rendered - whole < whole / 2, `rendered ${rendered - whole} bytes for the client that left`)
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the second stream to end')
})

/** bytes of a block's line (and newline, when a worker rendered it) */
function size(b: PooledBlock | OutputBlock): number {
  return 'data' in b ? b.data.length : (b.bytes?.length ?? b.line.length)
}

/** waits until the pool renders nothing new for 0.5 s */
async function quiet(pool: RenderPool): Promise<void> {
  let last = -1
  let stable = 0
  await until(() => {
    const now = pool.stats.bytes
    stable = now === last && pool.pendingSegments === 0 ? stable + 1 : 0
    last = now
    return stable >= 25
  }, 'the workers to stop rendering')
}

test('read-ahead is bounded: a stream that takes no block stops the workers', async () => {
  const readAheadBytes = 8 * 1024
  const pool = newPool({ segmentBytes: 1024, readAheadBytes })
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  let whole = 0
  const all = pool.stream(store.cold.dir, everything(first), {}, false)
  for await (const b of all.blocks(first, last)) whole += size(b)
  all.close()
  const s = pool.stream(store.cold.dir, everything(first), {}, false)
  const it = s.blocks(first, last)
  const start0 = pool.stats.bytes
  assert.equal((await it.next()).done, false)
  await quiet(pool)
  const rendered = pool.stats.bytes - start0
  // the biggest block of the range is ~100 KB: read-ahead plus a few segments of one block
  assert.ok(rendered < readAheadBytes + 400 * 1024, `rendered ${rendered} of ${whole} bytes while nothing was taken`)
  assert.ok(pool.heldBytes <= rendered)
  // taking the rest renders the rest
  let n = 0
  for (let r = await it.next(); !r.done; r = await it.next()) n += size(r.value)
  assert.ok(n > whole / 2)
  s.close()
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the stream to end')
})

/** the engine's blocks of [a, b] in this thread, as the server's share of a pooled range */
function inThread(body: Record<string, unknown>) {
  const q = parseQuery(body)
  return (a: number, b: number) => executeQuery(store, { ...q, fromBlock: a }, { to: b, finalizedOnly: true })
}

test('rendered segments a stream holds count in the response budget until they are taken', async () => {
  const pool = newPool({ threads: 1, segmentBytes: 1024, readAheadBytes: 64 * 1024 })
  const budget = new ByteBudget(1 << 30)
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const body = everything(first)
  const s = pool.stream(store.cold.dir, body, {}, false, budget)
  const it = s.blocks(first, last, { local: inThread(body) })
  assert.equal((await it.next()).done, false)
  await quiet(pool)
  assert.ok(s.heldBytes > 0, 'the worker rendered ahead')
  assert.equal(budget.inFlight, s.heldBytes)
  let n = 0
  for (let r = await it.next(); !r.done; r = await it.next()) {
    n++
    assert.ok(budget.inFlight <= s.heldBytes)
  }
  assert.ok(n > 50)
  assert.equal(s.heldBytes, 0)
  assert.equal(budget.inFlight, 0)
  s.close()
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the stream to end')
})

/** a response budget already full, and the whole range's query with its lines in this thread */
async function fullBudgetCase() {
  const budget = new ByteBudget(1024)
  budget.take(1024)
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const body = everything(first)
  const expected: string[] = []
  for await (const b of inThread(body)(first, last)) if (!b.empty) expected.push(b.line)
  return { budget, first, last, body, expected }
}

test('a full response budget stops the workers: the stream renders in its own thread, nothing ahead', async () => {
  const pool = newPool({ threads: 1, streamed: false })
  const { budget, first, last, body, expected } = await fullBudgetCase()
  const segments = pool.stats.segments
  const s = pool.stream(store.cold.dir, body, {}, false, budget)
  const got: string[] = []
  for await (const b of s.blocks(first, last, { local: inThread(body) })) {
    assert.ok('line' in b, 'a block rendered by a worker')
    if (!b.empty) got.push(b.line)
  }
  s.close()
  assert.deepEqual(got, expected)
  assert.equal(pool.stats.segments, segments)
  budget.release(1024)
})

test('eight concurrent wide streams that do not read hold rendered bytes only within the response budget', async () => {
  const streamBufferBytes = 64 * 1024
  const pool = newPool({ threads: 1, segmentBytes: 16 * 1024, readAheadBytes: 1024 * 1024 })
  const base = await start(pool, { streamBufferBytes, writeTimeoutMs: 0 })
  const first = blocks[0].header.number
  const reqs = Array.from({ length: 8 }, () =>
    http.request(base + 'd/stream', { method: 'POST', headers: { 'Content-Type': 'application/json' } }),
  )
  await Promise.all(
    reqs.map(
      (req) =>
        new Promise<void>((resolve) => {
          req.on('response', (res) => (res.pause(), resolve()))
          req.on('error', () => {})
          req.end(JSON.stringify(everything(first)))
        }),
    ),
  )
  await quiet(pool)
  const server = servers[servers.length - 1]
  // the rendered segments held are part of the bytes in flight, which the budget bounds (twice
  // the budget, plus a block per stream: the biggest block of the range is ~100 KB)
  assert.ok(pool.heldBytes <= server.bufferedBytes, `${pool.heldBytes} held, ${server.bufferedBytes} in flight`)
  assert.ok(server.bufferedBytes < 2 * streamBufferBytes + 8 * 200 * 1024, `${server.bufferedBytes} bytes in flight`)
  for (const req of reqs) req.destroy()
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the streams to end')
  await until(() => server.bufferedBytes === 0, 'the budget to be released')
  assert.equal(pool.heldBytes, 0)
})

test('eight concurrent wide streams through the pool under a small response budget all finish with the in-thread bytes', async () => {
  // rendered segments held behind a segment the stream renders itself fill the budget: that
  // stream must still get its turns, or no stream moves again
  const pool = newPool({ threads: 1, segmentBytes: 16 * 1024, readAheadBytes: 1024 * 1024 })
  const limits = { streamBufferBytes: 64 * 1024, smallResponseBytes: 1024 }
  const plain = await start(null, limits)
  const pooled = await start(pool, limits)
  const first = blocks[0].header.number
  const body = everything(first)
  const expected = (await post(plain + 'd/stream', body)).text
  const got = await Promise.all(Array.from({ length: 8 }, (_, i) => post(pooled + 'd/stream', body, i % 2 === 1)))
  for (const r of got) assert.equal(r.text, expected)
  assert.ok(pool.stats.segments > 8)
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the streams to end')
})

test('the pool never renders more than its read-ahead beyond what the socket took', async () => {
  const readAheadBytes = 8 * 1024
  const pool = newPool({ segmentBytes: 1024, readAheadBytes })
  const base = await start(pool, { streamBufferBytes: 16 * 1024, writeTimeoutMs: 0 })
  const first = blocks[0].header.number
  const start0 = pool.stats.bytes
  const handed0 = handedBytes()
  const req = http.request(base + 'd/stream', { method: 'POST', headers: { 'Content-Type': 'application/json' } })
  const res = await new Promise<http.IncomingMessage>((resolve) => {
    req.on('response', resolve)
    req.end(JSON.stringify(everything(first)))
  })
  // never read (the kernel's socket buffers take what they can)
  res.pause()
  await quiet(pool)
  const rendered = pool.stats.bytes - start0
  const handed = handedBytes() - handed0
  assert.ok(rendered - handed < readAheadBytes + 400 * 1024, `rendered ${rendered} bytes, the socket took ${handed}`)
  req.destroy()
  await until(() => pool.activeStreams === 0 && pool.pendingSegments === 0, 'the stream to end')
})

test('when every worker has died, streams render in the main thread', async () => {
  const pool = newPool({ threads: 1 })
  const plain = await start(null)
  const pooled = await start(pool)
  const first = blocks[0].header.number
  const body = everything(first, first + 30)
  const expected = (await post(plain + 'd/stream', body)).text
  assert.equal((await post(pooled + 'd/stream', body)).text, expected)
  assert.ok(pool.stats.segments > 0)
  await until(() => pool.pendingSegments === 0, 'the segments to finish')
  const [worker] = pool.threadHandles
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  await worker.terminate()
  await exited
  assert.equal(pool.enabled, false)
  const segments = pool.stats.segments
  const after = await post(pooled + 'd/stream', body)
  assert.equal(after.status, 200)
  assert.equal(after.text, expected)
  assert.equal(pool.stats.segments, segments)
})

test('the render workers start in a process whose entry point is inline code (node --input-type=module -e)', async () => {
  // a worker inheriting `--input-type` dies at once; the worker answers for the missing store
  // (its own error) only when it runs
  const url = pathToFileURL(join(import.meta.dirname, '..', 'src', 'server', 'render-pool.ts')).href
  const code = `const { RenderPool } = await import(${JSON.stringify(url)})
const pool = new RenderPool({ threads: 1, minSlots: 1 })
const s = pool.stream('/no-such-cold-store', { type: 'solana', fromBlock: 1, toBlock: 1 }, {}, false)
try { for await (const b of s.blocks(1, 1)) {} } catch (e) { process.stdout.write(e.message) }
await pool.close()`
  const { status, out, err } = await runInline(code)
  assert.equal(status, 0, err)
  assert.match(out, /^render worker: .*no cold store here/)
})

test('a full response budget holds a streamed range to one batch ahead: the worker sends the next once the stream took it', async () => {
  const batchBytes = 2048
  const pool = newPool({ threads: 1, batchBytes, readAheadBytes: 64 * 1024 })
  const { budget, first, last, body, expected } = await fullBudgetCase()
  const s = pool.stream(store.cold.dir, body, {}, false, budget)
  const it = s.blocks(first, last)
  const got: string[] = []
  let biggest = 0
  for (let r = await it.next(); !r.done; r = await it.next()) {
    const b = r.value as PooledBlock
    biggest = Math.max(biggest, b.data.length)
    if (got.length === 0) {
      // what the worker rendered while the stream took nothing: one batch (a block more at most)
      await quiet(pool)
      assert.ok(s.heldBytes <= batchBytes + 200 * 1024, `${s.heldBytes} bytes held`)
    }
    if (!b.empty) got.push(b.data.toString('utf8', 0, b.data.length - 1))
  }
  s.close()
  assert.deepEqual(got, expected)
  assert.equal(s.heldBytes, 0)
  budget.release(1024)
  assert.equal(budget.inFlight, 0)
  // with room in the budget, the worker renders ahead up to the read-ahead
  const roomy = new ByteBudget(1 << 30)
  const t = pool.stream(store.cold.dir, body, {}, false, roomy)
  const it2 = t.blocks(first, last)
  assert.equal((await it2.next()).done, false)
  await quiet(pool)
  assert.ok(t.heldBytes > 4 * batchBytes, `${t.heldBytes} bytes held with room in the budget`)
  await it2.return(undefined)
  t.close()
  assert.equal(roomy.inFlight, 0)
})

test('the memory of a streamed range goes back to its worker once the response wrote it', async () => {
  const pool = newPool({ threads: 1, batchBytes: 4096 })
  const plain = await start(null)
  const pooled = await start(pool)
  const first = blocks[0].header.number
  const body = everything(first)
  const expected = (await post(plain + 'd/stream', body)).text
  const returned = pool.stats.returned
  for (let i = 0; i < 3; i++) assert.equal((await post(pooled + 'd/stream', body)).text, expected)
  // the first responses' batches, written out, went back with the later credits
  assert.ok(pool.stats.returned - returned > 10, `${pool.stats.returned - returned} buffers returned`)
  await until(() => pool.activeStreams === 0 && pool.pendingRuns === 0, 'the streams to end')
})

test("--cache-mb is the total of the threads' caches: with streamed ranges the workers, which render them, get most of it", () => {
  const MiB = 1024 * 1024
  for (const total of [1, 64, 192, 1000].map((n) => n * MiB))
    for (const threads of [1, 2, 3, 7]) {
      const s = cacheShares(total, threads)
      assert.ok(s.main + threads * s.worker <= Math.max(total, (threads + 1) * MiB), `${total} ${threads}`)
      if (total >= 64 * MiB) assert.ok(s.worker >= s.main, `${total} ${threads}: ${JSON.stringify(s)}`)
      const even = cacheShares(total, threads, false)
      assert.equal(even.main, even.worker)
    }
  // one render thread beside the main one: the fee-payer query's columns (more than 96 MiB) fit
  assert.deepEqual(cacheShares(192 * MiB, 1), { main: 24 * MiB, worker: 168 * MiB })
  assert.deepEqual(cacheShares(192 * MiB, 0), { main: 192 * MiB, worker: 0 })
})
