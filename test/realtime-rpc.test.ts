/**
 * RpcClient / RpcSource against the fake Solana node (real HTTP on loopback): fault handling and
 * exactly-once ordered delivery.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { DEFAULT_TEMPLATE, readArchiveLines } from '../src/ingest/fake-node/templates.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { RpcError, TransientRpcError } from '../src/ingest/rpc/errors.ts'
import { RpcSource } from '../src/ingest/rpc/source.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { RpcBlock } from '../src/rpc/types.ts'

describe('fake node JSON-RPC', () => {
  let node: FakeSolanaNode
  before(async () => {
    node = await FakeSolanaNode.start({
      txPerBlock: 6,
      intervalMs: 0,
      initialBlocks: 40,
      skipRate: 0.3,
      finalityLag: 10,
      seed: 7,
    })
  })
  after(() => node.stop())

  async function raw(body: unknown): Promise<unknown> {
    const r = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return parseJsonExact(await r.text())
  }

  test('methods, commitments and error objects', async () => {
    const c = new RpcClient({ url: node.url })
    const chain = node.chain()
    assert.equal(await c.getSlot('confirmed'), chain[chain.length - 1].slot)
    const fin = await c.getSlot('finalized')
    assert.equal(fin, node.finalizedSlot)
    assert.ok(fin <= chain[chain.length - 1].slot - 10 && fin >= chain[0].slot)
    assert.deepEqual(
      await c.getBlocks(chain[0].slot, chain[chain.length - 1].slot + 100, 'confirmed'),
      chain.map((b) => b.slot),
    )
    assert.deepEqual(
      await c.getBlocks(chain[0].slot, chain[chain.length - 1].slot, 'finalized'),
      chain.filter((b) => b.slot <= fin).map((b) => b.slot),
    )
    const b = (await c.getBlock(chain[5].slot, 'confirmed'))!
    assert.equal(b.blockhash, chain[5].hash)
    assert.equal(b.previousBlockhash, chain[4].hash)
    assert.equal(b.parentSlot, chain[4].slot)
    assert.equal(b.blockHeight, chain[5].height)
    assert.equal(b.transactions!.length, 6)
    // a skipped slot inside the chain, a slot above the head
    const skipped = chain.find((x, i) => i > 0 && x.slot !== chain[i - 1].slot + 1)!.slot - 1
    await assert.rejects(c.getBlock(skipped, 'confirmed'), (e: RpcError) => e.code === -32007)
    await assert.rejects(c.getBlock(chain[chain.length - 1].slot + 1, 'confirmed'), (e: RpcError) => e.code === -32004)
    await assert.rejects(c.getBlock(chain[chain.length - 1].slot, 'finalized'), (e: RpcError) => e.code === -32004)
    await assert.rejects(c.getBlock(chain[0].slot - 1, 'confirmed'), (e: RpcError) => e.code === -32001)
    await assert.rejects(c.call('noSuchMethod', []), (e: RpcError) => e.code === -32601)
    // without maxSupportedTransactionVersion a block holding v0 transactions is refused (-32015)
    let refused = 0
    for (const x of chain.slice(0, 10)) {
      const r = (await raw({
        jsonrpc: '2.0',
        id: 1,
        method: 'getBlock',
        params: [x.slot, { commitment: 'confirmed' }],
      })) as {
        error?: { code: number }
      }
      if (r.error) {
        assert.equal(r.error.code, -32015)
        refused++
      }
    }
    assert.ok(refused > 0)
    assert.deepEqual(await raw({ jsonrpc: '2.0', id: 'x', method: 'getHealth' }), {
      jsonrpc: '2.0',
      result: 'ok',
      id: 'x',
    })
    const batch = (await raw([
      { jsonrpc: '2.0', id: 1, method: 'getFirstAvailableBlock' },
      { jsonrpc: '2.0', id: 2, method: 'getBlockHeight', params: [{ commitment: 'confirmed' }] },
    ])) as { id: number; result: number }[]
    assert.deepEqual(
      batch.map((r) => r.result),
      [chain[0].slot, chain[chain.length - 1].height],
    )
    assert.deepEqual(await raw({ id: 1 }), {
      jsonrpc: '2.0',
      error: { code: -32600, message: 'Invalid request' },
      id: 1,
    })
    const bad = await fetch(node.url, { method: 'POST', body: '{nope' })
    assert.equal(((await bad.json()) as { error: { code: number } }).error.code, -32700)
  })

  test('re-slotted blocks: unique signatures per use, exact numbers kept', async () => {
    const c = new RpcClient({ url: node.url })
    const chain = node.chain()
    const sigs = new Set<string>()
    let total = 0
    for (const x of chain.slice(0, 30)) {
      const b = (await c.getBlock(x.slot, 'confirmed'))!
      for (const t of b.transactions!) {
        for (const s of t.transaction.signatures) {
          sigs.add(s)
          total++
        }
      }
    }
    assert.equal(sigs.size, total)
    // everything but the signatures is the template's, exactly (spliced as raw text)
    const tpl = parseJsonExact(readArchiveLines(DEFAULT_TEMPLATE)[0]) as { block: RpcBlock }
    const served = (await c.getBlock(chain[0].slot, 'confirmed'))!
    assert.equal(served.transactions!.length, 6)
    served.transactions!.forEach((t, i) => {
      const orig = tpl.block.transactions![i]
      assert.deepStrictEqual(t.meta, orig.meta)
      assert.deepStrictEqual(t.transaction.message, orig.transaction.message)
      assert.deepStrictEqual(t.version, orig.version)
      assert.notDeepEqual(t.transaction.signatures, orig.transaction.signatures)
      assert.equal(t.transaction.signatures.length, orig.transaction.signatures.length)
    })
    assert.deepStrictEqual(served.rewards, tpl.block.rewards)
    const hdr = (await c.getBlockHeader(chain[3].slot, 'confirmed'))!
    assert.equal(hdr.transactions, undefined)
    assert.equal(hdr.rewards, undefined)
    assert.equal(hdr.blockhash, chain[3].hash)
  })

  test('prerender: the answer text is assembled when the block is produced, and is the same answer', async () => {
    const opts = { txPerBlock: 6, intervalMs: 0, initialBlocks: 5, skipRate: 0.3, finalityLag: 10, seed: 11 }
    const eager = await FakeSolanaNode.start({ ...opts, prerender: true })
    const lazy = await FakeSolanaNode.start(opts)
    try {
      // every produced block assembled before any request; the lazy node assembles none
      assert.equal(eager.stats.assembled, 5)
      assert.equal(lazy.stats.assembled, 0)
      eager.produce()
      lazy.produce()
      assert.equal(eager.stats.assembled, 6)
      const body = (slot: number) =>
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'getBlock',
          params: [slot, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, rewards: true }],
        })
      const text = async (url: string, slot: number) =>
        (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(slot) })).text()
      for (const x of eager.chain()) {
        assert.equal(await text(eager.url, x.slot), await text(lazy.url, x.slot))
      }
      // the eager node served from what it had assembled; the lazy one assembled on request
      assert.equal(eager.stats.assembled, 6)
      assert.equal(lazy.stats.assembled, 6)
    } finally {
      await eager.stop()
      await lazy.stop()
    }
  })
})

describe('RpcClient faults', () => {
  let hang: Server
  let hangUrl: string
  before(async () => {
    hang = createServer(() => {
      /* never answers */
    })
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()))
    hangUrl = `http://127.0.0.1:${(hang.address() as AddressInfo).port}`
  })
  after(() => {
    hang.closeAllConnections()
    hang.close()
  })

  test('timeouts are retried with backoff, then reported', async () => {
    const retries: number[] = []
    const c = new RpcClient({
      url: hangUrl,
      timeoutMs: 100,
      maxRetries: 2,
      minBackoffMs: 10,
      onRetry: (_m, _e, a) => retries.push(a),
    })
    const t0 = performance.now()
    await assert.rejects(
      c.getSlot('confirmed'),
      (e: Error) => e instanceof TransientRpcError && /timeout/.test(e.message),
    )
    assert.deepEqual(retries, [0, 1])
    assert.equal(c.stats.timeouts, 3)
    assert.ok(performance.now() - t0 >= 300)
  })

  test('connection refused is retried', async () => {
    const c = new RpcClient({ url: 'http://127.0.0.1:1', maxRetries: 3, minBackoffMs: 1 })
    await assert.rejects(c.getSlot('confirmed'), TransientRpcError)
    assert.equal(c.stats.dropped, 4)
  })

  test('HTTP 429 honours Retry-After', async () => {
    const node = await FakeSolanaNode.start({ intervalMs: 0, txPerBlock: 1, rate429: 1, retryAfterSec: 1 })
    try {
      const c = new RpcClient({ url: node.url, minBackoffMs: 1, maxBackoffMs: 5000 })
      setTimeout(() => node.setFaults({ rate429: 0 }), 150)
      const t0 = performance.now()
      assert.equal(await c.getSlot('confirmed'), node.tip.slot)
      const dt = performance.now() - t0
      assert.equal(c.stats.http429, 1)
      assert.ok(dt >= 950, `waited only ${dt} ms`)
    } finally {
      await node.stop()
    }
  })
})

