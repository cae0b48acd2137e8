/** The `--demo` dataset: the real-time dataset (dataset.ts) following an in-process fake node. */
import { join } from 'node:path'
import type { ColdStore } from '../../store/types.ts'
import { createRealtimeDataset, type RealtimeDataset } from './dataset.ts'
import type { RealtimeLogger } from './types.ts'

/**
 * The `--demo` dataset: a fake Solana node in-process (recorded real blocks re-slotted into a live
 * chain, with forks and lagging finality) followed by a RealtimeIngester into a RealtimeStore.
 */
export interface DemoDatasetOptions {
  /** hot store directory (default: a temp dir, removed on stop) */
  dataDir?: string
  /** fake node settings (defaults: the bundled sample + the mainnet block as templates, ≤ 40
   *  transactions per block, a block every 400 ms, 150 blocks of history, finality lag 32 slots,
   *  a 2-block fork every 50 blocks) */
  node?: import('../fake-node/types.ts').FakeNodeOptions
  cold?: ColdStore
  logger?: RealtimeLogger
  onFatal?: (err: Error) => void
  /** see RealtimeDatasetOptions */
  normalizeThreads?: number
}

/** the demo's fake node, started, and the hot store's directory (a temp dir unless given) */
export async function startDemoChain(opts: DemoDatasetOptions): Promise<{
  node: import('../fake-node/node.ts').FakeSolanaNode
  dataDir: string
  /** stop the node and remove the temp dir */
  stop(): Promise<void>
}> {
  const { FakeSolanaNode } = await import('../fake-node/node.ts')
  const { demoTemplates } = await import('../fake-node/templates.ts')
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const node = await FakeSolanaNode.start({
    templates: demoTemplates(),
    txPerBlock: 40,
    intervalMs: 400,
    initialBlocks: 150,
    finalityLag: 32,
    forkEvery: 50,
    forkDepth: 2,
    ...opts.node,
  })
  const tmp = opts.dataDir ? null : mkdtempSync(join(tmpdir(), 'solportal-demo-'))
  return {
    node,
    dataDir: opts.dataDir ?? tmp!,
    stop: async () => {
      await node.stop()
      if (tmp) rmSync(tmp, { recursive: true, force: true })
    },
  }
}

export async function createDemoDataset(
  opts: DemoDatasetOptions = {},
): Promise<RealtimeDataset & { node: import('../fake-node/node.ts').FakeSolanaNode }> {
  const chain = await startDemoChain(opts)
  const node = chain.node
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: chain.dataDir,
    cold: opts.cold,
    startSlot: node.firstSlot,
    concurrency: 4,
    pollIntervalMs: 100,
    logger: opts.logger,
    onFatal: opts.onFatal,
    normalizeThreads: opts.normalizeThreads,
  })
  return {
    ...ds,
    node,
    stop: async () => {
      await ds.stop()
      await chain.stop()
    },
  }
}
