// Decompression ahead of a range scan (src/store/cold/prefetch.ts): a wide query over many chunks
// whose columns do not stay in the cache takes the frames the chunk before read whole from the
// decompressing thread, and its lines are those of the same query read without it (and of the
// in-memory store).
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { MessageChannel, Worker } from 'node:worker_threads'
import { brotliCompressSync, crc32 } from 'node:zlib'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { coldDir, openDatasetDir, writeDatasetMeta } from '../src/store/dataset-dir.ts'
import { CorruptChunkError } from '../src/store/cold/chunk-file.ts'
import { CODEC_BROTLI, CODEC_ZSTD, frameStats } from '../src/store/cold/frames.ts'
import { zstdBuilds } from '../src/util/zstd.mjs'
import { storedReads } from '../src/store/cold/raw/page-io.ts'
import { holdPrefetch, prefetchPending, prefetchStats, stopPrefetchThread } from '../src/store/cold/prefetch.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { tempDir, writeStore } from './support/cold/util.ts'

/** a dataset directory of `blocks` in chunks of 8 blocks with small frames (several per part) */
async function dataset(blocks: Parameters<typeof writeStore>[1]): Promise<string> {
  const dir = tempDir()
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false })
  await writeStore(coldDir(dir), blocks, { targetBlocks: 8, frameLog: 12 })
  return dir
}

/** the query's lines; after each block, until the decompressing thread has answered (so what it fetched is there for the next chunk) */
async function lines(store: BlockStore, body: Record<string, unknown>, to: number): Promise<string[]> {
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to, finalizedOnly: true })) {
    out.push(b.line)
    for (let waited = 0; prefetchPending() > 0 && waited < 20_000; waited += 5) await sleep(5)
  }
  return out
}

const everything = (from: number, to: number) => ({
  type: 'solana',
  fromBlock: from,
  toBlock: to,
  includeAllBlocks: true,
  fields: {
    block: { number: true, hash: true, parentHash: true, timestamp: true },
    transaction: { transactionIndex: true, signatures: true, feePayer: true, fee: true, accountKeys: true, err: true },
    instruction: { transactionIndex: true, instructionAddress: true, programId: true, accounts: true, data: true },
    log: { transactionIndex: true, logIndex: true, message: true, kind: true },
    balance: { transactionIndex: true, account: true, pre: true, post: true },
    tokenBalance: { transactionIndex: true, account: true, preAmount: true, postAmount: true, postMint: true },
  },
  transactions: [{}],
  instructions: [{}],
  logs: [{}],
  balances: [{}],
  tokenBalances: [{}],
})

/** 48 generated blocks in a dataset directory (6 chunks), the everything-query over all of them and its lines read from memory */
async function wideScan(seed: number) {
  const blocks = generateBlocks({ seed, count: 48, accounts: 500 })
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const dir = await dataset(blocks)
  const body = everything(first, last)
  const want = await lines(new StaticStore(blocks, 8), body, last)
  return { blocks, last, dir, body, want }
}

test('a wide scan takes frames decompressed ahead and writes the same lines as without', async () => {
  // 6 chunks; a 1-byte cache: every chunk is read from its file again
  const { blocks, last, dir, body, want } = await wideScan(21)
  assert.equal(want.length, blocks.length)

  const off = await openDatasetDir(dir, { cacheBytes: 1, readAhead: false })
  const s0 = { ...prefetchStats }
  const f0 = frameStats.frames
  const r0 = storedReads.bytes
  assert.deepEqual(await lines(off, body, last), want)
  const withoutFrames = frameStats.frames - f0
  const withoutStored = storedReads.bytes - r0
  assert.equal(prefetchStats.started, s0.started, 'readAhead: false fetches nothing ahead')
  await off.close()

  const on = await openDatasetDir(dir, { cacheBytes: 1 })
  const f1 = frameStats.frames
  const r1 = storedReads.bytes
  assert.deepEqual(await lines(on, body, last), want)
  const withFrames = frameStats.frames - f1
  // the stored bytes of frames all decompressed ahead are not read again by the reader
  const withStored = storedReads.bytes - r1
  assert.ok(withStored < withoutStored * 0.75, `${withStored} of ${withoutStored} stored bytes read by the reader`)
  const taken = prefetchStats.taken - s0.taken
  assert.ok(taken > 0, 'frames decompressed ahead were taken')
  assert.equal(withoutFrames, withFrames + taken, 'every frame is decompressed once, by the reader or ahead')
  // chunks 0 and 1 are read by the reader; from chunk 2 on what the chunk before read whole comes ahead
  assert.ok(withFrames < withoutFrames / 2, `${withFrames} of ${withoutFrames} frames decompressed by the reader`)
  // again: the same lines
  assert.deepEqual(await lines(on, body, last), want)
  await on.close()
})

test('a reader that never yields to the event loop still takes the frames decompressed ahead', async () => {
  const { last, dir, body, want } = await wideScan(22)
  const store = await openDatasetDir(dir, { cacheBytes: 1 })
  const s0 = { ...prefetchStats }
  // between blocks, the thread is waited for with the event loop blocked (Atomics.wait): its
  // answers are not delivered as events, the reader takes them from the port itself
  const idle = new Int32Array(new SharedArrayBuffer(4))
  const deadline = Date.now() + 30_000
  const got: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: true })) {
    got.push(b.line)
    while (prefetchPending() > 0 && Date.now() < deadline) Atomics.wait(idle, 0, 0, 5)
  }
  assert.deepEqual(got, want)
  assert.ok(prefetchStats.taken > s0.taken, 'frames decompressed ahead were taken')
  await store.close()
})

