/** Helpers for the cold store tests: temp directories and building stores from blocks. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import type { Block } from '../../../src/model.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../../../src/store/cold/disk-store.ts'
import { coldDir, openDatasetDir, writeDatasetMeta, type DatasetDirStore } from '../../../src/store/dataset-dir.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** a fresh temp directory, removed when the test file ends */
export function tempDir(prefix = 'solportal-cold-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}

/** Append `blocks` in batches of the given sizes (cycled), then close. */
export async function writeStore(
  dir: string,
  blocks: Block[],
  opts: DiskColdStoreOptions,
  batches: number[] = [blocks.length],
): Promise<void> {
  const s = await DiskColdStore.open(dir, { fsync: false, ...opts })
  let i = 0
  let k = 0
  while (i < blocks.length) {
    const n = Math.max(1, batches[k++ % batches.length])
    await s.append(blocks.slice(i, i + n))
    i += n
  }
  await s.close()
}

/** A dataset directory holding `blocks`, opened read-only as a BlockStore. */
export async function datasetOf(
  blocks: Block[],
  opts: DiskColdStoreOptions,
  batches?: number[],
): Promise<DatasetDirStore> {
  const dir = tempDir()
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false })
  if (blocks.length) await writeStore(coldDir(dir), blocks, opts, batches)
  else await (await DiskColdStore.open(coldDir(dir), { fsync: false })).close()
  return openDatasetDir(dir)
}
