/**
 * HotStore (LMDB) + RealtimeStore + MemoryColdStore: forks, restarts, finalization, crash between
 * cold append and hot delete, snapshot reads, waitFor latency. Real LMDB in temp dirs.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { Block } from '../src/model.ts'
import type { Chunk, HeadInfo } from '../src/store/chunk.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { HotStore } from '../src/store/hot.ts'
import { RealtimeStore } from '../src/store/realtime-store.ts'
import { existsSync } from 'node:fs'
import { DEFAULT_TEMPLATE, readArchiveLines } from '../src/ingest/fake-node/templates.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { normalizeBlock, type ArchiveLine } from '../src/normalize/normalize.ts'
import { GENESIS, heads, mkBlock, mkChain } from './support/realtime/blocks.ts'
import { lazyBlock, packBlock, type PackedBlock } from '../src/store/packed-block.ts'

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-hot-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function pushAll(hot: HotStore, blocks: Block[]): Promise<string[]> {
  const out: string[] = []
  for (const b of blocks) out.push((await hot.push(b)).status)
  return out
}

function hotHeads(hot: HotStore): HeadInfo[] {
  return hot.entries().map((e) => ({ number: e.header.number, hash: e.header.hash }))
}

/** every block header the store serves for [from, to] */
async function served(store: RealtimeStore, from: number, to: number, finalizedOnly: boolean): Promise<HeadInfo[]> {
  const out: HeadInfo[] = []
  for await (const c of store.chunks(from, to, finalizedOnly))
    out.push(...chunkHeads(c).filter((h) => h.number >= from && h.number <= to))
  return out
}

function chunkHeads(c: Chunk): HeadInfo[] {
  const n = c.header('number')
  const h = c.header('hash')
  const out: HeadInfo[] = []
  for (let i = 0; i < c.blockCount; i++) out.push({ number: n[i], hash: h[i] })
  return out
}

/** a block packed in two parts, as two decoding threads hand it over: each list cut at its middle */
function inParts(b: Block): PackedBlock {
  const lists = ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const
  const half = (first: boolean) => {
    const part = { header: b.header } as Block
    for (const k of lists) {
      const l = b[k] as unknown[]
      const cut = Math.ceil(l.length / 2)
      ;(part[k] as unknown[]) = first ? l.slice(0, cut) : l.slice(cut)
    }
    return packBlock(part).packed
  }
  return { header: b.header, packed: [half(true), half(false)] }
}

