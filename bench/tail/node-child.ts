/**
 * Child process of bench/tail.bench.ts: a fake Solana node (src/ingest/fake-node.ts) over the
 * archive file argv[2] (argv[3] blocks at start, finality lagging argv[4] slots), producing a block only when the parent asks (IPC `produce`) and answering
 * with the slot, the wall-clock time (ms since the epoch, sub-ms) at which it became available and
 * how long producing it took. The node assembles each block's answer text when it produces it
 * (`prerender`), so that the latency measured from `at` does not count the fake node's own JS
 * building a 1,500-transaction answer (reported apart as `assembleMs`).
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
  prerender: true,
})
process.send!({ t: 'ready', url: node.url, tip: node.tip.slot, firstSlot: node.firstSlot })
process.on('message', (m: { t: string }) => {
  if (m.t === 'produce') {
    const t = now()
    const b = node.produce()
    const at = now()
    process.send!({ t: 'produced', slot: b.slot, at, assembleMs: at - t })
  } else if (m.t === 'stop') {
    void node.stop().then(() => process.exit(0))
  }
})
