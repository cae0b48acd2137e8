/**
 * Child process of the crash test: appends the generated blocks of `seed` (count) to the store at
 * `dir` in small batches (1..3 blocks, so merges happen all the time), resuming after the store's
 * last block. Killed with SIGKILL at random moments by the test.
 * Usage: node --import tsx append-child.ts DIR SEED COUNT
 */
import { DiskColdStore } from '../../../src/store/cold/disk-store.ts'
import { generateBlocks } from './gen.ts'

const [dir, seed, count] = process.argv.slice(2)
const blocks = generateBlocks({ seed: Number(seed), count: Number(count), txPerBlock: 4 })
// tiny catalogue files, so that kills also land in segment cuts and log rewrites
const store = await DiskColdStore.open(dir, {
  targetBlocks: 12,
  fanout: 3,
  graceMs: 0,
  catalogue: { segmentEntries: 2, logBytes: 2000 },
})
const last = store.lastBlock()?.number ?? -1
let i = blocks.findIndex((b) => b.header.number > last)
if (i < 0) i = blocks.length
let k = 0
while (i < blocks.length) {
  const n = 1 + (k++ % 3)
  await store.append(blocks.slice(i, i + n))
  i += n
}
await store.close()
