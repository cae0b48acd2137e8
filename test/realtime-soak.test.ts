/**
 * A seeded random script against the whole pipeline: forks of random depth and branch length,
 * skipped slots, faults, lagging finality and restarts (close + reopen of the LMDB hot store) at
 * random moments. Invariants are checked while it runs and at the end.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { createRealtimeDataset, type RealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { silentLogger } from '../src/ingest/realtime/types.ts'
import { mulberry32 } from '../src/util/prng.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const rng = mulberry32

for (const seed of [101, 202]) {
  test(`random script, seed ${seed}: store converges to the node's chain; finalized data never changes`, async () => {
    const rnd = rng(seed)
    const node = await FakeSolanaNode.start({
      txPerBlock: 2,
      intervalMs: 0,
      initialBlocks: 10,
      skipRate: 0.3,
      finalityLag: 25,
      rate429: 0.03,
      dropRate: 0.03,
      notYetRate: 0.03,
      seed,
    })
    const dir = mkdtempSync(join(tmpdir(), 'solportal-soak-'))
    dirs.push(dir)
    const cold = new MemoryColdStore([], 8)
    const open = () =>
      createRealtimeDataset({
        rpcUrl: node.url,
        dataDir: dir,
        cold,
        startSlot: node.firstSlot,
        concurrency: 1 + Math.floor(rnd() * 4),
        pollIntervalMs: 5,
        finalizeIntervalMs: 20,
        orphanStrikes: 3,
        tipCheckIntervalMs: 10,
        rpc: { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 100 },
        logger: silentLogger,
      })
    let ds: RealtimeDataset = await open()
    let replaced = 0
    const finalizedSeen = new Map<number, string>()
    const check = async () => {
      // the hot window is one linked chain on top of the finalized block
      const win = ds.hot.entries()
      let prev = ds.hot.anchor
      for (const e of win) {
        if (prev) {
          assert.equal(e.header.parentNumber, prev.number)
          assert.equal(e.header.parentHash, prev.hash)
        }
        prev = { number: e.header.number, hash: e.header.hash }
      }
      const f = ds.store.finalizedHead()
      if (f) {
        for (const h of await ds.store.chainBefore(f.number + 1, 1_000_000)) {
          const s = finalizedSeen.get(h.number)
          assert.ok(s === undefined || s === h.hash, `finalized ${h.number} changed`)
          finalizedSeen.set(h.number, h.hash)
        }
      }
    }
    try {
      ds.start()
      for (let step = 0; step < 120; step++) {
        const r = rnd()
        if (r < 0.75) node.produce()
        else if (r < 0.9) {
          // mostly fork blocks the store already holds
          if (rnd() < 0.8) {
            const t0 = Date.now()
            while (ds.store.head()?.hash !== node.tip.hash && Date.now() - t0 < 5000) await sleep(2)
          }
          node.fork(1 + Math.floor(rnd() * 8), 1 + Math.floor(rnd() * 10))
        } else if (r < 0.95) {
          replaced += ds.ingester.stats.replaced
          await ds.stop()
          ds = await open()
          ds.start()
        } else await sleep(30)
        await sleep(rnd() * 6)
        await check()
      }
      node.setFaults({ rate429: 0, dropRate: 0, notYetRate: 0 })
      node.setFinalityLag(5)
      node.produce()
      const t0 = Date.now()
      while (!(ds.store.head()?.hash === node.tip.hash && ds.store.finalizedHead()?.number === node.finalizedSlot)) {
        if (Date.now() - t0 > 90_000)
          throw new Error(`no convergence: store ${JSON.stringify(ds.store.head())}, node ${node.tip.slot}`)
        await sleep(5)
      }
      await check()
      const chain = node.chain()
      const stored = await ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 1_000_000)
      assert.deepEqual(
        stored.map((h) => [h.number, h.hash]),
        chain.map((b) => [b.slot, b.hash]),
      )
      assert.deepEqual(
        cold.appends.flat(),
        chain.filter((b) => b.slot <= node.finalizedSlot).map((b) => b.slot),
      )
      const byNumber = new Map(chain.map((b) => [b.slot, b.hash]))
      for (const [n, h] of finalizedSeen) assert.equal(byNumber.get(n), h)
      assert.ok(node.stats.forks > 5)
      replaced += ds.ingester.stats.replaced
      // stored blocks were really replaced by forks (not only forks the ingester never saw)
      assert.ok(replaced > 0, `replaced ${replaced}`)
      if (process.env.RT_DEBUG) console.log(node.stats, ds.ingester.stats, replaced)
    } finally {
      await ds.stop()
      await node.stop()
    }
  })
}
