/**
 * Finalization off the streams' thread: the HotStore moves finalized blocks to the cold store
 * without holding its write lock (new blocks are stored meanwhile; the blocks being moved cannot
 * be replaced), and ColdWriterProcess (src/ingest/cold-writer.ts) appends them to a DiskColdStore
 * owned by a process of its own while this thread reads the same directory. Real LMDB, real chunk
 * files in temp dirs.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { getPriority, tmpdir } from 'node:os'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { COLD_WRITER_NICE, ColdWriterProcess } from '../src/ingest/cold-writer.ts'
import { FrameReader, frameHead } from '../src/ingest/cold-writer-child.ts'
import type { Block } from '../src/model.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { HotStore } from '../src/store/hot.ts'
import { lazyBlock, packBlock, storedBytes, storedPieces, unpackBlock } from '../src/store/packed-block.ts'
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

test('ColdWriterProcess appends in a process of its own, durably; this process reads the same store', async () => {
  const dir = join(tempDir(), 'cold')
  const chain = mkChain(GENESIS, 30, 'a')
  let cold = await ColdWriterProcess.open(dir)
  try {
    // this process only reads
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
    // a block stored already is a retried append (recognized); another one there is refused
    await cold.append([chain[3]])
    const other = { ...chain[3], header: { ...chain[3].header, hash: 'X'.repeat(44) } }
    await assert.rejects(cold.append([other]), /stored with another hash/)
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
  cold = await ColdWriterProcess.open(dir)
  try {
    await cold.append(chain.slice(20, 25))
    // a writer process that dies is replaced on the next append (taking over its lock)
    const pid = cold.pid!
    const gone = new Promise((resolve) =>
      (cold as unknown as { writer: { child: ChildProcess } }).writer.child.once('exit', resolve),
    )
    process.kill(pid, 'SIGKILL')
    // the idle writer does not keep this process alive: a timer does, until its exit is seen
    const alive = setInterval(() => undefined, 1000)
    await gone
    clearInterval(alive)
    assert.match(readFileSync(join(dir, 'LOCK'), 'utf8'), new RegExp(`^${pid} `))
    await cold.append(chain.slice(25))
    assert.notEqual(cold.pid, pid)
    assert.match(readFileSync(join(dir, 'LOCK'), 'utf8'), new RegExp(`^${cold.pid} `))
    assert.equal(cold.starts, 2)
    const last = chain[29].header.number
    assert.deepEqual(await readBack(cold.chunks(0, last), 0, last), expected(chain))
  } finally {
    await cold.close()
  }
})

test('ColdWriterProcess: lazy blocks keep their buffers through an append (one buffer or parts, sent as they are)', async () => {
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
  const cold = await ColdWriterProcess.open(dir)
  try {
    await cold.append([one, parted, chain[2], chain[3]])
    const last = chain[3].header.number
    assert.deepEqual(await readBack(cold.chunks(0, last), 0, last), expected(chain))
    // decoded only now, from the buffers they had
    assert.deepEqual(one, chain[0])
    assert.deepEqual(parted, chain[1])
  } finally {
    await cold.close()
  }
})

test('ColdWriterProcess: every thread of the writer process runs at a lower priority than this process, and only those (Linux: nice per thread)', async (t) => {
  if (process.platform !== 'linux') return t.skip('per-thread nice values are Linux')
  const base = getPriority()
  if (base >= COLD_WRITER_NICE) return t.skip(`this process already runs at nice ${base}`)
  const niceOfThreads = (pid: number | 'self') =>
    readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        return [Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16])]
      } catch {
        return [] // a thread that ended meanwhile
      }
    })
  const chain = mkChain(GENESIS, 3, 'a')
  const cold = await ColdWriterProcess.open(join(tempDir(), 'cold'))
  const plain = await ColdWriterProcess.open(join(tempDir(), 'cold'), {}, { nice: 0 })
  try {
    // after an append: the threads started for the encoding (libuv's pool) are there too
    await cold.append(chain)
    await plain.append(chain)
    assert.ok(COLD_WRITER_NICE > 0)
    const writer = niceOfThreads(cold.pid!)
    // V8's helper threads, the loader's, the pool's: more than the main thread
    assert.ok(writer.length >= 4, `${writer.length} threads`)
    assert.deepEqual(new Set(writer), new Set([COLD_WRITER_NICE]))
    assert.deepEqual(new Set(niceOfThreads(plain.pid!)), new Set([base]))
    assert.deepEqual(new Set(niceOfThreads('self')), new Set([base]))
  } finally {
    await cold.close()
    await plain.close()
  }
})

test('the writer pipe: blocks framed as their stored form, read back whole however the bytes are cut', async () => {
  const blocks = [Uint8Array.of(1, 2, 3), Uint8Array.of(4), new Uint8Array(70_000).fill(9)]
  const bytes = Buffer.concat(blocks.flatMap((b) => [frameHead(b.byteLength), b]))
  for (const cut of [1, 3, 7, 4096, bytes.length]) {
    const r = new FrameReader()
    const got = [r.next(), r.next()]
    for (let a = 0; a < bytes.length; a += cut) r.push(bytes.subarray(a, a + cut))
    got.push(r.next())
    assert.deepEqual(
      (await Promise.all(got)).map((b) => [...b]),
      blocks.map((b) => [...b]),
    )
  }
  assert.throws(() => frameHead(0), /0 bytes/)
  assert.throws(() => new FrameReader().push(new Uint8Array(4)), /a frame of 0 bytes/)

  // a block in parts (as the decoding threads hand it over) goes as the bytes the hot store keeps
  const [a, b] = mkChain(GENESIS, 2, 'a')
  const packed = { header: a.header, packed: [packBlock(a).packed, packBlock({ ...b, header: a.header }).packed] }
  const pieces = storedPieces(lazyBlock(packed))
  assert.equal(pieces.length, 3, 'the head, then the two parts as they are')
  assert.equal(pieces[1], packed.packed[0])
  const joined = Buffer.concat(pieces)
  assert.deepEqual(joined, Buffer.from(storedBytes(packed)))
  const both = unpackBlock(joined)
  assert.equal(both.transactions.length, a.transactions.length + b.transactions.length)
  assert.deepEqual(storedPieces(lazyBlock(packBlock(a))).length, 1)
})

test('ColdWriterProcess: when the server dies (SIGKILL), its writer process exits, and the next writer takes over the lock', async () => {
  const dir = join(tempDir(), 'cold')
  const writerUrl = new URL('../src/ingest/cold-writer.ts', import.meta.url).href
  const script = `
    const { ColdWriterProcess } = await import(${JSON.stringify(writerUrl)})
    const cold = await ColdWriterProcess.open(${JSON.stringify(dir)})
    process.stdout.write(String(cold.pid) + '\\n')
    setInterval(() => undefined, 1000)
  `
  const server = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [line] = (await once(server.stdout!, 'data')) as [Buffer]
  const pid = Number(line.toString().trim())
  assert.ok(pid > 0 && pid !== server.pid)
  assert.match(readFileSync(join(dir, 'LOCK'), 'utf8'), new RegExp(`^${pid} `))
  const gone = once(server, 'exit')
  server.kill('SIGKILL')
  await gone
  // the orphaned writer notices its parent's channel closed and exits (a zombie counts as gone)
  const running = () => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0] !== 'Z'
    } catch {
      return false
    }
  }
  const until = Date.now() + 20_000
  while (running() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  assert.equal(running(), false, `writer process ${pid} still runs`)
  // its lock is stale: a new writer opens the store
  const again = await ColdWriterProcess.open(dir)
  try {
    await again.append(mkChain(GENESIS, 2, 'a'))
    assert.match(readFileSync(join(dir, 'LOCK'), 'utf8'), new RegExp(`^${again.pid} `))
  } finally {
    await again.close()
  }
})

test('ColdWriterProcess: a writer waits for the lock of a process still exiting, and is refused by one that stays', async () => {
  const dir = join(tempDir(), 'cold')
  const coldUrl = new URL('../src/store/cold/disk-store.ts', import.meta.url).href
  // another process holding the store's lock, then closing it after `ms` (or never)
  const holder = (ms: number | null) => {
    const script = `
      const { DiskColdStore } = await import(${JSON.stringify(coldUrl)})
      const s = await DiskColdStore.open(${JSON.stringify(dir)})
      process.stdout.write('ready\\n')
      ${ms === null ? 'setInterval(() => undefined, 1000)' : `setTimeout(() => s.close(), ${ms})`}
    `
    const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    return { p, ready: once(p.stdout!, 'data') }
  }
  const leaving = holder(1500)
  await leaving.ready
  const cold = await ColdWriterProcess.open(dir, {}, { lockWaitMs: 20_000 })
  try {
    await cold.append(mkChain(GENESIS, 2, 'a'))
  } finally {
    await cold.close()
  }
  const staying = holder(null)
  try {
    await staying.ready
    await assert.rejects(ColdWriterProcess.open(dir, {}, { lockWaitMs: 500 }), /being written by process/)
  } finally {
    staying.p.kill('SIGKILL')
  }
})