describe('HotStore', () => {
  test('blocks packed in parts are stored joined, one after another through the same memory, and read back exactly', async () => {
    const path = tempDir()
    // sizes that grow, then shrink, then grow past the room the memory was given
    const chain = mkChain(GENESIS, 5).map((b, i) => {
      const copies = [2, 40, 3, 1, 400][i]
      const txs = Array.from({ length: copies }, (_, k) => ({ ...b.transactions[0], transactionIndex: k }))
      return { ...b, transactions: txs }
    })
    let hot = await HotStore.open({ path })
    for (const b of chain) assert.equal((await hot.push(inParts(b))).status, 'extended')
    // in memory: the parts, decoded on first use
    for (let i = 0; i < 5; i++) assert.deepStrictEqual(hot.entries()[i].block, chain[i])
    await hot.close()
    hot = await HotStore.open({ path })
    for (let i = 0; i < 5; i++) assert.deepStrictEqual(hot.entries()[i].block, chain[i], `block ${i} as stored`)
    await hot.close()
    // and a lazy block of parts reads as the block
    assert.deepStrictEqual(lazyBlock(inParts(chain[4])), chain[4])
  })

  test('blocks round-trip exactly (bigint at u64/i64 limits) across close and reopen', async () => {
    const path = tempDir()
    const chain = mkChain(GENESIS, 5)
    let hot = await HotStore.open({ path })
    assert.deepEqual(await pushAll(hot, chain), ['extended', 'extended', 'extended', 'extended', 'extended'])
    await hot.close()
    hot = await HotStore.open({ path })
    assert.equal(hot.size, 5)
    for (let i = 0; i < 5; i++) assert.deepStrictEqual(hot.entries()[i].block, chain[i])
    const t = hot.entries()[0].block.transactions[0]
    assert.equal(typeof t.fee, 'bigint')
    assert.equal(t.computeUnitsConsumed, 18446744073709551615n)
    assert.equal(hot.entries()[0].block.rewards[0].lamports, -9223372036854775808n)
    await hot.close()
  })

  test('real normalized blocks (whole mainnet block, litesvm sample) round-trip exactly through LMDB', async () => {
    const files = [DEFAULT_TEMPLATE, join(import.meta.dirname, '..', 'data', 'sample', 'litesvm.jsonl.gz')].filter(
      (f) => existsSync(f),
    )
    const blocks: Block[] = []
    for (const f of files) {
      for (const line of readArchiveLines(f).slice(0, 40)) {
        const l = parseJsonExact(line) as ArchiveLine
        blocks.push(normalizeBlock(l).block)
      }
    }
    assert.ok(blocks.length >= 1)
    // each is stored as the first block of a fresh window (they do not link to each other)
    const path = tempDir()
    for (const b of blocks) {
      let hot = await HotStore.open({ path, coldLast: null })
      await hot.rollbackTo(-1)
      assert.equal((await hot.push(b)).status, 'extended')
      await hot.close()
      hot = await HotStore.open({ path, coldLast: null })
      assert.deepStrictEqual(hot.entries()[0].block, b)
      await hot.close()
    }
  })

  test('a cold store behind the persisted anchor is reported; the anchor still guards linkage', async () => {
    const path = tempDir()
    const cold = new MemoryColdStore()
    let hot = await HotStore.open({ path, coldLast: cold.lastBlock() })
    const chain = mkChain(GENESIS, 10)
    await pushAll(hot, chain)
    await hot.finalize(chain[4].header.number, cold)
    await hot.close()
    hot = await HotStore.open({ path, coldLast: null }) // e.g. a memory cold store after a restart
    assert.deepEqual(hot.coldBehind, { anchor: heads([chain[4]])[0], coldLast: null })
    assert.deepEqual(hot.anchor, heads([chain[4]])[0])
    assert.deepEqual(hotHeads(hot), heads(chain.slice(5)))
    await hot.close()
    hot = await HotStore.open({ path, coldLast: cold.lastBlock() })
    assert.equal(hot.coldBehind, null)
    await hot.close()
  })

  test('duplicates and stale blocks change nothing; an unlinked block is refused', async () => {
    const hot = await HotStore.open({ path: tempDir() })
    const chain = mkChain(GENESIS, 4)
    await pushAll(hot, chain)
    assert.equal((await hot.push(chain[2])).status, 'duplicate')
    const stray = mkBlock(1010, 'x-1010', { number: 1009, hash: 'nope' })
    assert.equal((await hot.push(stray)).status, 'unlinked')
    assert.deepEqual(hotHeads(hot), heads(chain))
    await assert.rejects(hot.push(mkBlock(1003, 'bad', { number: 1003, hash: 'a-1003' })), /not below/)
    await hot.close()
  })

  for (const depth of [1, 5, 40]) {
    test(`fork of depth ${depth}: ends on the new branch, no orphan left, chainBefore follows`, async () => {
      const path = tempDir()
      const cold = new MemoryColdStore()
      const hot = await HotStore.open({ path, coldLast: cold.lastBlock() })
      const store = new RealtimeStore({ hot, cold })
      const a = mkChain(GENESIS, 60, 'a', (s) => s % 7 === 0)
      await pushAll(hot, a)
      // finalize the first 10 into the cold store
      await hot.finalize(a[9].header.number, cold)
      const forkParent = a[a.length - 1 - depth]
      const b = mkChain(
        { number: forkParent.header.number, hash: forkParent.header.hash },
        depth + 3,
        'b',
        (s) => s % 5 === 0,
      )
      const statuses = await pushAll(hot, b)
      assert.equal(statuses[0], 'replaced')
      assert.ok(statuses.slice(1).every((s) => s === 'extended'))
      const expected = [...a.slice(0, a.length - depth), ...b]
      const all = await store.chainBefore(Number.MAX_SAFE_INTEGER, 1000)
      assert.deepEqual(all, heads(expected))
      // no orphan in the hot store, in memory or on disk
      for (const o of a.slice(a.length - depth)) {
        assert.ok(!hot.contains(o.header.number, o.header.hash) || b.some((x) => x.header.hash === o.header.hash))
      }
      await hot.close()
      const re = await HotStore.open({ path, coldLast: cold.lastBlock() })
      assert.deepEqual(hotHeads(re), heads(expected.slice(10)))
      const store2 = new RealtimeStore({ hot: re, cold })
      // chainBefore across cold and hot, ending with the highest block below n
      const n = b[1].header.number
      const before = await store2.chainBefore(n, 20)
      const exp = heads(expected.filter((x) => x.header.number < n)).slice(-20)
      assert.deepEqual(before, exp)
      assert.deepEqual(
        await store2.chainBefore(a[12].header.number, 5),
        heads(expected.filter((x) => x.header.number < a[12].header.number)).slice(-5),
      )
      assert.deepEqual(await served(store2, 0, Number.MAX_SAFE_INTEGER, false), heads(expected))
      assert.deepEqual(await served(store2, 0, Number.MAX_SAFE_INTEGER, true), heads(expected.slice(0, 10)))
      await re.close()
    })
  }

  test('restart in the middle of a fork loses nothing', async () => {
    const path = tempDir()
    let hot = await HotStore.open({ path })
    const a = mkChain(GENESIS, 30)
    await pushAll(hot, a)
    const p = a[24]
    const b = mkChain({ number: p.header.number, hash: p.header.hash }, 8, 'b')
    await pushAll(hot, b.slice(0, 2)) // the fork is applied half-way ...
    await hot.close() // ... and the process stops
    hot = await HotStore.open({ path })
    assert.deepEqual(hotHeads(hot), heads([...a.slice(0, 25), ...b.slice(0, 2)]))
    // a late block of the old branch no longer links
    assert.equal((await hot.push(mkBlock(a[29].header.number + 1, 'a-late', heads([a[29]])[0]))).status, 'unlinked')
    await pushAll(hot, b.slice(2))
    await hot.close()
    hot = await HotStore.open({ path })
    assert.deepEqual(hotHeads(hot), heads([...a.slice(0, 25), ...b]))
    await hot.close()
  })

  test('finalization moves blocks in order; a crash between cold append and hot delete neither loses nor duplicates', async () => {
    const path = tempDir()
    const cold = new MemoryColdStore()
    let hot = await HotStore.open({ path, coldLast: cold.lastBlock() })
    const chain = mkChain(GENESIS, 50, 'a', (s) => s % 3 === 0)
    await pushAll(hot, chain.slice(0, 30))
    assert.equal((await hot.finalize(chain[4].header.number, cold)).length, 5)
    assert.deepEqual(hot.anchor, heads([chain[4]])[0])
    // crash right after the cold append
    await assert.rejects(
      hot.finalize(chain[14].header.number, cold, {
        afterColdAppend: () => {
          throw new Error('simulated crash')
        },
      }),
      /simulated crash/,
    )
    assert.equal(cold.lastBlock()!.number, chain[14].header.number)
    await hot.close()
    hot = await HotStore.open({ path, coldLast: cold.lastBlock() })
    assert.equal(hot.droppedOnOpen.length, 10)
    assert.deepEqual(hotHeads(hot), heads(chain.slice(15, 30)))
    assert.deepEqual(hot.anchor, heads([chain[14]])[0])
    // the chain continues on top, and finalization resumes without a duplicate
    assert.deepEqual(new Set(await pushAll(hot, chain.slice(30))), new Set(['extended']))
    await hot.finalize(chain[44].header.number, cold)
    const store = new RealtimeStore({ hot, cold })
    const appended = cold.appends.flat()
    assert.deepEqual(
      appended,
      chain.slice(0, 45).map((b) => b.header.number),
    )
    assert.deepStrictEqual(cold.all(), chain.slice(0, 45))
    assert.deepEqual(await store.chainBefore(Number.MAX_SAFE_INTEGER, 100), heads(chain))
    assert.deepEqual(store.finalizedHead(), heads([chain[44]])[0])
    assert.deepEqual(store.head(), heads([chain[49]])[0])
    // a fork reaching below the finalized block is not representable
    await assert.rejects(hot.rollbackTo(chain[40].header.number), /below the finalized/)
    const below = mkBlock(chain[44].header.number + 1, 'b-x', heads([chain[43]])[0])
    assert.equal((await hot.push(below)).status, 'unlinked')
    await hot.close()
  })
})

