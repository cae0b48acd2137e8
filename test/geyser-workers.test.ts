// Streamed Geyser blocks are read (protobuf) and normalized by the block decoding threads, not the
// main thread: the message's memory goes to the thread, the thread's result is what is stored.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { normalizeIntact } from '../src/ingest/block-decode.ts'
import { BlockWorkerPool } from '../src/ingest/block-workers.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { blockToRpc, blockUpdateOf } from '../src/ingest/geyser/block.ts'
import { createGeyserDataset, type GeyserDataset } from '../src/ingest/geyser/dataset.ts'
import { FakeGeyserServer } from '../src/ingest/geyser/fake-server.ts'
import { FakeBlockEncoder } from '../src/ingest/geyser/fake-block.ts'
import { writeArchive } from '../src/ingest/generate.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { RpcBlock } from '../src/rpc/types.ts'
import { decodeBlockUpdate, encodeBlockUpdate } from '../src/ingest/geyser/messages.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { silentLogger, type StoredBlock } from '../src/ingest/realtime/types.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { isPackedBlock, unpackBlock } from '../src/store/packed-block.ts'
import { until } from './support/realtime/served.ts'

test('a block message given to the decoding threads: its memory transferred, the block normalized as in the main thread; an unreadable one rejected', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 30, intervalMs: 0, initialBlocks: 3, seed: 12 })
  const pool = new BlockWorkerPool({ threads: 1 })
  const two = new BlockWorkerPool({ threads: 2, splitMinBytes: 1 })
  try {
    const client = new RpcClient({ url: node.url })
    const b = node.chain().at(-1)!
    const rpc = (await client.getBlock(b.slot, 'confirmed'))!
    const message = encodeBlockUpdate(blockUpdateOf(b.slot, rpc))
    const expected = normalizeIntact(b.slot, blockToRpc(decodeBlockUpdate(message)), (l) => normalizeBlock(l))
    assert.equal(expected.kind, 'normalized')
    const own = message.slice()
    const got = await pool.decodeStreamed(own, b.slot, true)
    // transferred, not copied: the caller's memory went to the thread
    assert.equal(own.byteLength, 0)
    assert.equal(got.kind, 'normalized')
    assert.ok(got.kind === 'normalized' && isPackedBlock(got.block))
    assert.deepStrictEqual(unpackBlock(got.block.packed), expected.kind === 'normalized' ? expected.block : null)
    assert.ok(got.marks?.start !== undefined && got.marks.sent !== undefined && got.marks.received !== undefined)
    // not its own: copied, the caller's bytes left as they were
    const kept = await pool.decodeStreamed(message, b.slot, false)
    assert.equal(message.byteLength > 0, true)
    assert.equal(kept.kind, 'normalized')
    // a transaction index twice: the message cannot be read
    const bad = blockUpdateOf(b.slot, rpc)
    bad.transactions[1].index = 0
    await assert.rejects(pool.decodeStreamed(encodeBlockUpdate(bad), b.slot, false), /transaction index 0 twice/)
    assert.equal(pool.stats.streamed, 2)
    assert.equal(pool.stats.failed, 1)
    // two threads and a large message: half of the transactions in each, one answer with both parts
    const got2 = await two.decodeStreamed(message.slice(), b.slot, true)
    assert.ok(got2.kind === 'normalized' && isPackedBlock(got2.block) && Array.isArray(got2.block.packed))
    assert.equal((got2.block.packed as Uint8Array[]).length, 2)
    assert.deepStrictEqual(unpackBlock(got2.block.packed), expected.kind === 'normalized' ? expected.block : null)
    await assert.rejects(two.decodeStreamed(encodeBlockUpdate(bad), b.slot, false), /transaction index 0 twice/)
    assert.equal(two.stats.streamed, 1)
  } finally {
    await two.close()
    await pool.close()
    await node.stop()
  }
})

