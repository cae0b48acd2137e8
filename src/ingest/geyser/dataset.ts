/**
 * The real-time dataset fed by a Geyser stream: `createRealtimeDataset` (src/ingest/realtime/)
 * with a `GeyserSource` in front of the node, so that storing, forks, finalization and the
 * served streams are the RPC path's own; `createGeyserDemoDataset`: the same over an in-process
 * fake node and fake Geyser server (`--demo --geyser`).
 */
import { createRealtimeDataset, type RealtimeDataset, type RealtimeDatasetOptions } from '../realtime/dataset.ts'
import { startDemoChain, type DemoDatasetOptions } from '../realtime/demo.ts'
import { type FakeSolanaNode } from '../fake-node/node.ts'
import { blockToRpc } from './block.ts'
import { decodeBlockUpdate, type CommitmentLevel } from './messages.ts'
import { GeyserSource, type GeyserSourceOptions } from './source.ts'
import type { FakeGeyserOptions, FakeGeyserServer } from './fake-server.ts'

export interface GeyserOptions extends Omit<GeyserSourceOptions, 'rpc' | 'decode' | 'stored' | 'commitment'> {
  /** commitment of the streamed blocks (default `confirmed`) */
  commitment?: CommitmentLevel
}

export interface GeyserDataset extends RealtimeDataset {
  geyser: GeyserSource
}

export async function createGeyserDataset(
  opts: Omit<RealtimeDatasetOptions, 'source'> & { geyser: GeyserOptions },
): Promise<GeyserDataset> {
  let geyser: GeyserSource | null = null
  const log = opts.logger
  const ds = await createRealtimeDataset({
    ...opts,
    // the node's own commitment: getBlock knows no `processed`
    commitment: opts.geyser.commitment === 'finalized' ? 'finalized' : 'confirmed',
    source: (rpc, { hot, cold, decoders }) => {
      geyser = new GeyserSource({
        log: log ? (m) => log.info(m) : undefined,
        ...opts.geyser,
        rpc,
        // streamed blocks are read and normalized by the block decoding threads, their message's
        // memory given to the thread; without threads (or with a custom normalizer), read here
        // and normalized by the ingester
        decode: decoders
          ? (f) => decoders.decodeStreamed(f.message, f.slot, f.own === true)
          : async (f) => ({ kind: 'block', block: blockToRpc(decodeBlockUpdate(f.message)) }),
        // blocks arriving close together (a replay, a stalled apply) decode on the threads at once
        decodeAhead: decoders ? Math.max(2, decoders.size) : 0,
        // finalized slots (in the cold store) take no block any more
        stored: (n, h) => hot.contains(n, h) || (hot.anchor?.number ?? cold.lastBlock()?.number ?? -1) >= n,
      })
      return geyser
    },
  })
  return { ...ds, geyser: geyser! }
}

/** `createDemoDataset`'s chain, served by a fake Geyser server as well, followed through it */
export async function createGeyserDemoDataset(
  opts: DemoDatasetOptions & { server?: FakeGeyserOptions } = {},
): Promise<GeyserDataset & { node: FakeSolanaNode; server: FakeGeyserServer }> {
  const { FakeGeyserServer } = await import('./fake-server.ts')
  const chain = await startDemoChain(opts)
  const node = chain.node
  const server = await FakeGeyserServer.start(node, { reorder: true, ...opts.server })
  const ds = await createGeyserDataset({
    rpcUrl: node.url,
    dataDir: chain.dataDir,
    cold: opts.cold,
    startSlot: node.firstSlot,
    logger: opts.logger,
    onFatal: opts.onFatal,
    normalizeThreads: opts.normalizeThreads,
    geyser: { url: server.url },
  })
  return {
    ...ds,
    node,
    server,
    stop: async () => {
      await ds.stop()
      await server.stop()
      await chain.stop()
    },
  }
}
