/**
 * Child process of bench/tail.bench.ts: a fake Solana node (src/ingest/fake-node.ts) over the
 * archive file argv[2] (argv[3] blocks at start, finality lagging argv[4] slots), producing a block only when the parent asks (IPC `produce`) and answering
 * with the slot and the wall-clock time (ms since the epoch, sub-ms) at which it became available.
 * Running the node in its own process keeps the cost of assembling its ~5 MB answers out of the
 * measured process.
 */
import { FakeSolanaNode } from '../../src/ingest/fake-node.ts'

const now = () => performance.timeOrigin + performance.now()
const node = await FakeSolanaNode.start({
  templates: [process.argv[2]],
  intervalMs: 0,
  initialBlocks: Number(process.argv[3] ?? 3),
  skipRate: 0.1,
  finalityLag: Number(process.argv[4] ?? 32),
  seed: 3,
})
process.send!({ t: 'ready', url: node.url, tip: node.tip.slot, firstSlot: node.firstSlot })
process.on('message', (m: { t: string }) => {
  if (m.t === 'produce') {
    const b = node.produce()
    process.send!({ t: 'produced', slot: b.slot, at: now() })
  } else if (m.t === 'stop') {
    void node.stop().then(() => process.exit(0))
  }
})
