/**
 * Child process for the crash test: follows the node at argv[2] into the hot store under argv[3]
 * and the FileColdStore at argv[4]; prints {"head","fin","dropped"} after every change; stops on SIGTERM.
 */
import { createRealtimeDataset } from '../../../src/ingest/realtime/dataset.ts'
import { silentLogger } from '../../../src/ingest/realtime/types.ts'
import { FileColdStore } from './file-cold.ts'

const [url, dataDir, coldPath, startSlot] = process.argv.slice(2)
const cold = new FileColdStore(coldPath)
// CRASH_AFTER_COLD_APPEND=n: SIGKILL this process right after the n-th durable cold append,
// i.e. between the cold append and the hot delete
const crashAfter = Number(process.env.CRASH_AFTER_COLD_APPEND ?? 0)
if (crashAfter > 0) {
  let appends = 0
  const append = cold.append.bind(cold)
  cold.append = async (blocks) => {
    await append(blocks)
    if (++appends === crashAfter) process.kill(process.pid, 'SIGKILL')
  }
}
const ds = await createRealtimeDataset({
  rpcUrl: url,
  dataDir,
  cold,
  startSlot: Number(startSlot),
  pollIntervalMs: 5,
  finalizeIntervalMs: 10,
  orphanStrikes: 3,
  tipCheckIntervalMs: 10,
  rpc: { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 1000 },
  logger: silentLogger,
})
const report = () =>
  process.stdout.write(
    JSON.stringify({ head: ds.store.head(), fin: ds.store.finalizedHead(), dropped: ds.hot.droppedOnOpen.length }) +
      '\n',
  )
ds.store.onChange(report)
ds.start()
report()
process.once('SIGTERM', async () => {
  await ds.stop()
  await cold.close()
  process.exit(0)
})
