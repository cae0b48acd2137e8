/** A real-time dataset following a fake node over JSON-RPC, served over HTTP by the real server. */
import { FakeSolanaNode } from '../../../src/ingest/fake-node/node.ts'
import { createRealtimeDataset, type RealtimeDataset } from '../../../src/ingest/realtime/dataset.ts'
import { DatasetRegistry } from '../../../src/server/datasets.ts'
import { PortalServer, type ServerLimits } from '../../../src/server/http.ts'

export const silent = { info() {}, warn() {}, error() {} }

export async function until(cond: () => boolean, ms = 60_000, what = 'condition'): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what} not reached in time`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/**
 * `node` followed from its first slot into `dataDir` (dataset `live`), served on a free loopback
 * port; resolves once the dataset holds the node's tip. `base` is the dataset's URL.
 */
export async function followAndServe(
  node: FakeSolanaNode,
  dataDir: string,
  limits: Partial<ServerLimits>,
): Promise<{ ds: RealtimeDataset; server: PortalServer; base: string }> {
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir,
    startSlot: node.firstSlot,
    pollIntervalMs: 10,
    finalizeIntervalMs: 50,
    noSync: true,
    logger: silent,
  })
  ds.start()
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'live', aliases: [], store: ds.store, realTime: true }]),
    limits,
    rateLimit: null,
    log: () => {},
  })
  const base = `${await server.listen(0, '127.0.0.1')}/datasets/live`
  await until(() => ds.store.head()?.hash === node.tip.hash)
  return { ds, server, base }
}
