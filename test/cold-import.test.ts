// `solportal import`: equals normalizing the archives, resumes, rejects unordered input; the
// dataset directory serves what was imported, also while an import is still appending. With
// worker threads (`--workers N`) the chunk files and manifests are byte for byte those of the
// in-process import (also when resuming onto an unsealed tail), batches are cut from the input
// alone so that workers parse batches side by side, and a bad line or a failing worker ends the
// import with a clear error instead of a hang.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BatchCut, TEXT_BYTES_RATIO } from '../src/ingest/import/batch.ts'
import { runImport, type ImportBackend, type ImportOptions } from '../src/ingest/import/index.ts'
import { readArchive } from '../src/ingest/archive.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readChunkIndex } from '../src/store/cold/chunk-index/chunk-index.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir, openDatasetDir } from '../src/store/dataset-dir.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'
import { runInline } from './support/inline.ts'

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
  // files given newest first are imported oldest first (ordered by their first lines), as [a, b]
  const swapped = join(work, 'swapped')
  const r4 = await runImport(swapped, [b, a], { targetBlocks: 8, progress: 'none' })
  assert.equal(r4.imported, 70)
  assert.deepEqual(await imported(swapped), want)
  // files that overlap: a clear error naming the place, whatever their order
  const c = join(work, 'c.jsonl')
  await writeArchive(c, { count: 10, txPerBlock: 10, startSlot: 300_000_020 })
  await assert.rejects(runImport(join(work, 'other'), [c, a], { progress: 'none' }), (e: Error) => {
    assert.match(
      e.message,
      /c\.jsonl:1: block 300000020 comes after block \d+ \(.*a\.jsonl:\d+\): archives must ascend inside each file and must not overlap/,
    )
    return true
  })
  // the CLI reports it and exits 1
  const cli = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'import', join(work, 'cli'), c, a, '--no-progress'],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(cli.status, 1)
  assert.match(cli.stderr, /import failed: .*comes after block/)
  // an archive that does not exist is a misuse: one line naming it, status 2, nothing created
  const missing = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'import', join(work, 'cli2'), a, join(work, 'nope.jsonl')],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(missing.status, 2)
  assert.equal(missing.stderr.trim().split('\n').length, 1, missing.stderr)
  assert.match(missing.stderr, /nope\.jsonl: no such file or directory/)
  assert.doesNotMatch(missing.stderr, /ENOENT/)
  assert.equal(existsSync(join(work, 'cli2')), false)
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

/** every file of the cold store with its sha256 (the catalogue's entries included) */
async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  const cold = coldDir(dir)
  for (const f of readdirSync(join(cold, 'chunks')).sort())
    out[f] = createHash('sha256')
      .update(readFileSync(join(cold, 'chunks', f)))
      .digest('hex')
  out.catalogue = JSON.stringify(await readChunkIndex(cold))
  return out
}

