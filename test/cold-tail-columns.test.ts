// A writer seals its unsealed tail from the columns it holds (src/store/cold/tail-columns.ts): the
// same chunk files, byte for byte, as a writer that reads the tail's files back (one opened anew
// before every append holds nothing), under block and byte targets, with merges.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../src/store/cold/disk-store.ts'
import { estimateAll } from '../src/store/cold/tail-plan.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { tempDir } from './support/cold/util.ts'

/** append `blocks` in batches of `sizes` (cycled), reopening the store before each when `reopen` */
async function run(blocks: Block[], sizes: number[], opts: DiskColdStoreOptions, reopen: boolean) {
  const dir = tempDir()
  const o = { ...opts, fsync: false, graceMs: 0 }
  let s = await DiskColdStore.open(dir, o)
  for (let i = 0, k = 0; i < blocks.length; k++) {
    const n = sizes[k % sizes.length]
    if (reopen) {
      await s.close()
      s = await DiskColdStore.open(dir, o)
    }
    await s.append(blocks.slice(i, i + n))
    i += n
  }
  const entries = s.entries.map((e) => ({ ...e }))
  await s.close()
  return entries
}

test('a tail sealed from the columns held writes the same files as one read back', async () => {
  const blocks = generateBlocks({ seed: 11, count: 90 })
  const perBlock = estimateAll(blocks) / blocks.length
  const cases: [number[], DiskColdStoreOptions][] = [
    [[4, 3, 7], { targetBlocks: 10 }],
    [[1, 2, 1, 5], { targetBlocks: 12, fanout: 3 }],
    // by the estimate: about 8.5 blocks a chunk
    [[3, 5, 2], { targetBytes: Math.round(perBlock * 8.5) }],
    [[2, 9], { targetBytes: Math.round(perBlock * 6.3), fanout: 2 }],
  ]
  for (const [sizes, opts] of cases) {
    const held = await run(blocks, sizes, opts, false)
    const read = await run(blocks, sizes, opts, true)
    assert.ok(
      held.filter((e) => e.sealed).length >= 5,
      `${JSON.stringify(opts)}: ${held.length} chunks (seals were exercised)`,
    )
    assert.deepEqual(held, read, `${JSON.stringify(opts)} in batches of ${sizes}`)
    assert.equal(held[held.length - 1].lastBlock, blocks[blocks.length - 1].header.number)
  }
})
