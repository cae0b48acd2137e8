/**
 * `npm run bench -- geyser`: a block's way from the node to the hot store, following the node
 * over JSON-RPC (polling, `--rpc`) against following its Geyser stream (`--rpc --geyser`), in the
 * same run, and the RPC calls each path makes per hour.
 *
 * A fake node in this process produces a block every 400 ms (the whole mainnet block 254170887,
 * 602 transactions, re-slotted; `GEYSER_BENCH_TX` transactions per block to change it) and serves
 * it over HTTP JSON-RPC and through the fake Geyser server. Each path follows the node alone for
 * `GEYSER_BENCH_BLOCKS` blocks (default 15, after 5 start-up blocks), the two taking turns twice;
 * latency is from the block's production to the hot store's commit (`onStored`), and the RPC
 * calls are the HTTP requests the node received during the path's turn, per hour of blocks.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { createGeyserDataset } from '../src/ingest/geyser/dataset.ts'
import { FakeGeyserServer } from '../src/ingest/geyser/fake-server.ts'
import { createRealtimeDataset, type RealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { silentLogger, type StoredBlock } from '../src/ingest/realtime/types.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'

const BLOCKS = Number(process.env.GEYSER_BENCH_BLOCKS ?? 15)
const WARMUP = 5
const INTERVAL_MS = 400

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

interface Turn {
  path: 'rpc (poll 250 ms)' | 'geyser'
  latencies: number[]
  requests: number
  getBlock: number
  seconds: number
}

async function turn(
  node: FakeSolanaNode,
  server: FakeGeyserServer,
  produced: Map<number, number>,
  path: Turn['path'],
): Promise<Turn> {
  const latencies: number[] = []
  let counting = false
  const onStored = (e: StoredBlock) => {
    const t = produced.get(e.number)
    if (counting && t !== undefined) latencies.push(e.storedAt - t)
  }
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-geyser-'))
  const base = {
    rpcUrl: node.url,
    dataDir: dir,
    // from the tip: no catch-up in the turn
    startSlot: node.tip.slot,
    cold: new MemoryColdStore(),
    noSync: true,
    logger: silentLogger,
    onStored,
  }
  let ds: RealtimeDataset
  if (path === 'geyser') ds = await createGeyserDataset({ ...base, geyser: { url: server.url } })
  else ds = await createRealtimeDataset(base)
  ds.start()
  const tip = () => ds.store.head()?.hash === node.tip.hash
  const wait = async (n: number) => {
    for (let i = 0; i < n; i++) {
      node.produce()
      await new Promise((r) => setTimeout(r, INTERVAL_MS))
    }
  }
  // start-up: caught up with the node, then a few blocks
  while (!tip()) await new Promise((r) => setTimeout(r, 50))
  await wait(WARMUP)
  counting = true
  const r0 = node.stats.requests
  const g0 = node.stats.getBlock
  const t0 = performance.now()
  await wait(BLOCKS)
  while (!tip()) await new Promise((r) => setTimeout(r, 5))
  const seconds = (performance.now() - t0) / 1000
  const out: Turn = {
    path,
    latencies,
    requests: node.stats.requests - r0,
    getBlock: node.stats.getBlock - g0,
    seconds,
  }
  counting = false
  await ds.stop()
  rmSync(dir, { recursive: true, force: true })
  return out
}

export async function run(): Promise<string> {
  const txPerBlock = process.env.GEYSER_BENCH_TX ? Number(process.env.GEYSER_BENCH_TX) : undefined
  const node = await FakeSolanaNode.start({
    intervalMs: 0,
    initialBlocks: 5,
    skipRate: 0,
    finalityLag: 32,
    txPerBlock,
    prerender: true,
  })
  // production time: this listener runs before the fake Geyser server's (which encodes the block)
  const produced = new Map<number, number>()
  node.onBlock((b) => produced.set(b.slot, performance.now()))
  const server = await FakeGeyserServer.start(node, { reorder: true })
  const turns: Turn[] = []
  try {
    for (const path of ['rpc (poll 250 ms)', 'geyser', 'rpc (poll 250 ms)', 'geyser'] as const) {
      turns.push(await turn(node, server, produced, path))
    }
  } finally {
    await server.stop()
    await node.stop()
  }
  const rows = turns.map((t) => {
    const perHour = (n: number) => Math.round((n / t.seconds) * 3600)
    return `| ${t.path} | ${t.latencies.length} | ${pct(t.latencies, 50).toFixed(0)} | ${pct(t.latencies, 99).toFixed(0)} | ${perHour(t.requests)} | ${perHour(t.getBlock)} |`
  })
  return [
    '## geyser: node block → hot store, RPC polling against the Geyser stream',
    '',
    `A block every ${INTERVAL_MS} ms (${txPerBlock ?? 'all 602'} transactions each), ${BLOCKS} blocks per turn after ${WARMUP} start-up blocks; the two paths take turns (one at a time). Latency: the block's production → the hot store's commit. Calls: HTTP requests the node received during the turn (every JSON-RPC call: getSlot, getBlocks, getBlock), scaled to an hour at this block rate.`,
    '',
    '| path | blocks | p50 ms | p99 ms | RPC calls / hour | of them getBlock |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