describe('RpcSource', () => {
  test('at the tip, the next slot’s block is asked for at once (one getBlock, no getSlot/getBlocks before it); skipped slots still listed', async () => {
    const node = await FakeSolanaNode.start({ txPerBlock: 2, intervalMs: 0, initialBlocks: 3, skipRate: 0.4, seed: 5 })
    try {
      const src = new RpcSource({ client: { url: node.url }, pollIntervalMs: 5 })
      const got: number[] = []
      /** RPC calls from a block's production (at a tip event) to its delivery, by block */
      const calls: { slot: number; calls: number; afterSkip: boolean }[] = []
      let before = -1
      let last = -1
      for await (const ev of src.blocks(node.firstSlot)) {
        if (ev.kind === 'tip') {
          if (got.length >= 3 + 12) break
          const b = node.produce()
          before = src.client.stats.calls
          calls.push({ slot: b.slot, calls: -1, afterSkip: b.slot !== last + 1 })
          continue
        }
        assert.equal(ev.kind, 'block')
        got.push(ev.slot)
        last = ev.slot
        const c = calls.find((x) => x.slot === ev.slot)
        if (c) c.calls = src.client.stats.calls - before
      }
      assert.deepEqual(
        got,
        node.chain().map((b) => b.slot),
      )
      // a block in the slot after the last delivered one: fetched by the one getBlock
      const direct = calls.filter((c) => !c.afterSkip)
      const skipped = calls.filter((c) => c.afterSkip)
      assert.ok(direct.length > 0 && skipped.length > 0, JSON.stringify(calls))
      for (const c of direct) assert.equal(c.calls, 1, JSON.stringify(c))
      // after a skipped slot: the probe (skipped), then the head and the list, then the block
      for (const c of skipped) assert.ok(c.calls > 1, JSON.stringify(c))
      assert.equal(src.stats.probed, direct.length)
    } finally {
      await node.stop()
    }
  })

  test('delivers every produced block exactly once, in order, through 429s, drops, not-yet answers and skipped slots', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 4,
      intervalMs: 0,
      initialBlocks: 80,
      skipRate: 0.35,
      rate429: 0.1,
      dropRate: 0.1,
      notYetRate: 0.1,
      seed: 11,
    })
    try {
      const src = new RpcSource({
        client: { url: node.url, minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 50 },
        concurrency: 5,
        maxRange: 17,
        pollIntervalMs: 10,
      })
      const got: { slot: number; hash: string; parent: number }[] = []
      const ac = new AbortController()
      let produced = 0
      for await (const ev of src.blocks(node.firstSlot, ac.signal)) {
        if (ev.kind === 'block')
          got.push({ slot: ev.slot, hash: ev.block.blockhash, parent: Number(ev.block.parentSlot) })
        else {
          // at the tip: grow the chain a few times, then stop
          if (produced >= 30) break
          for (let i = 0; i < 10; i++) node.produce()
          produced += 10
        }
      }
      const chain = node.chain()
      assert.equal(chain.length, 110)
      assert.deepEqual(
        got.map((g) => [g.slot, g.hash]),
        chain.map((b) => [b.slot, b.hash]),
      )
      for (let i = 1; i < got.length; i++) assert.equal(got[i].parent, got[i - 1].slot)
      assert.ok(
        node.stats.injected429 > 0 && node.stats.dropped > 0 && node.stats.notYet > 0,
        JSON.stringify(node.stats),
      )
      assert.ok(src.client.stats.retries > 0)
    } finally {
      await node.stop()
    }
  })
})