test('following the fake Geyser server with a decoding thread: every streamed block decoded in the thread, the node’s blocks stored', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-geyser-workers-'))
  const node = await FakeSolanaNode.start({
    txPerBlock: 40,
    intervalMs: 0,
    initialBlocks: 5,
    skipRate: 0.2,
    finalityLag: 8,
    seed: 17,
  })
  const server = await FakeGeyserServer.start(node, { reorder: true, seed: 3 })
  const streamedSlots: number[] = []
  const stored = new Map<number, StoredBlock>()
  let ds: GeyserDataset | undefined
  try {
    ds = await createGeyserDataset({
      rpcUrl: node.url,
      dataDir: join(dir, 'hot'),
      cold: new MemoryColdStore(),
      startSlot: node.firstSlot,
      noSync: true,
      logger: silentLogger,
      normalizeThreads: 1,
      finalizeIntervalMs: 20,
      retryDelayMs: 20,
      onStored: (e) => stored.set(e.number, e),
      geyser: { url: server.url, onStreamBlock: (slot) => streamedSlots.push(slot) },
    })
    const d = ds
    d.start()
    await until(() => server.subscribers > 0, 30_000, 'a subscriber')
    for (let i = 0; i < 30; i++) {
      if (i === 12) {
        await until(() => d.store.head()?.hash === node.tip.hash, 30_000, 'at the tip')
        node.fork(2)
      }
      // an incomplete message is fetched from the node instead
      if (i === 20) for (let s = node.tip.slot + 1; s <= node.tip.slot + 3; s++) server.incomplete(s, 1)
      node.produce()
      await new Promise((r) => setTimeout(r, 5))
    }
    await until(() => d.store.head()?.hash === node.tip.hash, 30_000, 'caught up')
    const g = d.geyser.stats
    assert.ok(g.streamed >= 20, JSON.stringify(g))
    assert.equal(g.unreadable, 0)
    assert.ok(g.incomplete >= 1, JSON.stringify(g))
    assert.ok(d.ingester.stats.forks >= 1, JSON.stringify(d.ingester.stats))
    // every streamed block went to the thread, which answered for it
    assert.equal(d.decoders!.stats.streamed, g.streamed)
    // ... and the blocks stored from the stream carry the thread's marks (taken, parsed,
    // normalized, packed, posted): a block decoded in the main thread has none
    for (const slot of streamedSlots) {
      const e = stored.get(slot)
      if (!e) continue
      for (const k of ['start', 'parsed', 'normalized', 'packed', 'sent', 'received'] as const)
        assert.equal(typeof e.marks?.[k], 'number', `slot ${slot}: no ${k} mark: ${JSON.stringify(e.marks)}`)
    }
    assert.ok(streamedSlots.filter((s) => stored.has(s)).length >= 20)
    // the node's chain, each block as the node's getBlock answer normalized
    const client = new RpcClient({ url: node.url })
    const hot = d.hot.entries()
    for (const e of hot) {
      const rpc = (await client.getBlock(e.header.number, 'confirmed'))!
      assert.deepStrictEqual(e.block, normalizeBlock({ slot: e.header.number, block: rpc }).block)
    }
    const chain = node.chain().map((b) => b.slot)
    assert.deepEqual(
      hot.map((e) => e.header.number),
      chain.filter((s) => s >= hot[0].header.number),
    )
  } finally {
    await ds?.stop()
    await server.stop()
    await node.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the fake Geyser server’s block messages, template transactions encoded once: the bytes of the getBlock answer encoded whole', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-geyser-fake-block-'))
  const archive = join(dir, 'blocks.jsonl.gz')
  await writeArchive(archive, { blocks: 2, txsPerBlock: 200, seed: 5 })
  for (const templates of [[archive], undefined]) {
    const node = await FakeSolanaNode.start({ templates, intervalMs: 0, initialBlocks: 6, skipRate: 0, seed: 8 })
    try {
      const encoder = new FakeBlockEncoder()
      for (const round of [0, 1])
        for (const b of node.chain()) {
          const text = node.blockText(b)
          const expected = encodeBlockUpdate(blockUpdateOf(b.slot, parseJsonExact(text) as RpcBlock))
          assert.deepEqual(encodeBlockUpdate(encoder.update(b.slot, text)), expected, `slot ${b.slot}, round ${round}`)
        }
    } finally {
      await node.stop()
    }
  }
  rmSync(dir, { recursive: true, force: true })
})
