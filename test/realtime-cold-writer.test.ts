/**
 * Finalization off the streams' thread: the HotStore moves finalized blocks to the cold store
 * without holding its write lock (new blocks are stored meanwhile; the blocks being moved cannot
 * be replaced), and ColdWriterThread (src/ingest/cold-writer.ts) appends them to a DiskColdStore
 * owned by a worker thread while this thread reads the same directory. Real LMDB, real chunk
 * files in temp dirs.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { Worker } from 'node:worker_threads'
import { COLD_WRITER_NICE, ColdWriterThread } from '../src/ingest/cold-writer.ts'
import type { Block } from '../src/model.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { DiskColdStore } from '../src/store/cold.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { HotStore } from '../src/store/hot.ts'
import { lazyBlock, packBlock } from '../src/store/packed-block.ts'
import { RealtimeStore } from '../src/store/realtime-store.ts'
import { GENESIS, heads, mkChain } from './support/realtime/blocks.ts'

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-coldw-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** the blocks of chunks, records included, clipped to [from, to] */
async function readBack(chunks: AsyncIterable<Chunk>, from: number, to: number): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const c of chunks) {
    const n = c.header('number')
    const hash = c.header('hash')
    const tx = c.table('transaction')
    for (let i = 0; i < c.blockCount; i++) {
      if (n[i] < from || n[i] > to) continue
      const sigs = tx.column('signatures')
      const rows: unknown[] = []
      for (let r = tx.blockOffsets[i]; r < tx.blockOffsets[i + 1]; r++) rows.push(sigs[r])
      out.push({ number: n[i], hash: hash[i], signatures: rows })
    }
  }
  return out
}

const expected = (blocks: Block[]) =>
  blocks.map((b) => ({
    number: b.header.number,
    hash: b.header.hash,
    signatures: b.transactions.map((t) => t.signatures),
  }))

test(
  'a push is stored while finalize waits for the cold store; the blocks being moved cannot be replaced',
  { timeout: 60_000 },
  async () => {
    const cold = new MemoryColdStore()
    const hot = await HotStore.open({ path: tempDir(), coldLast: null, noSync: true })
    try {
      const a = mkChain(GENESIS, 12, 'a')
      for (const b of a.slice(0, 10)) assert.equal((await hot.push(b)).status, 'extended')
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let appended!: () => void
      const inAppend = new Promise<void>((r) => (appended = r))
      const moving = hot.finalize(a[4].header.number, cold, {
        afterColdAppend: async () => {
          appended()
          await held
        },
      })
      await inAppend
      // the cold store has blocks ..a[4]; the hot store still lists them until finalize ends
      assert.equal((await hot.push(a[10])).status, 'extended')
      // a fork on a[2] would replace a[3], which is being moved: refused like a fork below the anchor
      const fork = mkChain(heads([a[2]])[0], 1, 'b')
      assert.equal((await hot.push(fork[0])).status, 'unlinked')
      await assert.rejects(hot.rollbackTo(a[3].header.number), /being finalized/)
      // a fork above the moved blocks is applied
      const fork2 = mkChain(heads([a[8]])[0], 1, 'c')
      assert.equal((await hot.push(fork2[0])).status, 'replaced')
      release()
      assert.equal((await moving).length, 5)
      assert.deepEqual(hot.anchor, heads([a[4]])[0])
      assert.deepEqual(
        hot.entries().map((e) => e.header.number),
        [...a.slice(5, 9), fork2[0]].map((b) => b.header.number),
      )
      const store = new RealtimeStore({ hot, cold })
      assert.deepEqual(store.head(), heads([fork2[0]])[0])
    } finally {
      await hot.close()
    }
  },
)