test('import with worker threads writes the same files as in-process; resumes onto an unsealed tail', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl.gz')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 45, txPerBlock: 30 })
  await writeArchive(b, { count: 25, txPerBlock: 30, startSlot: 300_000_200 })
  const want = await normalized([a, b])
  // batches closed by count and by estimated bytes
  const base: ImportOptions = { targetBlocks: 9, targetBytes: 450_000, progress: 'none' }

  const seq = join(work, 'seq')
  const r1 = await runImport(seq, [a, b], { ...base, workers: 1 })
  assert.equal(r1.workers, 1)
  const par = join(work, 'par')
  const r3 = await runImport(par, [a, b], { ...base, workers: 3 })
  assert.equal(r3.workers, 3)
  assert.deepEqual([r3.imported, r3.firstBlock, r3.lastBlock], [r1.imported, r1.firstBlock, r1.lastBlock])
  const seqFiles = await files(seq)
  assert.ok(Object.keys(seqFiles).length > 8, 'several chunks')
  assert.deepEqual(await files(par), seqFiles)
  assert.deepEqual(await imported(par), want)
  const m = JSON.parse(seqFiles.catalogue) as { sealed: boolean; blockCount: number }[]
  assert.ok(m.some((c) => c.blockCount < 9) && m.some((c) => c.blockCount === 9), 'byte and count limits both met')
  assert.ok(
    m.slice(0, -1).every((c) => c.sealed),
    'every chunk but the last is sealed',
  )

  // a first run ending on an unsealed chunk, the rest imported by the other mode: same files again
  const seqThenPar = join(work, 'seq-par')
  const parThenSeq = join(work, 'par-seq')
  await runImport(seqThenPar, [a], { ...base, workers: 1 })
  await runImport(parThenSeq, [a], { ...base, workers: 2 })
  assert.deepEqual(await files(seqThenPar), await files(parThenSeq))
  const tail = JSON.parse((await files(seqThenPar)).catalogue).at(-1)
  assert.equal(tail.sealed, false, 'the first run ends with an unsealed chunk')
  const ra = await runImport(seqThenPar, [a, b], { ...base, workers: 2 })
  const rb = await runImport(parThenSeq, [a, b], { ...base, workers: 1 })
  assert.deepEqual([ra.skipped, ra.imported], [45, 25])
  assert.deepEqual([rb.skipped, rb.imported], [45, 25])
  assert.deepEqual(await files(parThenSeq), await files(seqThenPar))
  assert.deepEqual(await imported(seqThenPar), want)
  const chunks = JSON.parse((await files(seqThenPar)).catalogue) as { file: string }[]
  assert.ok(!chunks.some((c) => c.file === tail.file), 'the tail was rewritten')
})

test('lines reach the workers through the shared ring, or as buffers of their own when longer than it: same files', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl.gz')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 12, txPerBlock: 20 })
  await writeArchive(b, { count: 6, txPerBlock: 200, startSlot: 300_000_100 })
  // 2 workers: a ring of 2 x ceil(150,000 / 0.31 / 2) bytes, ~484 KB: the 20-transaction lines fit
  // in it, the 200-transaction ones (~800 KB) do not
  const base: ImportOptions = { targetBlocks: 5, targetBytes: 150_000, progress: 'none' }
  const seq = join(work, 'seq')
  await runImport(seq, [a, b], { ...base, workers: 1 })
  const seen = { ring: 0, own: 0 }
  const watch = (x: ImportBackend): ImportBackend => ({
    start: (id, tail) => x.start(id, tail),
    line: (id, seq, line) => {
      if (line.buffer instanceof SharedArrayBuffer) seen.ring++
      else {
        assert.ok(line.byteOffset === 0 && line.buffer.byteLength === line.length, 'a line of its own')
        seen.own++
      }
      return x.line(id, seq, line)
    },
    end: (id, sealed) => x.end(id, sealed),
    chunk: (id) => x.chunk(id),
    close: () => x.close(),
  })
  const par = join(work, 'par')
  const r = await runImport(par, [a, b], { ...base, workers: 2, wrapBackend: watch })
  assert.equal(r.imported, 18)
  assert.deepEqual(seen, { ring: 12, own: 6 })
  assert.deepEqual(await files(par), await files(seq))
  assert.deepEqual(await imported(par), await normalized([a, b]))
})

test('batches end where the lengths of their lines say: blocks, or estimated bytes', () => {
  const cut = new BatchCut(3, 100)
  cut.begin()
  // 100 characters are estimated at 31 bytes
  assert.equal(TEXT_BYTES_RATIO, 0.31)
  assert.deepEqual([cut.add(100), cut.add(200), cut.add(30)], [false, false, true], '31 + 62 + 10 bytes')
  cut.begin()
  assert.deepEqual([cut.add(10), cut.add(10), cut.add(10)], [false, false, true], 'three blocks')
  // a batch beginning with the unsealed tail's blocks counts them
  cut.begin({ blocks: 1, bytes: 90 })
  assert.deepEqual([cut.full, cut.add(40)], [false, true])
  cut.begin({ blocks: 2, bytes: 0 })
  assert.equal(cut.add(1), true)
})

