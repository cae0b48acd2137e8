/**
 * Tail latency over HTTP: a fake Solana node produces a block every 250 ms; it is followed by the
 * real-time pipeline (RPC → normalize → LMDB hot store) and served by the real server; N clients
 * hold open `/stream` requests without `toBlock` (resuming like Portal clients when a response
 * ends). Latency = from the node producing a block to a client reading its line, p50/p99 over all
 * clients and blocks, for 1 and 100 concurrent clients. Baseline in the same run: the latency from
 * production to the store having the block (`waitFor`), which HTTP cannot beat.
 */
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeSolanaNode } from '../src/ingest/fake-node.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { createRealtimeDataset, silentLogger } from '../src/ingest/realtime.ts'

const BLOCKS = 40
const INTERVAL_MS = 250

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

/** A client that follows the head, resuming from last+1 whenever a response ends. */
function follow(base: string, from: number, onBlock: (n: number) => void, signal: AbortSignal): Promise<void> {
  let fromBlock = from
  let parent: string | undefined
  const once = () =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({
        type: 'solana',
        fromBlock,
        ...(parent ? { parentBlockHash: parent } : {}),
        includeAllBlocks: true,
        fields: { block: { number: true, hash: true } },
      })
      const req = http.request(
        `${base}/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' }, signal },
        (res) => {
          let buf = ''
          res.setEncoding('utf8')
          res.on('data', (c: string) => {
            buf += c
            let i
            while ((i = buf.indexOf('\n')) >= 0) {
              const h = (JSON.parse(buf.slice(0, i)) as { header: { number: number; hash: string } }).header
              buf = buf.slice(i + 1)
              onBlock(h.number)
              fromBlock = h.number + 1
              parent = h.hash
            }
          })
          res.on('end', () => resolve())
          res.on('error', () => resolve())
        },
      )
      req.on('error', () => resolve())
      req.end(body)
    })
  return (async () => {
    while (!signal.aborted) await once()
  })()
}

async function measure(clients: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-tail-'))
  const node = await FakeSolanaNode.start({ intervalMs: 0, initialBlocks: 20, txPerBlock: 20, skipRate: 0.1, seed: 3 })
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: dir,
    startSlot: node.firstSlot,
    pollIntervalMs: 20,
    noSync: true,
    logger: silentLogger,
  })
  ds.start()
  await ds.store.waitFor(node.tip.slot, false, 60_000)
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'live', aliases: [], store: ds.store, realTime: true }]),
    rateLimit: null,
    log: () => {},
  })
  const base = `${await server.listen(0, '127.0.0.1')}/datasets/live`

  const producedAt = new Map<number, number>()
  const storeLat: number[] = []
  const httpLat: number[] = []
  const abort = new AbortController()
  setMaxListeners(0, abort.signal)
  const start = node.tip.slot + 1
  const followers = Array.from({ length: clients }, () =>
    follow(
      base,
      start,
      (n) => {
        const t = producedAt.get(n)
        if (t != null) httpLat.push(performance.now() - t)
      },
      abort.signal,
    ),
  )
  await new Promise((r) => setTimeout(r, 300))
  for (let i = 0; i < BLOCKS; i++) {
    const b = node.produce()
    const t = performance.now()
    producedAt.set(b.slot, t)
    void ds.store.waitFor(b.slot, false, 10_000).then(() => storeLat.push(performance.now() - t))
    await new Promise((r) => setTimeout(r, INTERVAL_MS))
  }
  await new Promise((r) => setTimeout(r, 1000))
  abort.abort()
  await Promise.allSettled(followers)
  await server.close()
  await ds.stop()
  await node.stop()
  rmSync(dir, { recursive: true, force: true })
  const expected = BLOCKS * clients
  const f = (x: number) => x.toFixed(1)
  return `| ${clients} | ${BLOCKS} | ${httpLat.length}/${expected} | ${f(pct(storeLat, 50))} | ${f(pct(storeLat, 99))} | ${f(pct(httpLat, 50))} | ${f(pct(httpLat, 99))} |`
}

export async function run(): Promise<string> {
  const rows = [await measure(1), await measure(100)]
  return [
    `## Tail latency over HTTP (fake node → ingest → hot store → server → client; a block every ${INTERVAL_MS} ms, ingest poll 20 ms)`,
    '',
    '| clients | blocks | lines received / expected | store p50 ms | store p99 ms | client p50 ms | client p99 ms |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
