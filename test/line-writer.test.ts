/**
 * The stream response writer (src/server/line-writer.ts) on real loopback sockets: a batch of lines
 * goes to the kernel at once (node's http corks a response's socket until the next tick, and a
 * render loop running on promise callbacks may not let a tick pass for a while), the writer asks
 * its caller to wait only once `pendingBytes` are not yet taken by the kernel, and a client that
 * stops reading stops the query: the server never buffers much more than that.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { LineWriter } from '../src/server/line-writer.ts'
import { StaticStore } from '../src/store/static.ts'
import { neverReader, until } from './support/http/hostile.ts'
import { GENESIS, mkChain } from './support/realtime/blocks.ts'

/** a writer of JSON lines without gzip nor memory budget, in batches of 64 KiB */
function plainWriter(res: http.ServerResponse, writeTimeoutMs: number, pendingBytes: number): LineWriter {
  const opts = { headers: { 'Content-Type': 'application/jsonl' }, gzipLevel: null, budget: null }
  return new LineWriter(
    res,
    { ...opts, writeTimeoutMs, batchBytes: 64 * 1024, pendingBytes },
    new AbortController().signal,
  )
}

test('a batch goes to the kernel at once, and the caller waits only from pendingBytes not yet taken', async () => {
  const line = Buffer.alloc(100_000, 0x61)
  line[line.length - 1] = 0x0a
  let seen: { room: boolean; corked: number; pending: number } | null = null
  const server = http.createServer((req, res) => {
    req.resume()
    const out = plainWriter(res, 0, 1024 * 1024)
    // over the batch size: written now
    const room = out.addBytes(Buffer.from(line))
    seen = { room, corked: res.socket!.writableCorked, pending: res.writableLength }
    void out.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const port = (server.address() as { port: number }).port
    const body = await new Promise<Buffer>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${port}/`, (res) => {
          const parts: Buffer[] = []
          res.on('data', (c: Buffer) => parts.push(c))
          res.on('end', () => resolve(Buffer.concat(parts)))
          res.on('error', reject)
        })
        .on('error', reject)
    })
    assert.deepEqual(body, line)
    assert.ok(seen, 'the handler ran')
    const s = seen as { room: boolean; corked: number; pending: number }
    assert.equal(s.corked, 0, 'the socket is not left corked until the next tick')
    assert.ok(s.pending < 1024 * 1024)
    assert.equal(s.room, true, 'a write above the socket high-water mark does not stop rendering')
  } finally {
    server.close()
  }
})

test('a slow client inside one large write is not taken for one that stopped reading (the kernel taking part of a write is progress)', async () => {
  // one 32 MB write (far more than the loopback socket buffers take), read by pieces with pauses:
  // that write is not done for seconds, while the client takes some of it all the time
  const data = Buffer.alloc(32 * 1024 * 1024, 0x61)
  data[data.length - 1] = 0x0a
  let destroyed = false
  const server = http.createServer((req, res) => {
    req.resume()
    res.on('close', () => (destroyed = !res.writableFinished))
    const out = plainWriter(res, 1_500, 64 * 1024 * 1024)
    out.addBytes(data)
    void out.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const port = (server.address() as { port: number }).port
    const t0 = Date.now()
    const got = await new Promise<number>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${port}/`, (res) => {
          let n = 0
          res.on('data', (c: Buffer) => {
            n += c.length
            res.pause()
            setTimeout(() => res.resume(), 8)
          })
          res.on('end', () => resolve(n))
          res.on('error', reject)
          res.on('aborted', () => reject(new Error('response cut')))
        })
        .on('error', reject)
    })
    assert.equal(got, data.length)
    assert.equal(destroyed, false)
    // (slower than the watchdog's timeout: else the test shows nothing)
    assert.ok(Date.now() - t0 > 1_500, `read in ${Date.now() - t0} ms`)
  } finally {
    server.close()
  }
})

/** `count` blocks each carrying a log message of `bytes` random base64 characters */
function bigBlocks(count: number, bytes: number): Block[] {
  return mkChain(GENESIS, count).map((b) => {
    b.logs[0] = { ...b.logs[0], message: randomBytes((bytes * 3) / 4).toString('base64') }
    return b
  })
}

for (const gzip of [false, true])
  test(`a client that stops reading stops its query: the server holds at most pendingBytes and a block (gzip: ${gzip})`, async () => {
    // 48 MB of lines: far more than the loopback socket buffers take
    const blockBytes = 1024 * 1024
    const blocks = bigBlocks(48, blockBytes)
    const server = new PortalServer({
      datasets: new DatasetRegistry([{ name: 'd', aliases: [], store: new StaticStore(blocks), realTime: false }]),
      limits: { writeTimeoutMs: 0, responseBytes: 1e9, responseTimeMs: 120_000 },
      rateLimit: null,
      log: () => {},
    })
    const url = await server.listen(0, '127.0.0.1')
    const q = { fromBlock: blocks[0].header.number, fields: { log: { message: true } }, logs: [{}] }
    const staller = neverReader(Number(new URL(url).port), '/datasets/d/stream', q, gzip)
    try {
      await until(() => server.activeStreamCount === 1, 10_000, 'the stream to start')
      // the kernel's buffers fill, then the writer's (or the gzip stream's): it waits with about
      // pendingBytes (1 MiB) in hand and renders nothing more
      await until(() => server.bufferedBytes >= 1024 * 1024, 30_000, 'bytes to wait in the socket')
      let most = 0
      for (let i = 0; i < 25; i++) {
        most = Math.max(most, server.bufferedBytes)
        await new Promise((r) => setTimeout(r, 20))
      }
      const bound = 1024 * 1024 + 2 * (blockBytes + 4096)
      assert.ok(most <= bound, `${most} bytes held for a client that does not read (at most ${bound})`)
      assert.equal(server.activeStreamCount, 1, 'the stream waits, it is not cut (no write timeout)')
    } finally {
      staller.close()
      await server.close()
    }
  })