describe('RealtimeStore', () => {
  test('a stream keeps its snapshot while a fork and a finalization happen mid-stream', async () => {
    const cold = new MemoryColdStore([], 8)
    const hot = await HotStore.open({ path: tempDir(), coldLast: null })
    const store = new RealtimeStore({ hot, cold, hotChunkSlots: 4 })
    const a = mkChain(GENESIS, 40)
    await pushAll(hot, a)
    await hot.finalize(a[9].header.number, cold)
    const it = store.chunks(0, Number.MAX_SAFE_INTEGER, false)[Symbol.asyncIterator]()
    const seen: HeadInfo[] = []
    const first = await it.next()
    seen.push(...chunkHeads(first.value as Chunk))
    // the chain changes under the open stream
    const b = mkChain(heads([a[29]])[0], 12, 'b')
    await pushAll(hot, b)
    await hot.finalize(a[25].header.number, cold)
    for (let r = await it.next(); !r.done; r = await it.next()) seen.push(...chunkHeads(r.value))
    assert.deepEqual(seen, heads(a))
    // a new stream sees the new chain
    assert.deepEqual(await served(store, 0, Number.MAX_SAFE_INTEGER, false), heads([...a.slice(0, 30), ...b]))
    // `to` is never exceeded, chunks may start below `from`
    const part = await served(store, a[27].header.number, b[3].header.number, false)
    assert.deepEqual(part, heads([...a.slice(27, 30), ...b.slice(0, 4)]))
    for await (const c of store.chunks(a[27].header.number, b[3].header.number, false))
      assert.ok(c.lastBlock <= b[3].header.number)
    await hot.close()
  })

  test('finalized-only reads never show a block that later disappears', async () => {
    const cold = new MemoryColdStore([], 4)
    const hot = await HotStore.open({ path: tempDir() })
    const store = new RealtimeStore({ hot, cold })
    const observed = new Map<number, string>()
    const observe = async () => {
      for (const h of await served(store, 0, Number.MAX_SAFE_INTEGER, true)) {
        const prev = observed.get(h.number)
        if (prev !== undefined) assert.equal(prev, h.hash, `finalized block ${h.number} changed`)
        observed.set(h.number, h.hash)
      }
      const f = store.finalizedHead()
      if (f) {
        const prev = observed.get(f.number)
        if (prev !== undefined) assert.equal(prev, f.hash)
      }
    }
    let parent: HeadInfo = GENESIS
    let branch = 0
    const chainNow = () => store.chainBefore(Number.MAX_SAFE_INTEGER, 10_000)
    for (let round = 0; round < 30; round++) {
      const bs = mkChain(parent, 3, `r${branch}`)
      await pushAll(hot, bs)
      parent = heads([bs[bs.length - 1]])[0]
      await observe()
      if (round % 3 === 2) {
        // fork the newest 4 unfinalized blocks
        const win = hot.entries()
        const p = win[Math.max(0, win.length - 5)].header
        branch++
        const nb = mkChain({ number: p.number, hash: p.hash }, 4, `r${branch}`)
        await pushAll(hot, nb)
        parent = heads([nb[nb.length - 1]])[0]
        await observe()
      }
      if (round % 2 === 1) {
        const win = hot.entries()
        if (win.length > 6) await hot.finalize(win[win.length - 6].header.number, cold)
        await observe()
      }
    }
    const final = new Map((await chainNow()).map((h) => [h.number, h.hash]))
    assert.ok(observed.size > 20)
    for (const [n, h] of observed) assert.equal(final.get(n), h, `finalized block ${n} is not on the final chain`)
    await hot.close()
  })

  test('waitFor wakes on the block (not on its timeout), times out, aborts', async () => {
    const cold = new MemoryColdStore()
    const hot = await HotStore.open({ path: tempDir() })
    const store = new RealtimeStore({ hot, cold })
    const chain = mkChain(GENESIS, 10)
    await pushAll(hot, chain.slice(0, 5))
    assert.equal(await store.waitFor(chain[4].header.number, false, 1000), true)
    const lags: number[] = []
    for (let i = 5; i < 10; i++) {
      const w = store.waitFor(chain[i].header.number, false, 5000)
      let woke = 0
      void w.then(() => (woke = performance.now()))
      await new Promise((r) => setTimeout(r, 30))
      assert.equal(woke, 0)
      await hot.push(chain[i])
      const committed = performance.now()
      assert.equal(await w, true)
      lags.push(woke - committed)
    }
    // woken by the push, long before the 5 s timeout (a generous bound: the machine may be loaded)
    assert.ok(Math.max(...lags) < 2500, `waitFor lag ${lags.join(', ')} ms`)
    // finalized-only waits are woken by finalization
    const wf = store.waitFor(chain[3].header.number, true, 5000)
    await new Promise((r) => setTimeout(r, 20))
    await hot.finalize(chain[3].header.number, cold)
    const t0 = performance.now()
    assert.equal(await wf, true)
    assert.ok(performance.now() - t0 < 2500)
    // timeout
    const t1 = performance.now()
    assert.equal(await store.waitFor(chain[9].header.number + 1, false, 100), false)
    assert.ok(performance.now() - t1 >= 95)
    // abort
    const ac = new AbortController()
    const wa = store.waitFor(chain[9].header.number + 1, false, 60_000, ac.signal)
    setTimeout(() => ac.abort(), 20)
    const t2 = performance.now()
    assert.equal(await wa, false)
    assert.ok(performance.now() - t2 < 30_000, 'ended by the abort, not by the 60 s timeout')
    await hot.close()
  })
})
