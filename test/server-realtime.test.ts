/**
 * Real time over HTTP: a fake Solana node (real JSON-RPC on loopback) followed by the ingester
 * into the LMDB hot store, served by the real server. Tail streams, forks of depth 1, 5 and 40 seen
 * by a client through 409 and resumed from the common ancestor, and the finalized stream.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import type { PortalServer } from '../src/server/http.ts'
import { type RealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { followAndServe, until } from './support/realtime/served.ts'
import { postJson } from './support/http/client.ts'

interface Ref {
  number: number
  hash: string
}

/** Open a stream and hand each line to `onLine` as it arrives; resolves with status when it ends. */
function openStream(
  url: string,
  body: unknown,
  onLine: (line: string) => void,
): { done: Promise<{ status: number; headers: http.IncomingHttpHeaders }>; abort: () => void } {
  let req!: http.ClientRequest
  const done = new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    req = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        let buf = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          buf += c
          let i
          while ((i = buf.indexOf('\n')) >= 0) {
            onLine(buf.slice(0, i))
            buf = buf.slice(i + 1)
          }
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
        res.on('error', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
  return { done, abort: () => req.destroy() }
}

describe('real time over HTTP', () => {
  let node: FakeSolanaNode
  let ds: RealtimeDataset
  let server: PortalServer
  let base: string
  let dir: string

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'solportal-rt-http-'))
    node = await FakeSolanaNode.start({ intervalMs: 0, initialBlocks: 120, finalityLag: 64, txPerBlock: 4, seed: 7 })
    // a response budget well above the bounds asserted below, so that "ended at once" and
    // "ended at the budget" stay apart on a loaded machine
    ;({ ds, server, base } = await followAndServe(node, dir, { headWaitMs: 1_000, responseTimeMs: 8_000 }))
  })

  after(async () => {
    await server.close()
    await ds.stop()
    await node.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const synced = () => until(() => ds.store.head()?.hash === node.tip.hash)

  test('metadata says real_time', async () => {
    const m = (await fetch(`${base}/metadata`).then((r) => r.json())) as { real_time: boolean }
    assert.equal(m.real_time, true)
  })

  test('a tail stream pushes each new block as it arrives', async () => {
    await synced()
    const head = ds.store.head()!
    const got: { number: number; at: number }[] = []
    const s = openStream(
      `${base}/stream`,
      { fromBlock: head.number, includeAllBlocks: true, fields: { block: { number: true, hash: true } } },
      (l) => got.push({ number: (JSON.parse(l) as { header: Ref }).header.number, at: performance.now() }),
    )
    await until(() => got.length >= 1)
    const produced: { number: number; at: number }[] = []
    for (let i = 0; i < 5; i++) {
      const b = node.produce()
      produced.push({ number: b.slot, at: performance.now() })
      await until(() => got.some((g) => g.number === b.slot))
    }
    s.abort()
    assert.deepEqual(
      got.map((g) => g.number),
      [head.number, ...produced.map((p) => p.number)],
    )
    const latencies = produced.map((p) => got.find((g) => g.number === p.number)!.at - p.at)
    // the ingester polls every 10 ms: each block reaches the client as it arrives (pushed, not
    // at the end of a response or of a wait; the bound is generous for a loaded machine)
    for (const l of latencies) assert.ok(l < 5_000, `latency ${l} ms`)
  })

  test('fromBlock = head + 1 waits and is served as soon as the block arrives', async () => {
    await synced()
    const head = ds.store.head()!
    const got: { number: number; at: number }[] = []
    const s = openStream(
      `${base}/stream`,
      {
        fromBlock: head.number + 1,
        toBlock: head.number + 1000,
        includeAllBlocks: true,
        fields: { block: { number: true } },
      },
      (l) => got.push({ number: (JSON.parse(l) as { header: Ref }).header.number, at: Date.now() }),
    )
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(got.length, 0)
    const t0 = Date.now()
    const b = node.produce()
    await until(() => got.length > 0)
    s.abort()
    assert.equal(got[0].number, b.slot)
    assert.ok(got[0].at - t0 < 5_000)
  })

  test('a bounded range ending in skipped slots below the head ends at once', async () => {
    await synced()
    const chain = node.chain()
    // a skipped slot: a gap between two consecutive produced blocks
    const i = chain.findIndex((b, k) => k > 0 && b.slot - chain[k - 1].slot > 1)
    assert.ok(i > 0, 'the chain has a skipped slot')
    const skipped = chain[i - 1].slot + 1
    const t0 = Date.now()
    const r = await postJson(`${base}/stream`, {
      fromBlock: chain[i - 1].slot,
      toBlock: skipped,
      includeAllBlocks: true,
      fields: { block: { number: true } },
    })
    assert.equal(r.status, 200)
    assert.equal(r.text, `{"header":{"number":${chain[i - 1].slot}}}\n`)
    assert.ok(Date.now() - t0 < 4_000, 'did not wait for the 8 s response budget')
  })

  for (const depth of [1, 5, 40]) {
    test(`fork of depth ${depth}: 409 with the new chain, resume from the ancestor sees exactly the new branch`, async () => {
      for (let i = 0; i < 3; i++) node.produce()
      await synced()
      // the client follows the chain up to the head
      const mine = new Map<number, string>()
      const first = node.chain()[node.chain().length - 60].slot
      const r = await postJson(`${base}/stream`, {
        fromBlock: first,
        toBlock: ds.store.head()!.number,
        includeAllBlocks: true,
        fields: { block: { number: true, hash: true } },
      })
      assert.equal(r.status, 200)
      for (const l of r.text.split('\n').filter(Boolean)) {
        const h = (JSON.parse(l) as { header: Ref }).header
        mine.set(h.number, h.hash)
      }
      const last = [...mine.entries()].pop()!
      // the chain forks under the client
      assert.equal(node.fork(depth), depth)
      // the new branch grows past the client's last block (below it, the spec's answer is a 204
      // until the chain reaches fromBlock: the server may simply be behind the client's source)
      while (node.tip.slot <= last[0]) node.produce()
      await synced()
      const c = await postJson(`${base}/stream`, { fromBlock: last[0] + 1, parentBlockHash: last[1] })
      assert.equal(c.status, 409)
      assert.equal(c.headers['content-type'], 'application/json')
      const prev = JSON.parse(c.text).previousBlocks as Ref[]
      // ascending, the current chain, ending with the block below fromBlock
      const chain = node.chain().filter((b) => b.slot <= last[0])
      assert.deepEqual(
        prev,
        chain.slice(-prev.length).map((b) => ({ number: b.slot, hash: b.hash })),
      )
      assert.ok(prev.length >= Math.min(100, depth + 1))
      // the client's common ancestor: the highest entry it also has
      const ancestor = [...prev].reverse().find((p) => mine.get(p.number) === p.hash)!
      assert.ok(ancestor, 'an ancestor is within previousBlocks')
      const resumed = await postJson(`${base}/stream`, {
        fromBlock: ancestor.number + 1,
        parentBlockHash: ancestor.hash,
        toBlock: node.tip.slot,
        includeAllBlocks: true,
        fields: { block: { number: true, hash: true } },
      })
      assert.equal(resumed.status, 200)
      const got = resumed.text
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { header: Ref }).header)
      assert.deepEqual(
        got,
        node
          .chain()
          .filter((b) => b.slot > ancestor.number)
          .map((b) => ({ number: b.slot, hash: b.hash })),
      )
      // none of the orphaned blocks is served any more
      const orphans = new Set(node.orphans.map((o) => o.hash))
      for (const g of got) assert.ok(!orphans.has(g.hash))
    })
  }

  test('an open tail response ends when the chain it is on forks away', async () => {
    await synced()
    const head = ds.store.head()!
    const got: Ref[] = []
    const s = openStream(
      `${base}/stream`,
      { fromBlock: head.number, includeAllBlocks: true, fields: { block: { number: true, hash: true } } },
      (l) => got.push((JSON.parse(l) as { header: Ref }).header),
    )
    await until(() => got.length >= 1)
    node.fork(1)
    node.produce()
    const t0 = Date.now()
    const { status } = await s.done
    assert.equal(status, 200)
    assert.ok(Date.now() - t0 < 4_000, 'ended before the 8 s time budget')
    // everything it sent belongs to one chain: the old head only
    assert.deepEqual(got, [head])
  })

  test('the finalized stream never goes above the finalized head, and only shows final blocks', async () => {
    for (let i = 0; i < 5; i++) node.produce()
    await synced()
    await until(() => ds.store.finalizedHead() != null)
    const r = await postJson(`${base}/finalized-stream`, {
      fromBlock: node.firstSlot,
      includeAllBlocks: true,
      fields: { block: { number: true, hash: true } },
    })
    assert.equal(r.status, 200)
    const fin = Number(r.headers['x-sqd-finalized-head-number'])
    assert.equal(r.headers['x-sqd-head-number'], String(fin))
    const got = r.text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { header: Ref }).header)
    assert.ok(got.length > 0)
    // the response follows the finalized head: it reaches the one announced in its headers and
    // may go on as finalization advances, never past it
    assert.ok(got[got.length - 1].number >= fin)
    assert.ok(got[got.length - 1].number <= ds.store.finalizedHead()!.number)
    const canonical = new Map(node.chain().map((b) => [b.slot, b.hash]))
    for (const g of got) {
      assert.ok(g.number <= node.finalizedSlot)
      assert.equal(canonical.get(g.number), g.hash)
    }
    // a request above the finalized head: 204 carrying the heads
    const above = await postJson(`${base}/finalized-stream`, { fromBlock: ds.store.head()!.number + 1 })
    assert.equal(above.status, 204)
    assert.equal(above.headers['x-sqd-finalized-head-number'], String(ds.store.finalizedHead()!.number))
  })
})
