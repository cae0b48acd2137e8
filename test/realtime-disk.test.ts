/**
 * The real-time pipeline over the on-disk columnar cold store (DiskColdStore): finalization in
 * order across restarts, a crash between the cold append and the hot delete, and reads through
 * RealtimeStore spanning disk chunks and hot blocks.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { HotStore } from '../src/store/hot.ts'
import { createRealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { silentLogger } from '../src/ingest/realtime/types.ts'
import { RealtimeStore } from '../src/store/realtime-store.ts'
import { GENESIS, heads, mkChain } from './support/realtime/blocks.ts'

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-rtdisk-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(what: string, cond: () => boolean, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

test('crash between a DiskColdStore append and the hot delete: reopen drops the moved blocks, nothing lost or duplicated', async () => {
  const dir = tempDir()
  let cold = await DiskColdStore.open(join(dir, 'cold'))
  let hot = await HotStore.open({ path: join(dir, 'hot'), coldLast: cold.lastBlock() })
  const chain = mkChain(GENESIS, 40, 'a', (s) => s % 4 === 0)
  for (const b of chain.slice(0, 30)) await hot.push(b)
  await hot.finalize(chain[9].header.number, cold)
  await assert.rejects(
    hot.finalize(chain[19].header.number, cold, {
      afterColdAppend: () => {
        throw new Error('crash')
      },
    }),
    /crash/,
  )
  await hot.close()
  await cold.close()
  cold = await DiskColdStore.open(join(dir, 'cold'))
  hot = await HotStore.open({ path: join(dir, 'hot'), coldLast: cold.lastBlock() })
  assert.equal(hot.droppedOnOpen.length, 10)
  for (const b of chain.slice(30)) assert.equal((await hot.push(b)).status, 'extended')
  await hot.finalize(chain[34].header.number, cold)
  const store = new RealtimeStore({ hot, cold })
  assert.deepEqual(await store.chainBefore(Number.MAX_SAFE_INTEGER, 1000), heads(chain))
  const fin: number[] = []
  for await (const c of store.chunks(0, Number.MAX_SAFE_INTEGER, true)) {
    const n = c.header('number')
    for (let i = 0; i < c.blockCount; i++) fin.push(n[i])
  }
  assert.deepEqual(
    fin,
    chain.slice(0, 35).map((b) => b.header.number),
  )
  // the cold store kept the bigints exactly
  for await (const c of cold.chunks(chain[12].header.number, chain[12].header.number)) {
    const t = c.table('transaction')
    assert.ok(
      Array.from(t.column('computeUnitsConsumed') as ArrayLike<bigint>).every((v) => v === 18446744073709551615n),
    )
  }
  await hot.close()
  await cold.close()
})

test('ingest with forks into the disk cold store across a restart', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 3,
    intervalMs: 0,
    initialBlocks: 30,
    skipRate: 0.2,
    finalityLag: 10,
    seed: 31,
  })
  const dir = tempDir()
  const open = async () => {
    const cold = await DiskColdStore.open(join(dir, 'cold'))
    const ds = await createRealtimeDataset({
      rpcUrl: node.url,
      dataDir: dir,
      cold,
      startSlot: node.firstSlot,
      pollIntervalMs: 5,
      finalizeIntervalMs: 20,
      orphanStrikes: 3,
      tipCheckIntervalMs: 10,
      logger: silentLogger,
    })
    return { cold, ds }
  }
  let { cold, ds } = await open()
  try {
    ds.start()
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 25; i++) {
        node.produce()
        if (i % 8 === 3) {
          await until('at tip', () => ds.store.head()?.hash === node.tip.hash)
          node.fork(1 + (i % 4), 2)
        }
        await sleep(5)
      }
      if (round === 0) {
        await ds.stop()
        await cold.close()
        ;({ cold, ds } = await open())
        ds.start()
      }
    }
    node.setFinalityLag(2)
    node.produce()
    await until(
      'catch-up',
      () => ds.store.head()?.hash === node.tip.hash && ds.store.finalizedHead()?.number === node.finalizedSlot,
    )
    const chain = node.chain()
    const stored = await ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 100_000)
    assert.deepEqual(
      stored.map((h) => [h.number, h.hash]),
      chain.map((b) => [b.slot, b.hash]),
    )
    // the finalized blocks are on disk, with the node's content
    const c = new RpcClient({ url: node.url })
    const probe = chain.filter((b) => b.slot <= node.finalizedSlot).slice(-3)
    for (const b of probe) {
      const expected = normalizeBlock({ slot: b.slot, block: (await c.getBlock(b.slot, 'confirmed'))! }).block
      let found = false
      for await (const ch of ds.store.chunks(b.slot, b.slot, true)) {
        const nums = ch.header('number')
        for (let i = 0; i < ch.blockCount; i++) {
          if (nums[i] !== b.slot) continue
          found = true
          assert.equal(ch.header('hash')[i], expected.header.hash)
          const t = ch.table('transaction')
          const sigs = Array.from(t.column('signatures') as ArrayLike<string[]>).slice(
            t.blockOffsets[i],
            t.blockOffsets[i + 1],
          )
          assert.deepEqual(
            sigs,
            expected.transactions.map((x) => x.signatures),
          )
          const fees = Array.from(t.column('fee') as ArrayLike<bigint>).slice(t.blockOffsets[i], t.blockOffsets[i + 1])
          assert.deepEqual(
            fees,
            expected.transactions.map((x) => x.fee),
          )
        }
      }
      assert.ok(found, `block ${b.slot} not in the cold store`)
    }
  } finally {
    await ds.stop()
    await cold.close()
    await node.stop()
  }
})
