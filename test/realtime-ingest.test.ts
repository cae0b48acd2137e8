/**
 * End to end: fake Solana node (HTTP on loopback) → RpcSource → normalizeBlock → HotStore (LMDB)
 * → finalization into a MemoryColdStore, read through RealtimeStore.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { type FakeBlockInfo } from '../src/ingest/fake-node/types.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { HeadInfo } from '../src/store/chunk.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import {
  createRealtimeDataset,
  type RealtimeDataset,
  type RealtimeDatasetOptions,
} from '../src/ingest/realtime/dataset.ts'
import { type RealtimeLogger } from '../src/ingest/realtime/types.ts'

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-ingest-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(what: string, cond: () => boolean, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

function logger(lines: string[]): RealtimeLogger {
  if (process.env.RT_DEBUG)
    return {
      info: (m) => console.log(Date.now(), m),
      warn: (m) => console.log(Date.now(), m),
      error: (m) => console.log(Date.now(), m),
    }
  return {
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  }
}

function open(
  node: FakeSolanaNode,
  dataDir: string,
  cold: MemoryColdStore,
  lines: string[],
  extra: Partial<RealtimeDatasetOptions> = {},
): Promise<RealtimeDataset> {
  return createRealtimeDataset({
    orphanStrikes: 3,
    tipCheckIntervalMs: 10,
    rpcUrl: node.url,
    dataDir,
    cold,
    commitment: 'confirmed',
    concurrency: 3,
    startSlot: node.firstSlot,
    pollIntervalMs: 5,
    finalizeIntervalMs: 30,
    rpc: { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 100, timeoutMs: 5000 },
    logger: logger(lines),
    ...extra,
  })
}

const pairs = (xs: readonly (HeadInfo | FakeBlockInfo)[]) =>
  xs.map((x) => ('slot' in x ? [x.slot, x.hash] : [x.number, x.hash]))

async function storedChain(ds: RealtimeDataset): Promise<HeadInfo[]> {
  return ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 1_000_000)
}

function caughtUp(ds: RealtimeDataset, node: FakeSolanaNode): boolean {
  const h = ds.store.head()
  const f = ds.store.finalizedHead()
  return h?.number === node.tip.slot && h.hash === node.tip.hash && f?.number === node.finalizedSlot
}

describe('RealtimeIngester against the fake node', () => {
  test('follows forks (depth 1 and 5), skipped slots and faults; finalizes in order; finalized reads are stable', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 3,
      intervalMs: 0,
      initialBlocks: 20,
      skipRate: 0.25,
      finalityLag: 12,
      rate429: 0.05,
      dropRate: 0.05,
      notYetRate: 0.05,
      seed: 3,
    })
    const lines: string[] = []
    const cold = new MemoryColdStore([], 16)
    const ds = await open(node, tempDir(), cold, lines)
    // finalized-only observer: a finalized block, once seen, never changes
    const seen = new Map<number, string>()
    const observe = async () => {
      const f = ds.store.finalizedHead()
      if (!f) return
      for await (const c of ds.store.chunks(0, f.number, true)) {
        const n = c.header('number')
        const h = c.header('hash')
        for (let i = 0; i < c.blockCount; i++) {
          const prev = seen.get(n[i])
          assert.ok(prev === undefined || prev === h[i], `finalized block ${n[i]} changed`)
          seen.set(n[i], h[i])
        }
      }
    }
    try {
      ds.start()
      for (let i = 0; i < 60; i++) {
        node.produce()
        if (i % 10 === 4) {
          // fork blocks the store already holds
          await until('store at the node tip', () => ds.store.head()?.hash === node.tip.hash)
          node.fork(i % 20 === 4 ? 1 : 5)
        }
        await sleep(8)
        await observe()
      }
      node.setFinalityLag(3)
      node.produce()
      await until('catch-up', () => caughtUp(ds, node))
      await observe()
      const chain = node.chain()
      assert.deepEqual(pairs(await storedChain(ds)), pairs(chain))
      // finalization: appended in order, no gap, no duplicate, exactly the finalized prefix
      const appended = cold.appends.flat()
      assert.deepEqual(
        appended,
        chain.filter((b) => b.slot <= node.finalizedSlot).map((b) => b.slot),
      )
      // no orphan anywhere
      const stored = new Set((await storedChain(ds)).map((h) => h.hash))
      assert.ok(node.orphans.length >= 15)
      for (const o of node.orphans) assert.ok(!stored.has(o.hash), `orphan ${o.slot} still stored`)
      for (const [n, h] of seen) assert.equal(chain.find((b) => b.slot === n)?.hash, h)
      assert.ok(seen.size > 10)
      assert.ok(ds.ingester.stats.forks >= 3, JSON.stringify(ds.ingester.stats))
      // stored content = the normalized node block
      const injected = node.stats.injected429 + node.stats.dropped + node.stats.notYet
      node.setFaults({ rate429: 0, dropRate: 0, notYetRate: 0 })
      const c = new RpcClient({ url: node.url, maxRetries: 50, minBackoffMs: 1 })
      for (const e of [...cold.all().slice(-2), ...ds.hot.entries().slice(-2)]) {
        const b = 'block' in e ? e.block : e
        const rpc = (await c.getBlock(b.header.number, 'confirmed'))!
        assert.deepStrictEqual(b, normalizeBlock({ slot: b.header.number, block: rpc }).block)
      }
      assert.ok(injected > 0)
    } finally {
      await ds.stop()
      await node.stop()
    }
  })

  test('fork of depth 40 with a restart in the middle of it', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 2,
      intervalMs: 0,
      initialBlocks: 70,
      skipRate: 0.2,
      finalityLag: 200,
      seed: 5,
    })
    const lines: string[] = []
    const cold = new MemoryColdStore()
    const dir = tempDir()
    let ds = await open(node, dir, cold, lines)
    try {
      ds.start()
      await until('initial catch-up', () => ds.store.head()?.hash === node.tip.hash)
      const before = node.chain()
      const replaced = node.fork(40, 45)
      assert.equal(replaced, 40)
      node.produce()
      // stop right after the fork is applied (first block of the new branch stored)
      let stopping: Promise<void> | null = null
      const off = ds.store.onChange(() => {
        if (!stopping && ds.ingester.stats.forks > 0) stopping = ds.stop()
      })
      await until('fork applied', () => stopping !== null)
      off()
      await stopping
      const mid = ds.hot // closed now
      await assert.rejects(mid.rollbackTo(0), /closed/)
      // restart on the same LMDB directory and the same cold store
      ds = await open(node, dir, cold, lines)
      const reopened = await storedChain(ds)
      const common = before.slice(0, before.length - 40)
      assert.deepEqual(pairs(reopened.slice(0, common.length)), pairs(common))
      assert.ok(
        reopened.length > common.length && reopened.length < node.chain().length,
        `restart in the middle: ${reopened.length}`,
      )
      ds.start()
      for (let i = 0; i < 5; i++) node.produce()
      node.setFinalityLag(10)
      node.produce()
      await until('catch-up after restart', () => caughtUp(ds, node))
      assert.deepEqual(pairs(await storedChain(ds)), pairs(node.chain()))
      const stored = new Set((await storedChain(ds)).map((h) => h.hash))
      for (const o of node.orphans) assert.ok(!stored.has(o.hash))
      assert.deepEqual(
        cold.appends.flat(),
        node
          .chain()
          .filter((b) => b.slot <= node.finalizedSlot)
          .map((b) => b.slot),
      )
      assert.ok(lines.some((l) => /fork/.test(l)))
    } finally {
      await ds.stop()
      await node.stop()
    }
  })

  test('a fork whose new branch ends below the stored tip (and no later block) is still repaired', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 1,
      intervalMs: 0,
      initialBlocks: 30,
      skipRate: 0,
      finalityLag: 100,
      seed: 9,
    })
    const cold = new MemoryColdStore()
    const ds = await open(node, tempDir(), cold, [])
    try {
      ds.start()
      await until('catch-up', () => ds.store.head()?.hash === node.tip.hash)
      node.fork(6, 2) // the node's head moves 4 slots back
      await until('repair', () => ds.store.head()?.hash === node.tip.hash)
      assert.deepEqual(pairs(await storedChain(ds)), pairs(node.chain()))
    } finally {
      await ds.stop()
      await node.stop()
    }
  })
})

describe('RealtimeIngester options', () => {
  test('commitment finalized: only finalized blocks are ingested, straight into the cold store', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 1,
      intervalMs: 0,
      initialBlocks: 40,
      skipRate: 0.2,
      finalityLag: 10,
      seed: 12,
    })
    const cold = new MemoryColdStore()
    const ds = await open(node, tempDir(), cold, [], { commitment: 'finalized' })
    try {
      ds.start()
      await until('finalized catch-up', () => ds.store.finalizedHead()?.number === node.finalizedSlot)
      for (let i = 0; i < 5; i++) node.produce()
      await until(
        'finalized catch-up 2',
        () => ds.store.finalizedHead()?.number === node.finalizedSlot && ds.hot.size === 0,
      )
      const fin = node.chain().filter((b) => b.slot <= node.finalizedSlot)
      assert.deepEqual(pairs(await storedChain(ds)), pairs(fin))
      assert.deepEqual(
        cold.appends.flat(),
        fin.map((b) => b.slot),
      )
      assert.deepEqual(ds.store.head(), ds.store.finalizedHead())
    } finally {
      await ds.stop()
      await node.stop()
    }
  })

  test('finalizeMinBlocks batches the moves into the cold store', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 1,
      intervalMs: 0,
      initialBlocks: 5,
      skipRate: 0,
      finalityLag: 3,
      seed: 13,
    })
    const cold = new MemoryColdStore()
    const ds = await open(node, tempDir(), cold, [], { finalizeMinBlocks: 6, finalizeMaxDelayMs: 60_000 })
    try {
      ds.start()
      for (let i = 0; i < 40; i++) {
        node.produce()
        await sleep(3)
      }
      await until('head', () => ds.store.head()?.hash === node.tip.hash)
      await until('some finalized', () => cold.size >= 12)
      assert.ok(
        cold.appends.every((a) => a.length >= 6),
        JSON.stringify(cold.appends),
      )
      assert.deepEqual(pairs(await storedChain(ds)), pairs(node.chain()))
    } finally {
      await ds.stop()
      await node.stop()
    }
  })
})

describe('createDemoDataset', () => {
  test('serves the live fake chain with real sample blocks', async () => {
    const lines: string[] = []
    const { createDemoDataset } = await import('../src/ingest/realtime/demo.ts')
    const demo = await createDemoDataset({
      node: { intervalMs: 50, initialBlocks: 40, finalityLag: 8 },
      logger: logger(lines),
    })
    try {
      demo.start()
      await until(
        'demo catch-up',
        () => demo.store.head()?.hash === demo.node.tip.hash && demo.store.finalizedHead() !== null,
      )
      const h = demo.store.head()!
      assert.equal(await demo.store.waitFor(h.number + 1, false, 60_000), true)
      let rows = 0
      for await (const c of demo.store.chunks(demo.node.firstSlot, h.number, false))
        rows += c.table('instruction').rowCount
      assert.ok(rows > 100)
      assert.equal(demo.store.firstBlock(), demo.node.firstSlot)
    } finally {
      await demo.stop()
    }
  })
})