test('ColdWriterThread appends in its own thread, durably; this thread reads the same store', async () => {
  const dir = join(tempDir(), 'cold')
  const chain = mkChain(GENESIS, 30, 'a')
  let cold = await ColdWriterThread.open(dir)
  try {
    // this thread only reads
    await assert.rejects(cold.reader.append(chain.slice(0, 1)), /read-only/)
    // lazy blocks (from the decoding workers, still packed) and plain ones
    await cold.append(chain.slice(0, 5).map((b) => lazyBlock(packBlock(b))))
    await cold.append(chain.slice(5, 12))
    for (let i = 12; i < 20; i++) await cold.append([chain[i]]) // small appends, merged by the store
    assert.deepEqual(cold.lastBlock(), heads([chain[19]])[0])
    assert.equal(cold.firstBlock(), chain[0].header.number)
    const last = chain[19].header.number
    assert.deepEqual(await readBack(cold.chunks(0, last), 0, last), expected(chain.slice(0, 20)))
    assert.deepEqual(await cold.chainBefore(chain[10].header.number, 3), heads(chain.slice(7, 10)))
    // a block that does not continue the store is refused by the writer
    await assert.rejects(cold.append([chain[3]]), /not above|ascend/)
  } finally {
    await cold.close()
  }
  // closed: the lock is released and every append was durable
  const again = await DiskColdStore.open(dir)
  try {
    assert.deepEqual(again.lastBlock(), heads([chain[19]])[0])
  } finally {
    await again.close()
  }
  cold = await ColdWriterThread.open(dir)
  try {
    await cold.append(chain.slice(20, 25))
    // a writer thread that dies is replaced on the next append (taking over its lock)
    await (cold as unknown as { worker: Worker }).worker.terminate()
    await cold.append(chain.slice(25))
    assert.equal(cold.starts, 2)
    const last = chain[29].header.number
    assert.deepEqual(await readBack(cold.chunks(0, last), 0, last), expected(chain))
  } finally {
    await cold.close()
  }
})

test('ColdWriterThread: lazy blocks keep their buffers through an append (a shared buffer is copied, parts are joined, before the transfer)', async () => {
  const dir = join(tempDir(), 'cold')
  const chain = mkChain(GENESIS, 4, 'a')
  // the block's header with every record list empty
  const empty = (b: Block): Block =>
    Object.fromEntries(Object.entries(b).map(([k, v]) => [k, Array.isArray(v) ? [] : v])) as unknown as Block
  const one = lazyBlock(packBlock(chain[0]))
  // as the decoding threads hand a block over: in parts (the second one empty here)
  const parted = lazyBlock({
    header: chain[1].header,
    packed: [packBlock(chain[1]).packed, packBlock(empty(chain[1])).packed],
  })
  const cold = await ColdWriterThread.open(dir)
  try {
    await cold.append([one, parted, chain[2], chain[3]])
    const last = chain[3].header.number
    assert.deepEqual(await readBack(cold.chunks(0, last), 0, last), expected(chain))
    // decoded only now, from the buffers they had: none of them was transferred away
    assert.deepEqual(one, chain[0])
    assert.deepEqual(parted, chain[1])
  } finally {
    await cold.close()
  }
})

test('ColdWriterThread: the writer thread runs at a lower priority than the process (Linux: nice per thread)', async (t) => {
  if (process.platform !== 'linux') return t.skip('per-thread nice values are Linux')
  const niceOfThreads = () =>
    readdirSync('/proc/self/task').flatMap((tid) => {
      try {
        return [Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16])]
      } catch {
        return [] // a thread that ended meanwhile
      }
    })
  const base = niceOfThreads().filter((n) => n === COLD_WRITER_NICE).length
  const cold = await ColdWriterThread.open(join(tempDir(), 'cold'))
  const plain = await ColdWriterThread.open(join(tempDir(), 'cold'), {}, { nice: 0 })
  try {
    assert.ok(COLD_WRITER_NICE > 0)
    // the default writer's thread, and only it (the other writer's stays at the process's)
    assert.equal(niceOfThreads().filter((n) => n === COLD_WRITER_NICE).length, base + 1)
    assert.equal(Math.min(...niceOfThreads()), 0)
  } finally {
    await cold.close()
    await plain.close()
  }
})
