/**
 * Large node answers are read into shared memory that is used again once an answer is decoded
 * (src/ingest/rpc/shared-bodies.ts, RpcClient.releaseBody, RpcSource with a decoder): the next answers
 * read into the first one's memory, and decode to the same block.
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { mainnetAnswer } from './support/mainnet-answer.ts'
import { BlockWorkerPool } from '../src/ingest/block-workers.ts'
import { RpcSource, type BlockDecoder } from '../src/ingest/rpc/source.ts'
import { SHARED_BODY_MIN_BYTES } from '../src/ingest/rpc/http.ts'
import { SharedBodies } from '../src/ingest/rpc/shared-bodies.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { lazyBlock, type PackedBlock } from '../src/store/packed-block.ts'

const MiB = 1 << 20

test('SharedBodies: a released buffer is handed out again for an answer it holds; others are new', () => {
  const bodies = new SharedBodies(2)
  const a = bodies.take(5 * MiB)
  assert.ok(a.buffer instanceof SharedArrayBuffer)
  assert.equal(a.byteLength, 5 * MiB)
  assert.ok(a.buffer.byteLength >= 5 * MiB)
  // not released yet: a new one
  const b = bodies.take(3 * MiB)
  assert.notEqual(b.buffer, a.buffer)
  bodies.release(a)
  bodies.release(a) // twice: kept once
  bodies.release(Buffer.alloc(10)) // not shared: ignored
  const c = bodies.take(5 * MiB + 1000)
  assert.equal(c.buffer, a.buffer, 'the released memory again')
  assert.equal(c.byteLength, 5 * MiB + 1000)
  // too small for the answer: a new one
  bodies.release(b)
  const d = bodies.take(4.5 * MiB)
  assert.notEqual(d.buffer, b.buffer)
  assert.deepStrictEqual(bodies.stats, { allocated: 3, reused: 1 })
  // at most `max` kept, the largest: b (the smallest) is let go
  bodies.release(c)
  bodies.release(d)
  const kept = [bodies.take(1), bodies.take(1)].map((x) => x.buffer)
  assert.deepStrictEqual(new Set(kept), new Set([c.buffer, d.buffer]))
  assert.notEqual(bodies.take(1).buffer, b.buffer)
  assert.deepStrictEqual(bodies.stats, { allocated: 4, reused: 3 })
})

test('a node answer read into shared memory is read into the same memory again once decoded, to the same block', async () => {
  const { answer, archived } = mainnetAnswer()
  assert.ok(answer.length >= SHARED_BODY_MIN_BYTES)
  const expected = normalizeBlock(archived).block
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(answer)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const pool = new BlockWorkerPool({ threads: 2 })
  const seen: Buffer[] = []
  const decoder: BlockDecoder = {
    decode: (bytes, slot, signal) => {
      seen.push(bytes)
      return pool.decode(bytes, slot, signal)
    },
  }
  const src = new RpcSource({ client: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, decoder })
  try {
    for (let i = 0; i < 3; i++) {
      const r = await src.fetchSlot(archived.slot)
      assert.equal(r.kind, 'normalized')
      assert.deepStrictEqual(lazyBlock((r as { block: PackedBlock }).block), expected)
    }
    assert.equal(seen.length, 3)
    assert.ok(seen[0].buffer instanceof SharedArrayBuffer)
    assert.equal(seen[1].buffer, seen[0].buffer, 'the second answer in the first one’s memory')
    assert.equal(seen[2].buffer, seen[0].buffer)
    assert.deepStrictEqual(src.client.bodies.stats, { allocated: 1, reused: 2 })
  } finally {
    src.client.close()
    await pool.close()
    server.closeAllConnections()
    server.close()
  }
})