test('a damaged frame read ahead is reported, not decompressed into other lines', async () => {
  const blocks = generateBlocks({ seed: 23, count: 48, accounts: 500 })
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const dir = await dataset(blocks)
  // damage the stored frames of a chunk that is read ahead (chunk 3 of 6): a byte in every 4 KiB
  // of its column data (the footer at its end left whole)
  const files = readdirSync(join(coldDir(dir), 'chunks'))
    .filter((f) => !f.startsWith('.'))
    .sort()
  assert.equal(files.length, 6)
  const victim = join(coldDir(dir), 'chunks', files[3])
  const buf = readFileSync(victim)
  for (let k = 64; k < buf.length / 2; k += 4096) buf[k] ^= 0x5a
  writeFileSync(victim, buf)
  const store = await openDatasetDir(dir, { cacheBytes: 1 })
  const s0 = { ...prefetchStats }
  await assert.rejects(lines(store, everything(first, last), last), CorruptChunkError)
  assert.ok(prefetchStats.started > s0.started, 'frames were read ahead')
  await store.close()
})

test('the decompressing thread hands over only stored frames that match their crc32, brotli and zstd', async () => {
  const data = Buffer.from('frame '.repeat(5000))
  const z = brotliCompressSync(data)
  // written by the WebAssembly build: where the native one loads, the thread reads it with that
  const zs = (await zstdBuilds()).wasm.compress(data, 3)
  const file = join(tempDir(), 'frames')
  writeFileSync(file, Buffer.concat([Buffer.from('head'), z, zs]))
  const { port1, port2 } = new MessageChannel()
  const w = new Worker(new URL('../src/store/cold/inflate-worker.mjs', import.meta.url), {
    workerData: { answers: port2 },
    transferList: [port2],
  })
  const answers: { id: number; raw: Uint8Array | null }[] = []
  const got = new Promise<void>((resolve) =>
    port1.on('message', (m: { id: number; raw: Uint8Array | null }) => {
      answers.push(m)
      if (answers.length === 5) resolve()
    }),
  )
  const job = { at: 4, len: z.length, bytes: data.length, codec: CODEC_BROTLI }
  const zjob = { at: 4 + z.length, len: zs.length, bytes: data.length, crc: crc32(zs) }
  w.postMessage({
    path: file,
    jobs: [
      { id: 1, ...job, crc: crc32(z) },
      { id: 2, ...job, crc: (crc32(z) + 1) >>> 0 }, // not the stored bytes' checksum
      { id: 3, ...job, len: z.length + 10 + zs.length, crc: crc32(z) }, // past the end of the file
      { id: 4, ...zjob, codec: CODEC_ZSTD },
      { id: 5, ...zjob, codec: CODEC_BROTLI }, // a zstd frame does not decompress as brotli
    ],
  })
  await got
  port1.close()
  await w.terminate()
  assert.deepEqual(
    answers.map((a) => [a.id, a.raw === null ? null : Buffer.from(a.raw).equals(data)]),
    [
      [1, true],
      [2, null],
      [3, null],
      [4, true],
      [5, null],
    ],
  )
})

test('a frame the reader decompressed itself before the thread got to it is skipped by the thread', async () => {
  const { last, dir, body, want } = await wideScan(25)
  const store = await openDatasetDir(dir, { cacheBytes: 1 })
  const s0 = { ...prefetchStats }
  const f0 = frameStats.frames
  // the thread decompresses nothing until let go: the reader gets to every frame first
  holdPrefetch(true)
  const got: string[] = []
  try {
    for await (const b of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: true })) got.push(b.line)
  } finally {
    holdPrefetch(false)
  }
  assert.deepEqual(got, want)
  for (let waited = 0; prefetchPending() > 0 && waited < 30_000; waited += 5) await sleep(5)
  const started = prefetchStats.started - s0.started
  assert.ok(started > 0, 'frames were sent ahead')
  assert.equal(prefetchStats.taken - s0.taken, 0, 'none was ready in time')
  assert.equal(prefetchStats.ready - s0.ready, 0, 'the thread decompressed none of them')
  assert.equal(prefetchStats.skipped - s0.skipped, started, 'it skipped every one')
  assert.ok(frameStats.frames - f0 > started, 'the reader decompressed them')
  await store.close()
})

// last in this file: the thread stays stopped for the rest of the process
test('stopped for the exit, the thread takes no further frame (it is never ended inside zlib)', async () => {
  const { last, dir, body } = await wideScan(26)
  const store = await openDatasetDir(dir, { cacheBytes: 1 })
  const s0 = { ...prefetchStats }
  // frames sent ahead and waiting in the held thread, their chunk never read
  holdPrefetch(true)
  let stopped = false
  try {
    for await (const _ of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: true })) {
      if (prefetchStats.started > s0.started) break
    }
    const waiting = prefetchPending()
    assert.ok(waiting > 0, 'frames were sent ahead')
    // what the process's exit listener does; the thread is not on a frame (held before taking one)
    stopped = stopPrefetchThread(5000)
    assert.equal(stopped, true)
  } finally {
    holdPrefetch(false)
  }
  await sleep(300)
  assert.equal(prefetchStats.ready - s0.ready, 0, 'the thread decompressed nothing after the stop')
  assert.equal(prefetchStats.skipped - s0.skipped, 0)
  assert.ok(prefetchPending() > 0, 'the frames sent stay unanswered')
  await store.close()
})
