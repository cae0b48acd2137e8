/**
 * Real-time pipeline benchmark (fake Solana node on loopback → RpcSource → normalizeBlock → LMDB
 * hot store → MemoryColdStore):
 *  - catch-up throughput with whole mainnet-size blocks (602 transactions, ~4 MB of JSON each) and
 *    with the litesvm sample blocks;
 *  - tip latency: from the node producing a block to `waitFor` resolving in the store.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_TEMPLATE } from '../src/ingest/fake-node/templates.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { type FakeNodeOptions } from '../src/ingest/fake-node/types.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { createRealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { silentLogger } from '../src/ingest/realtime/types.ts'

const SAMPLE = join(import.meta.dirname, '..', 'data', 'sample', 'litesvm.jsonl.gz')

async function catchUp(label: string, node: FakeNodeOptions, concurrency: number): Promise<string> {
  const fake = await FakeSolanaNode.start({ intervalMs: 0, skipRate: 0.1, finalityLag: 1_000_000, ...node })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-rt-'))
  const ds = await createRealtimeDataset({
    rpcUrl: fake.url,
    dataDir: dir,
    cold: new MemoryColdStore(),
    startSlot: fake.firstSlot,
    concurrency,
    pollIntervalMs: 20,
    logger: silentLogger,
  })
  const blocks = fake.chain().length
  const t0 = performance.now()
  ds.start()
  await ds.store.waitFor(fake.tip.slot, false, 600_000)
  const dt = (performance.now() - t0) / 1000
  let txs = 0
  for (const e of ds.hot.entries()) txs += e.block.transactions.length
  await ds.stop()
  await fake.stop()
  rmSync(dir, { recursive: true, force: true })
  return `| ${label} | ${concurrency} | ${blocks} | ${dt.toFixed(2)} | ${(blocks / dt).toFixed(1)} | ${Math.round(txs / dt)} |`
}

async function tipLatency(intervalMs: number, pollIntervalMs: number, count: number): Promise<string> {
  const fake = await FakeSolanaNode.start({
    templates: existsSync(SAMPLE) ? [SAMPLE] : [DEFAULT_TEMPLATE],
    txPerBlock: 40,
    intervalMs: 0,
    skipRate: 0,
    finalityLag: 32,
  })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-rt-'))
  const ds = await createRealtimeDataset({
    rpcUrl: fake.url,
    dataDir: dir,
    cold: new MemoryColdStore(),
    startSlot: fake.firstSlot,
    pollIntervalMs,
    logger: silentLogger,
  })
  ds.start()
  await ds.store.waitFor(fake.tip.slot, false, 60_000)
  const lat: number[] = []
  for (let i = 0; i < count; i++) {
    await new Promise((r) => setTimeout(r, intervalMs))
    const b = fake.produce()
    const t0 = performance.now()
    if (!(await ds.store.waitFor(b.slot, false, 10_000))) throw new Error(`block ${b.slot} not ingested`)
    lat.push(performance.now() - t0)
  }
  await ds.stop()
  await fake.stop()
  rmSync(dir, { recursive: true, force: true })
  lat.sort((a, b) => a - b)
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1)
  return `| ${pollIntervalMs} | ${count} | ${q(0.5)} | ${q(0.95)} | ${lat[lat.length - 1].toFixed(1)} |`
}

export async function run(): Promise<string> {
  const rows = [
    await catchUp('whole mainnet block 254170887 (602 tx)', { templates: [DEFAULT_TEMPLATE], initialBlocks: 40 }, 4),
  ]
  if (existsSync(SAMPLE))
    rows.push(await catchUp('litesvm sample blocks (5-40 tx)', { templates: [SAMPLE], initialBlocks: 600 }, 4))
  const lat = [await tipLatency(150, 250, 30), await tipLatency(150, 50, 30)]
  return [
    '## Real-time ingest (fake node on loopback → RPC → normalize → LMDB hot store)',
    '',
    'Catch-up (every block fetched, parsed exactly, normalized and committed durably, one block per LMDB transaction):',
    '',
    '| blocks | getBlock in flight | blocks | seconds | blocks/s | transactions/s |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    'Tip latency, from the node producing a block to `waitFor` resolving (the source polls `getSlot` every poll interval):',
    '',
    '| poll interval ms | blocks | median ms | p95 ms | max ms |',
    '|---|---|---|---|---|',
    ...lat,
  ].join('\n')
}
