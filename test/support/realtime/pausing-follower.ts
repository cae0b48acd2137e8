/**
 * The follower the tests of ingestion's pauses run (the hot store's bound, the finalized
 * backlog's): a real RealtimeDataset over a fake node on loopback, into the given cold store,
 * with fast polling and finalization, LMDB without fsync, its log lines kept; and the wait until
 * a pause has stopped its head.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { FakeSolanaNode } from '../../../src/ingest/fake-node/node.ts'
import {
  createRealtimeDataset,
  type RealtimeDataset,
  type RealtimeDatasetOptions,
} from '../../../src/ingest/realtime/dataset.ts'
import { tempDir } from '../cold/util.ts'

export interface PausingFollower {
  ds: RealtimeDataset
  /** every line it logged, in order */
  logs: string[]
  /** the largest hot-store bytes per block seen so far (the slack a bound allows: one block over) */
  largest(): number
  /** the most bytes the hot store held so far */
  peak(): number
}

/** a follower of `node` from its first slot into `cold`; `opts` adds or overrides options */
export async function pausingFollower(
  node: FakeSolanaNode,
  cold: RealtimeDatasetOptions['cold'],
  opts: Partial<RealtimeDatasetOptions>,
): Promise<PausingFollower> {
  const dir = tempDir('solportal-pause-')
  const logs: string[] = []
  const log = (m: string) => logs.push(m)
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: dir,
    cold,
    startSlot: node.firstSlot,
    pollIntervalMs: 5,
    finalizeIntervalMs: 20,
    hotPauseCheckMs: 20,
    noSync: true,
    logger: { info: log, warn: log, error: log },
    ...opts,
  })
  let largest = 0
  let peak = 0
  ds.hot.on('change', () => {
    peak = Math.max(peak, ds.hot.bytes)
    const w = ds.hot.entries()
    if (w.length) largest = Math.max(largest, ds.hot.bytes / w.length)
  })
  return { ds, logs, largest: () => largest, peak: () => peak }
}

/**
 * Resolves once the store's head (some block stored) stayed where it was for `everyMs` while
 * `paused()` holds; throws after 60 s naming the follower's log.
 */
export async function untilHeadStops(f: PausingFollower, everyMs: number, paused = () => true): Promise<void> {
  const t0 = Date.now()
  for (let head = -1; ;) {
    if (Date.now() - t0 > 60_000) throw new Error(`never paused: ${f.logs.join(' | ')}`)
    await sleep(everyMs)
    const now = f.ds.store.head()?.number ?? -1
    if (paused() && now === head && now >= 0) return
    head = now
  }
}
