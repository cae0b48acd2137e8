/**
 * The hot store's bound (`serve --hot-max-mb`, RealtimeIngesterOptions.hotMaxBytes): with
 * finalization far behind (a node whose finalized slot lags), the hot store's bytes of
 * unfinalized blocks stay within the bound (one block over it at most), a warning is logged as it
 * nears it and another when ingestion pauses at it; once the node finalizes again, finalization
 * frees space, ingestion resumes and the store converges to the node's chain: nothing lost.
 * Real fake node over loopback, real LMDB.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { Metrics } from '../src/server/metrics.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { pausingFollower, untilHeadStops } from './support/realtime/pausing-follower.ts'

test('the hot store stays within its bound: warning, pause until finalization frees space, nothing lost', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 20,
    intervalMs: 0,
    initialBlocks: 60,
    finalityLag: 45,
    seed: 3,
  })
  const cold = new MemoryColdStore([], 8)
  const MAX = 3_000_000 // ~10 blocks
  const f = await pausingFollower(node, cold, {
    finalizeMinBlocks: 1000, // batches never fill: only the bound makes finalization run early
    finalizeMaxDelayMs: 60_000,
    hotMaxBytes: MAX,
  })
  const { ds, logs } = f
  const metrics = new Metrics({ processMetrics: false })
  metrics.addIngester({
    dataset: 'd',
    store: ds.store,
    nodeHead: ds.ingester.source.nodeHead,
    stats: ds.ingester.stats,
    hot: () => ({ bytes: ds.hot.bytes, maxBytes: ds.ingester.hotMaxBytes }),
  })
  try {
    ds.start()
    // paused: the finalizable blocks went to the cold store, the head stays where the bound stopped it
    await untilHeadStops(f, 500, () => ds.ingester.stats.hotPauses > 0 && cold.lastBlock() !== null)
    // paused below the node's tip: the window holds what the bound allows, finalization is waiting
    assert.ok(ds.store.head()!.number < node.tip.slot, 'ingestion paused below the tip')
    assert.ok(
      ds.hot.entries().length >= 2,
      `${ds.hot.entries().length} blocks, ${ds.hot.bytes} bytes, largest ${f.largest()}`,
    )
    assert.ok(
      f.peak() <= MAX + 2 * f.largest(),
      `peak ${f.peak()} with a bound of ${MAX} (blocks ~${f.largest()} bytes)`,
    )
    assert.ok(cold.lastBlock() !== null && cold.lastBlock()!.number <= node.finalizedSlot, logs.join('\n'))
    assert.ok(
      logs.some((l) => /hot store holds \d+ MiB of unfinalized blocks, \d+% of its bound/.test(l)),
      logs.join('\n'),
    )
    assert.ok(logs.some((l) => /hot store at its bound .* ingestion paused until finalization frees space/.test(l)))
    const scrape = await metrics.registry.metrics()
    assert.match(scrape, /solportal_hot_store_bytes\{dataset="d"\} [1-9]\d*/)
    assert.match(scrape, new RegExp(`solportal_hot_store_max_bytes\\{dataset="d"\\} ${MAX}`))
    assert.match(scrape, /solportal_ingest_hot_pauses_total\{dataset="d"\} [1-9]/)
    // the node finalizes again: space is freed, ingestion resumes and catches up, nothing lost
    node.setFinalityLag(2)
    node.produce()
    const t1 = Date.now()
    while (ds.store.head()?.hash !== node.tip.hash) {
      if (Date.now() - t1 > 60_000) throw new Error(`no catch-up: ${logs.slice(-5).join(' | ')}`)
      await sleep(20)
    }
    assert.ok(logs.some((l) => /ingestion resumed after/.test(l)))
    const stored = await ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 1_000_000)
    assert.deepEqual(
      stored.map((h) => [h.number, h.hash]),
      node.chain().map((b) => [b.slot, b.hash]),
    )
    assert.ok(f.peak() <= MAX + 2 * f.largest(), `peak ${f.peak()}`)
  } finally {
    await ds.stop()
    await node.stop()
  }
})
