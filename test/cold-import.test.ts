// `solportal import`: equals normalizing the archives, resumes, rejects unordered input; the
// dataset directory serves what was imported, also while an import is still appending.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/cli/commands/import.ts'
import { readArchive } from '../src/ingest/archive.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { DiskColdStore } from '../src/store/cold.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir, openDatasetDir } from '../src/store/dataset-dir.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

async function normalized(paths: string[], includeVotes = false): Promise<Block[]> {
  const out: Block[] = []
  for await (const line of readArchive(paths)) out.push(normalizeBlock(line, { includeVotes }).block)
  return out
}

async function imported(dir: string): Promise<Block[]> {
  const s = await DiskColdStore.open(coldDir(dir), { readOnly: true, verify: 'full' })
  const out = s.entries.flatMap((e) => readChunkBlocks(join(coldDir(dir), 'chunks', e.file)))
  await s.close()
  return out
}

test('import equals normalizing the archives; the dataset directory serves it', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl.gz')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 50, txPerBlock: 25 })
  await writeArchive(b, { count: 20, txPerBlock: 25, startSlot: 310_000_000 })
  const want = await normalized([a, b])
  const dir = join(work, 'ds')
  const log: string[] = []
  const r = await runImport(dir, [a, b], { targetBlocks: 16, progress: 'lines' }, (s) => log.push(s))
  assert.equal(r.imported, 70)
  assert.equal(r.skipped, 0)
  assert.equal(r.firstBlock, want[0].header.number)
  assert.equal(r.lastBlock, want[69].header.number)
  assert.ok(
    log.some((l) => /100\.0% 70 blocks, \d+ blocks\/s, ETA 0s/.test(l)),
    log.join(''),
  )
  assert.deepEqual(await imported(dir), want)

  const store = await openDatasetDir(dir)
  assert.deepEqual(store.head(), { number: want[69].header.number, hash: want[69].header.hash })
  assert.deepEqual(store.finalizedHead(), store.head())
  assert.equal(store.firstBlock(), want[0].header.number)
  assert.deepEqual(store.meta, { format: 'solportal-dataset', version: 1, includeVotes: false })
  let n = 0
  for await (const c of store.chunks(want[10].header.number, want[40].header.number, true))
    n += Array.from(c.header('number')).filter((x) => x >= want[10].header.number).length
  assert.equal(n, 31)
  assert.equal(await store.waitFor(want[69].header.number, true, 10), true)
  assert.equal(await store.waitFor(want[69].header.number + 1, true, 50), false)
  await store.close()

  // the real mainnet block, with and without votes
  const real = join(ROOT, 'data', 'mainnet', 'blocks')
  for (const includeVotes of [false, true]) {
    const d = join(work, `real-${includeVotes}`)
    await runImport(d, [real], { includeVotes, progress: 'none' })
    assert.deepEqual(await imported(d), await normalized([real], includeVotes))
  }
  await assert.rejects(
    runImport(join(work, 'real-false'), [real], { includeVotes: true, progress: 'none' }),
    /without --include-votes/,
  )
})

test('an interrupted import resumes where it stopped; skips what is present; rejects unordered input', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl')
  const b = join(work, 'b.jsonl.gz')
  await writeArchive(a, { count: 40, txPerBlock: 10 })
  await writeArchive(b, { count: 30, txPerBlock: 10, startSlot: 300_000_100 })
  const want = await normalized([a, b])
  const dir = join(work, 'ds')
  const ac = new AbortController()
  const r1 = await runImport(dir, [a, b], {
    targetBlocks: 8,
    progress: 'none',
    signal: ac.signal,
    onBatch: (r) => r.imported >= 24 && ac.abort(),
  })
  assert.ok(r1.interrupted)
  const part = await imported(dir)
  assert.ok(part.length > 0 && part.length < 70, `${part.length} blocks after the interruption`)
  assert.deepEqual(part, want.slice(0, part.length))
  const r2 = await runImport(dir, [a, b], { targetBlocks: 8, progress: 'none' })
  assert.equal(r2.skipped, part.length)
  assert.equal(r2.imported, 70 - part.length)
  assert.deepEqual(await imported(dir), want)
  // nothing left to do
  const r3 = await runImport(dir, [a, b], { progress: 'none' })
  assert.deepEqual([r3.imported, r3.skipped], [0, 70])
  // files in the wrong order: a clear error naming the place
  await assert.rejects(runImport(join(work, 'other'), [b, a], { progress: 'none' }), (e: Error) => {
    assert.match(
      e.message,
      /a\.jsonl:1: block 300000000 comes after block \d+ \(.*b\.jsonl\.gz:30\): archives must be given in ascending block order/,
    )
    return true
  })
  // the CLI reports it and exits 1
  const cli = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'import', join(work, 'cli'), b, a, '--no-progress'],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(cli.status, 1)
  assert.match(cli.stderr, /import failed: .*comes after block/)
})

test('a reader of a dataset directory sees blocks another writer appends', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 10, txPerBlock: 5 })
  await writeArchive(b, { count: 10, txPerBlock: 5, startSlot: 300_000_100 })
  const dir = join(work, 'ds')
  await runImport(dir, [a], { progress: 'none' })
  const reader = await openDatasetDir(dir, { pollMs: 20 })
  const before = reader.head()!.number
  const waiting = reader.waitFor(300_000_100, true, 10_000)
  await runImport(dir, [a, b], { progress: 'none' })
  assert.equal(await waiting, true)
  assert.ok(reader.head()!.number > before)
  const nums: number[] = []
  for await (const c of reader.chunks(0, Number.MAX_SAFE_INTEGER, true)) nums.push(...Array.from(c.header('number')))
  assert.equal(nums.length, 20)
  await reader.close()
})
