// Crash safety with real processes: kill -9 a writer (the import command, or a store appending
// small batches with merges) mid-write several times, restart, and compare with a straight run.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/ingest/import/index.ts'
import { readArchive } from '../src/ingest/archive.ts'
import type { Block } from '../src/model.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { ChunkIndex } from '../src/store/cold/chunk-index/chunk-index.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { generateBlocks, rng } from './support/cold/gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

async function lastOf(dir: string): Promise<number> {
  try {
    return (await ChunkIndex.open(dir, { readOnly: true }))?.snapshot().last()?.lastBlock ?? -1
  } catch {
    return -1
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Run `args` in a child; once the store in `watch` has advanced beyond `before`, wait a random
 * moment and SIGKILL it. Resolves with whether it was killed (false: it finished first).
 */
async function runAndKill(args: string[], watch: string, before: number, delay: number): Promise<boolean> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  let done = false
  exited.then(() => (done = true))
  while (!done && (await lastOf(watch)) <= before) await sleep(20)
  if (!done) {
    await sleep(delay)
    if (!done) child.kill('SIGKILL')
  }
  const code = await exited
  if (code !== null && code !== 0) throw new Error(`child failed (${code}): ${stderr}`)
  return code === null
}

/** leftovers of interrupted writes found (before a writer open cleans them), for the diagnostics */
let leftovers = 0
async function countLeftovers(dir: string): Promise<void> {
  try {
    const listed = new Set(
      (await ChunkIndex.open(dir, { readOnly: true }))
        ?.snapshot()
        .all()
        .map((c) => c.file),
    )
    leftovers += readdirSync(join(dir, 'tmp')).length
    leftovers += readdirSync(join(dir, 'chunks')).filter((f) => !listed.has(f)).length
  } catch {
    /* not created yet */
  }
}

async function storeBlocks(dir: string): Promise<Block[]> {
  await countLeftovers(dir)
  const s = await DiskColdStore.open(dir, { verify: 'full' }) // a writer open: cleans leftovers, checks every sha256
  const files = readdirSync(join(dir, 'chunks')).sort()
  assert.deepEqual(files, s.entries.map((e) => e.file).sort(), 'only listed chunk files remain')
  assert.deepEqual(readdirSync(join(dir, 'tmp')), [])
  const blocks = s.entries.flatMap((e) => readChunkBlocks(join(dir, 'chunks', e.file)))
  await s.close()
  return blocks
}

test('import killed with SIGKILL mid-write, then resumed, equals a straight import', async (t) => {
  leftovers = 0
  const work = tempDir()
  const a = join(work, 'a.jsonl.gz')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 160, txPerBlock: 20 })
  await writeArchive(b, { count: 100, txPerBlock: 20, startSlot: 300_000_500 })
  const straight = join(work, 'straight')
  await runImport(straight, [a, b], { targetBlocks: 8, progress: 'none' })
  const want = await storeBlocks(coldDir(straight))
  assert.equal(want.length, 260)

  const crashed = join(work, 'crashed')
  const r = rng(42)
  let kills = 0
  for (let run = 0; run < 5; run++) {
    const before = await lastOf(coldDir(crashed))
    const killed = await runAndKill(
      ['src/cli/main.ts', 'import', crashed, a, b, '--chunk-blocks', '8', '--no-progress'],
      coldDir(crashed),
      before,
      Math.floor(r() * 250),
    )
    await countLeftovers(coldDir(crashed))
    if (!killed) break
    kills++
  }
  assert.ok(kills >= 3, `only ${kills} runs were killed mid-import`)
  const partial = await lastOf(coldDir(crashed))
  assert.ok(partial < want[want.length - 1].header.number, 'the kills left work to do')
  await runImport(crashed, [a, b], { targetBlocks: 8, progress: 'none' })
  const got = await storeBlocks(coldDir(crashed))
  assert.equal(got.length, want.length, 'no missing or duplicated block')
  assert.deepEqual(got, want)
  // every block of the source archives exactly once, in order, with its hashes
  const source: [number, string][] = []
  for await (const l of readArchive([a, b])) source.push([l.slot, l.hash ?? l.block.blockhash])
  assert.deepEqual(
    got.map((x) => [x.header.number, x.header.hash]),
    source,
  )
  t.diagnostic(`${kills} kills, ${leftovers} half-written files left behind and cleaned`)
})

test('small appends with merges killed with SIGKILL: always an exact prefix, complete after restart', async (t) => {
  leftovers = 0
  const dir = tempDir()
  const count = 150
  const want = generateBlocks({ seed: 77, count, txPerBlock: 4 })
  const r = rng(7)
  let kills = 0
  for (let run = 0; run < 6; run++) {
    const before = await lastOf(dir)
    const killed = await runAndKill(
      ['test/support/cold/append-child.ts', dir, '77', String(count)],
      dir,
      before,
      Math.floor(r() * 150),
    )
    // after every crash the durable state is an exact prefix of the input
    const got = await storeBlocks(dir)
    assert.deepEqual(got, want.slice(0, got.length), `run ${run}: not a prefix`)
    if (!killed) break
    kills++
  }
  assert.ok(kills >= 3, `only ${kills} runs were killed`)
  await runAndKill(['test/support/cold/append-child.ts', dir, '77', String(count)], dir, Infinity, 0)
  assert.deepEqual(await storeBlocks(dir), want)
  t.diagnostic(`${kills} kills, ${leftovers} half-written or dropped files left behind and cleaned`)
})
