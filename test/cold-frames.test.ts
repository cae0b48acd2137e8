// Compressed frames of chunk format 4 (src/store/cold/frames.ts): compressing on the thread pool
// (the main thread) and in the calling thread (import workers) writes the same bytes, and a chunk
// written before the frame filters changed (zigzag deltas for u32 columns, plain deltas for list and
// address offsets, text at quality 7; test/fixtures/cold/format4-mainnet-before-shuffle.spc, written
// by that writer from the two trimmed mainnet blocks of scripts/gen-cold-fixture.ts) still reads.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { fixtureBlocks } from '../scripts/gen-cold-fixture.ts'
import { REPO_ROOT } from '../src/ingest/sample.ts'
import { readChunkBlocks, readFooter, writeChunkFile } from '../src/store/cold/chunk-file.ts'
import { brotli, FILTER_DELTA32, FILTER_ZIGZAG32, FILTER_ZIGZAG32_SHUFFLE } from '../src/store/cold/frames.ts'
import { tempDir } from './support/cold/util.ts'

const OLD = join(REPO_ROOT, 'test/fixtures/cold/format4-mainnet-before-shuffle.spc')

/**
 * dictionary codes (u16) skewed towards small values, as a column of repeated accounts: the kind of
 * frame where processing the input and finishing in two steps cuts other blocks than one FINISH
 */
function codes(bytes: number, seed: number): Buffer {
  let s = seed
  const a = new Uint16Array(Math.ceil(bytes / 2))
  for (let i = 0; i < a.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    const r = (s >>> 8) / 2 ** 24
    a[i] = Math.floor(3000 * r * r)
  }
  return Buffer.from(a.buffer, 0, bytes)
}

test('a frame compressed on the thread pool and in this thread gives the same bytes', async () => {
  for (const [bytes, quality, lgwin] of [
    [1, 5, 17],
    [5_000, 5, 17],
    [65_536, 5, 17],
    // list postings (frames.ts POSTINGS_QUALITY)
    [65_536, 4, 17],
    [3_000, 4, 17],
    [40_000, 6, 17],
    [524_288, 6, 20],
    [2_000_000, 6, 24],
  ]) {
    const raw = codes(bytes, bytes)
    const pool = await brotli(raw, quality, lgwin, false)
    const here = await brotli(raw, quality, lgwin, true)
    assert.ok(Buffer.from(pool).equals(Buffer.from(here)), `${bytes} bytes at quality ${quality}: the bytes differ`)
  }
})

test('a format 4 chunk written with the earlier frame filters reads as the same blocks', async () => {
  const blocks = await fixtureBlocks()
  const old = readFooter(OLD).footer
  // the fixture holds the filters this writer no longer uses where it now uses zigzag + shuffle
  assert.equal(old.kinds.instruction.cols.transactionIndex.fr![0][1], FILTER_ZIGZAG32)
  assert.equal(old.kinds.instruction.cols.accounts.fr![0][1], FILTER_DELTA32)
  const path = join(tempDir(), 'now.spc')
  const now = (await writeChunkFile(path, blocks, { fsync: false })).footer
  assert.equal(now.kinds.instruction.cols.transactionIndex.fr![0][1], FILTER_ZIGZAG32_SHUFFLE)
  assert.equal(now.kinds.instruction.cols.accounts.fr![0][1], FILTER_ZIGZAG32_SHUFFLE)
  const before = readChunkBlocks(OLD)
  assert.deepEqual(before, readChunkBlocks(path))
  assert.deepEqual(
    before.map((b) => [b.header.number, b.transactions.length, b.instructions.length, b.logs.length]),
    blocks.map((b) => [b.header.number, b.transactions.length, b.instructions.length, b.logs.length]),
  )
})

test('compressInThisThread: a main thread then compresses frames itself, not on the thread pool', () => {
  const framesUrl = new URL('../src/store/cold/frames.ts', import.meta.url).href
  // resolved within a few microtasks: compressed in this thread; after an event-loop turn: on the pool
  const script = `
    const { brotli, compressInThisThread } = await import(${JSON.stringify(framesUrl)})
    const raw = new Uint8Array(200_000).map((_, i) => (i * 7) & 63)
    const settlesAtOnce = async () => {
      let done = false
      const p = brotli(raw, 5, 20).then(() => (done = true))
      for (let i = 0; i < 5; i++) await null
      const now = done
      await p
      return now
    }
    const before = await settlesAtOnce()
    compressInThisThread()
    process.stdout.write(JSON.stringify([before, await settlesAtOnce()]))
  `
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [false, true])
})
