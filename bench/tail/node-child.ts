/**
 * Child process of bench/tail.bench.ts: a fake Solana node (src/ingest/fake-node/) over the
 * archive file argv[2] (argv[3] blocks at start, finality lagging argv[4] slots), producing a block only when the parent asks (IPC `produce`) and answering
 * with the slot, the wall-clock time (ms since the epoch, sub-ms) at which it became available and
 * how long producing it took. The node assembles each block's answer text when it produces it
 * (`prerender`), so that the latency measured from `at` does not count the fake node's own JS
 * building a 1,500-transaction answer (reported apart as `assembleMs`).
 * With argv[5] = `geyser`, the chain is also streamed by a fake Geyser server
 * (src/ingest/geyser/fake-server.ts), which encodes each block's message as it is produced (also
 * counted in `assembleMs`, before `at`). IPC `stats` answers with the JSON-RPC requests and
 * getBlock calls the node has served so far.
 * Running the node in its own process keeps the cost of assembling its ~5 MB answers out of the
 * measured process.
 */
import { FakeSolanaNode } from '../../src/ingest/fake-node/node.ts'
import { FakeGeyserServer } from '../../src/ingest/geyser/fake-server.ts'

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
const geyser = process.argv[5] === 'geyser' ? await FakeGeyserServer.start(node) : null
process.send!({ t: 'ready', url: node.url, geyserUrl: geyser?.url, tip: node.tip.slot, firstSlot: node.firstSlot })
process.on('message', (m: { t: string }) => {
  if (m.t === 'produce') {
    const t = now()
    const b = node.produce()
    const at = now()
    process.send!({ t: 'produced', slot: b.slot, at, assembleMs: at - t })
  } else if (m.t === 'stats') {
    process.send!({ t: 'stats', requests: node.stats.requests, getBlock: node.stats.getBlock })
  } else if (m.t === 'stop') {
    void (geyser?.stop() ?? Promise.resolve()).then(() => node.stop()).then(() => process.exit(0))
  }
})
