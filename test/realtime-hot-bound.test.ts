/**
 * The hot store's bound (`serve --hot-max-mb`, RealtimeIngesterOptions.hotMaxBytes): with
 * finalization far behind (a node whose finalized slot lags), the hot store's bytes of
 * unfinalized blocks stay within the bound (one block over it at most), a warning is logged as it
 * nears it and another when ingestion pauses at it; once the node finalizes again, finalization
 * frees space, ingestion resumes and the store converges to the node's chain: nothing lost.
 * Real fake node over loopback, real LMDB.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { createRealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { Metrics } from '../src/server/metrics.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

test('the hot store stays within its bound: warning, pause until finalization frees space, nothing lost', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 20,
    intervalMs: 0,
    initialBlocks: 60,
    finalityLag: 45,
    seed: 3,
  })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-hotbound-'))
  dirs.push(dir)
  const cold = new MemoryColdStore([], 8)
  const logs: string[] = []
  const log = (m: string) => logs.push(m)
  const MAX = 3_000_000 // ~10 blocks
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: dir,
    cold,
    startSlot: node.firstSlot,
    pollIntervalMs: 5,
    finalizeIntervalMs: 20,
    finalizeMinBlocks: 1000, // batches never fill: only the bound makes finalization run early
    finalizeMaxDelayMs: 60_000,
    hotMaxBytes: MAX,
    hotPauseCheckMs: 20,
    noSync: true,
    logger: { info: log, warn: log, error: log },
  })
  const metrics = new Metrics({ processMetrics: false })
  metrics.addIngester({
    dataset: 'd',
    store: ds.store,
    nodeHead: ds.ingester.source.nodeHead,
    stats: ds.ingester.stats,
    hot: () => ({ bytes: ds.hot.bytes, maxBytes: ds.ingester.hotMaxBytes }),
  })
  let peak = 0
  let largest = 0
  ds.hot.on('change', () => {
    peak = Math.max(peak, ds.hot.bytes)
    const w = ds.hot.entries()
    if (w.length) largest = Math.max(largest, ds.hot.bytes / w.length)
  })
  try {
    ds.start()
    const t0 = Date.now()
    // paused: the finalizable blocks went to the cold store, the head stays where the bound stopped it
    for (let head = -1; ;) {
      if (Date.now() - t0 > 60_000) throw new Error(`never paused: ${logs.join(' | ')}`)
      await sleep(500)
      const now = ds.store.head()?.number ?? -1
      if (ds.ingester.stats.hotPauses > 0 && cold.lastBlock() !== null && now === head) break
      head = now
    }
    // paused below the node's tip: the window holds what the bound allows, finalization is waiting
    assert.ok(ds.store.head()!.number < node.tip.slot, 'ingestion paused below the tip')
    assert.ok(
      ds.hot.entries().length >= 2,
      `${ds.hot.entries().length} blocks, ${ds.hot.bytes} bytes, largest ${largest}`,
    )
    assert.ok(peak <= MAX + 2 * largest, `peak ${peak} with a bound of ${MAX} (blocks ~${largest} bytes)`)
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
    assert.ok(peak <= MAX + 2 * largest, `peak ${peak}`)
  } finally {
    await ds.stop()
    await node.stop()
  }
})