test('with worker threads, the next batch is parsed while the lines of the one before are unanswered', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl.gz')
  await writeArchive(a, { count: 30, txPerBlock: 30 })
  const base: ImportOptions = { targetBlocks: 6, progress: 'none' }
  await runImport(join(work, 'seq'), [a], { ...base, workers: 1 })
  // the answers to the first batch's lines are held back until the second batch's first line was
  // parsed (by the other worker): before batches were cut from the input, the reader learnt where
  // the first batch ended from those answers, and waited for them
  const events: string[] = []
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  let parsed!: () => void
  const secondParsed = new Promise<void>((r) => (parsed = r))
  const watch = (b: ImportBackend): ImportBackend => ({
    start: (id, tail) => b.start(id, tail),
    line: async (id, seq, line) => {
      events.push(`line ${id}`)
      const r = await b.line(id, seq, line)
      events.push(`parsed ${id}`)
      if (id === 1) parsed()
      if (id === 0) await held
      return r
    },
    end: (id, sealed) => b.end(id, sealed),
    chunk: (id) => b.chunk(id),
    close: () => b.close(),
  })
  const par = join(work, 'par')
  const run = runImport(par, [a], { ...base, workers: 2, wrapBackend: watch })
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      secondParsed,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the second batch was not parsed: ${events.join(', ')}`)), 20_000)
      }),
    ])
  } finally {
    clearTimeout(timer)
    release()
  }
  const r = await run
  assert.equal(r.imported, 30)
  assert.deepEqual(await files(par), await files(join(work, 'seq')))
})

test('a bad line or a failing worker ends a parallel import with an error, not a hang', async () => {
  const work = tempDir()
  const a = join(work, 'a.jsonl')
  await writeArchive(a, { count: 12, txPerBlock: 10 })
  // a bad line in the middle of the second batch (the lines after it in the batch are not parsed)
  // and as its last line (the batch's end is sent before the line is answered)
  for (const at of [5, 7]) {
    const lines = readFileSync(a, 'utf8').split('\n')
    lines[at] = lines[at].slice(0, 30) + '"slot_broken'
    const bad = join(work, `bad${at}.jsonl`)
    writeFileSync(bad, lines.join('\n'))
    for (const workers of [1, 2]) {
      const ds = join(work, `ds-bad${at}-${workers}`)
      await assert.rejects(runImport(ds, [bad], { targetBlocks: 4, progress: 'none', workers }), (e: Error) => {
        assert.match(e.message, new RegExp(`bad${at}\\.jsonl:${at + 1}: `))
        return true
      })
      // the batches before the bad line are kept, none after it
      assert.deepEqual(
        (await imported(ds)).length,
        4,
        `the first full batch was written before the failure (line ${at + 1}, ${workers} workers)`,
      )
    }
  }

  // a worker running out of memory while normalizing (whole mainnet-sized blocks, a small heap)
  const big = join(work, 'big.jsonl')
  await writeArchive(big, { count: 30, txPerBlock: 600 })
  const t0 = Date.now()
  await assert.rejects(
    runImport(join(work, 'ds-oom'), [big], {
      progress: 'none',
      workers: 2,
      // (48 MB no longer runs out since a batch keeps its columns compact: 36 does, 24 with room)
      workerResourceLimits: { maxOldGenerationSizeMb: 24 },
    }),
    /import worker \d failed: .*out of memory/,
  )
  assert.ok(Date.now() - t0 < 60_000)
})

test('import worker threads start in a process whose entry point is inline code (node --input-type=module -e)', async () => {
  // a worker inheriting `--input-type` died at once and the import ended with an error
  const src = (f: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, '..', 'src', f)).href)
  const code = `const { runImport } = await import(${src('ingest/import/index.ts')})
const { sampleArchives } = await import(${src('ingest/sample.ts')})
const r = await runImport(${JSON.stringify(tempDir())}, sampleArchives(), { workers: 2, progress: 'none' }, () => {})
process.stdout.write(String(r.imported))`
  const { status, out, err } = await runInline(code)
  assert.equal(status, 0, err)
  assert.ok(Number(out) > 0, out)
})
