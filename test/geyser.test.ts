/**
 * Geyser (Yellowstone gRPC) ingest (src/ingest/geyser): the recorded mainnet updates through the
 * decoder; real ConfirmedBlocks streamed over gRPC give the records of the same blocks as getBlock
 * JSON; the fake Geyser server's chain (forks, dead slots, disconnects, replays that skip blocks,
 * reordered transactions, incomplete and oversized block messages) is stored exactly as the RPC
 * path stores it from the same fake node; a gap neither source can give stops ingestion visibly.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { type FakeBlockInfo } from '../src/ingest/fake-node/types.ts'
import { blockToRpc, blockUpdateOf } from '../src/ingest/geyser/block.ts'
import { GEYSER_SERVICE, GeyserFeed } from '../src/ingest/geyser/client.ts'
import { createGeyserDataset, type GeyserDataset } from '../src/ingest/geyser/dataset.ts'
import { FakeGeyserServer } from '../src/ingest/geyser/fake-server.ts'
import {
  decodeSubscribeUpdate,
  decodeTransactionInfo,
  encodeSubscribeUpdate,
  type BlockUpdate,
  type SubscribeRequest,
  type SubscribeUpdate,
  type TransactionInfo,
} from '../src/ingest/geyser/messages.ts'
import { type RpcSource } from '../src/ingest/rpc/source.ts'
import { createRealtimeDataset, type RealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { type RealtimeLogger } from '../src/ingest/realtime/types.ts'
import {
  decodeConfirmedBlock,
  ProtoReader,
  ProtoWriter,
  STORAGE_FIELDS as F,
} from '../src/ingest/solana-storage/index.ts'
import { formatArchiveLine } from '../src/ingest/archive.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { RpcBlock } from '../src/rpc/types.ts'
import type { HeadInfo } from '../src/store/chunk.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { Metrics } from '../src/server/metrics.ts'
import { checkServeOptions, type ServeOptions } from '../src/cli/commands/serve.ts'
import { serveOptions } from './support/serve-options.ts'
import { mulberry32 } from '../src/util/prng.ts'

const GEYSER = join(dirname(fileURLToPath(import.meta.url)), '..', 'data', 'geyser')
const bin = (name: string) => new Uint8Array(readFileSync(join(GEYSER, name)))

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-geyser-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
async function until(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

function logger(lines: string[]): RealtimeLogger {
  const put = (l: string) => (process.env.RT_DEBUG ? console.log(Date.now(), l) : lines.push(l))
  return { info: (m) => put(`info ${m}`), warn: (m) => put(`warn ${m}`), error: (m) => put(`error ${m}`) }
}

/** the records of a block, votes included, as every ingest path stores them */
const records = (slot: number, block: RpcBlock) => normalizeBlock({ slot, block }, { includeVotes: true }).block

/** `[u32 BE length][message]` records */
function* framed(buf: Uint8Array): Generator<Uint8Array> {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  for (let at = 0; at < buf.length;) {
    const n = view.getUint32(at)
    yield buf.subarray(at + 4, at + 4 + n)
    at += 4 + n
  }
}

test('40,186 recorded mainnet SubscribeUpdates decode; slot statuses, block metas and entries re-encode the same', () => {
  const kinds = new Map<string, number>()
  const statuses = new Map<string, number>()
  const metas: SubscribeUpdate[] = []
  let n = 0
  for (const msg of framed(bin('subscribe-updates-slots.bin'))) {
    const u = decodeSubscribeUpdate(msg)
    n++
    const up = u.update!
    kinds.set(up.kind, (kinds.get(up.kind) ?? 0) + 1)
    if (up.kind === 'slot') statuses.set(up.slot.status, (statuses.get(up.slot.status) ?? 0) + 1)
    if (up.kind === 'block-meta') metas.push(u)
    assert.deepEqual(u.filters, up.kind === 'ping' ? [] : ['coordinator'])
    assert.ok(u.createdAt! > Date.UTC(2026, 1, 5) && u.createdAt! < Date.UTC(2026, 1, 6))
    // what this module encodes, it reads back the same (created_at to the ms)
    const again = decodeSubscribeUpdate(
      encodeSubscribeUpdate({ filters: u.filters, update: up, createdAt: u.createdAt }),
    )
    if (up.kind === 'entry') assert.deepEqual(again, u)
    else if (up.kind !== 'slot' || up.slot.status === 'processed') {
      // a slot update's bank id is not kept; block metas' rewards are bytes (compared as such)
      assert.deepEqual(again.update, up)
    }
  }
  assert.equal(n, 40_186)
  assert.deepEqual(Object.fromEntries(kinds), { entry: 39_840, slot: 295, 'block-meta': 50, ping: 1 })
  assert.deepEqual(Object.fromEntries(statuses), {
    'first-shred-received': 49,
    'created-bank': 49,
    completed: 50,
    processed: 49,
    confirmed: 49,
    finalized: 49,
  })
  // block metas link into one chain by parent slot and hash, heights one apart
  const ms = metas.map(
    (u) => (u.update as { kind: 'block-meta'; meta: import('../src/ingest/geyser/messages.ts').BlockHeader }).meta,
  )
  ms.sort((a, b) => a.slot - b.slot)
  assert.equal(ms[0].slot, 398_202_772)
  for (let i = 1; i < ms.length; i++) {
    if (ms[i].parentSlot !== ms[i - 1].slot) continue
    assert.equal(ms[i].parentBlockhash, ms[i - 1].blockhash)
    assert.equal(ms[i].blockHeight, ms[i - 1].blockHeight! + 1n)
  }
  assert.ok(ms.every((m) => m.executedTransactionCount > 0 && m.blockTime! > 1_770_000_000n))
})

/** the length-delimited fields of a message: [field number, bytes] (others skipped) */
function lenFields(bytes: Uint8Array): [number, Uint8Array][] {
  const r = new ProtoReader(bytes)
  const out: [number, Uint8Array][] = []
  while (r.pos < r.end) {
    const t = r.tag()
    if ((t & 7) === 2) out.push([t >>> 3, r.bytes()])
    else r.skip(t & 7)
  }
  return out
}

/** a real ConfirmedBlock's own transaction, metadata and reward bytes as a SubscribeUpdateBlock */
function wrapConfirmedBlock(slot: number, bytes: Uint8Array, shuffle: () => number): BlockUpdate {
  const json = decodeConfirmedBlock(bytes)
  const txs: TransactionInfo[] = []
  const rewards = new ProtoWriter()
  for (const [no, v] of lenFields(bytes)) {
    if (no === F.block.transactions) {
      const t: TransactionInfo = {
        signature: new Uint8Array(64),
        isVote: false,
        transaction: null,
        meta: null,
        index: txs.length,
      }
      for (const [n, w] of lenFields(v)) {
        if (n === F.confirmedTransaction.transaction) t.transaction = w
        else if (n === F.confirmedTransaction.meta) t.meta = w
      }
      txs.push(t)
    } else if (no === F.block.rewards) rewards.bytesPresent(1, v)
  }
  // sent out of order: the index gives the block's order
  for (let i = txs.length - 1; i > 0; i--) {
    const j = Math.floor(shuffle() * (i + 1))
    ;[txs[i], txs[j]] = [txs[j], txs[i]]
  }
  return {
    ...blockUpdateOf(slot, { ...json, transactions: [] }),
    rewards: rewards.finish(),
    executedTransactionCount: txs.length,
    transactions: txs,
  }
}

/** a gRPC server that answers every Subscribe with `updates`, then keeps the stream open */
async function scriptedServer(updates: Uint8Array[], seen: SubscribeRequest[] = []) {
  const server = new Server()
  server.addService(GEYSER_SERVICE, {
    Subscribe: (call: ServerDuplexStream<SubscribeRequest, Uint8Array>) => {
      call.on('data', (r: SubscribeRequest) => {
        seen.push(r)
        if (r.ping) call.write(encodeSubscribeUpdate({ update: { kind: 'pong', id: r.ping.id } }))
        else for (const u of updates) call.write(u)
      })
      call.on('error', () => {})
    },
  })
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  )
  return { url: `http://127.0.0.1:${port}`, stop: () => server.forceShutdown() }
}

test('real ConfirmedBlocks 18144001 and 43200000 streamed over gRPC, out of order: the records of getBlock JSON', async () => {
  const rnd = mulberry32(11)
  const blocks = [
    { slot: 18_144_001, bytes: bin('18144001.bin') },
    { slot: 43_200_000, bytes: bin('43200000.bin') },
  ]
  const sent = blocks.map((b) => wrapConfirmedBlock(b.slot, b.bytes, rnd))
  assert.ok(
    sent.every((m) => m.transactions.some((t, i) => t.index !== i)),
    'sent out of order',
  )
  const seen: SubscribeRequest[] = []
  const srv = await scriptedServer(
    sent.map((block) => encodeSubscribeUpdate({ filters: ['solportal'], update: { kind: 'block', block } })),
    seen,
  )
  const got: BlockUpdate[] = []
  const feed = new GeyserFeed({
    url: srv.url,
    token: 'secret',
    pingIntervalMs: 50,
    onUpdate: (u) => {
      if (u.update?.kind === 'block') got.push(u.update.block)
    },
  })
  try {
    feed.start()
    await until('both blocks and a pong', () => got.length === 2 && feed.stats.pongs > 0)
  } finally {
    feed.close()
    srv.stop()
  }
  // the subscription asked for: blocks with transactions, slot statuses, confirmed
  assert.equal(seen[0].commitment, 'confirmed')
  assert.deepEqual(seen[0].blocks, {
    solportal: { accountInclude: [], includeTransactions: true, includeAccounts: false, includeEntries: false },
  })
  assert.ok(seen[0].slots?.solportal)
  assert.ok(seen.some((r) => r.ping))
  for (let i = 0; i < blocks.length; i++) {
    const { slot, bytes } = blocks[i]
    // the getBlock JSON of the block, as the RPC client reads it (exact u64 values)
    const line = formatArchiveLine({ slot, block: decodeConfirmedBlock(bytes) } as Parameters<
      typeof formatArchiveLine
    >[0])
    const viaJson = (parseJsonExact(line) as { block: RpcBlock }).block
    const viaGeyser = blockToRpc(got[i])
    assert.equal(viaGeyser.transactions!.length, sent[i].transactions.length)
    assert.deepStrictEqual(records(slot, viaGeyser), records(slot, viaJson))
  }
})

test('a v0 transaction with an address lookup from a real SubscribeUpdateTransaction', () => {
  const msg = bin('subscribe-update-transaction-v0.bin')
  let info: TransactionInfo | null = null
  let slot = 0
  const r = new ProtoReader(msg)
  while (r.pos < r.end) {
    const t = r.tag()
    if (t >>> 3 === 1) info = decodeTransactionInfo(r.bytes())
    else if (t >>> 3 === 2) slot = Number(r.u64())
    else r.skip(t & 7)
  }
  assert.equal(slot, 420_181_274)
  assert.equal(info!.index, 159)
  const block = blockToRpc({
    slot,
    blockhash: '11111111111111111111111111111111',
    parentSlot: slot - 1,
    parentBlockhash: '11111111111111111111111111111111',
    blockTime: null,
    blockHeight: null,
    rewards: null,
    executedTransactionCount: 1,
    entriesCount: 0,
    transactions: [{ ...info!, index: 0 }],
  })
  const tx = block.transactions![0]
  assert.equal(tx.version, 0)
  assert.equal(tx.transaction.message.addressTableLookups!.length, 1)
  assert.equal(tx.meta!.loadedAddresses!.writable.length, 5)
  const recs = records(slot, block)
  assert.equal(recs.transactions.length, 1)
  assert.ok(recs.instructions.length > 1)
})

// --- the fake chain --------------------------------------------------------------------------------

const pairs = (xs: readonly (HeadInfo | FakeBlockInfo)[]) =>
  xs.map((x) => ('slot' in x ? [x.slot, x.hash] : [x.number, x.hash]))

const chainOf = (ds: RealtimeDataset) => ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 1_000_000)

const ingestOpts = (node: FakeSolanaNode, lines: string[]) => ({
  rpcUrl: node.url,
  dataDir: tempDir(),
  startSlot: node.firstSlot,
  concurrency: 3,
  pollIntervalMs: 5,
  finalizeIntervalMs: 20,
  orphanStrikes: 3,
  tipCheckIntervalMs: 10,
  retryDelayMs: 20,
  rpc: { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 100, timeoutMs: 5000 },
  logger: logger(lines),
})

const caughtUp = (ds: RealtimeDataset, node: FakeSolanaNode) =>
  ds.store.head()?.hash === node.tip.hash && ds.store.finalizedHead()?.number === node.finalizedSlot

describe('the fake chain through the fake Geyser server', () => {
  test('forks, dead slots, 20 disconnects, skipping replays, incomplete and oversized blocks: the chain the RPC path stores, every slot once', async () => {
    const node = await FakeSolanaNode.start({
      txPerBlock: 4,
      intervalMs: 0,
      initialBlocks: 5,
      skipRate: 0.2,
      finalityLag: 10,
      seed: 21,
    })
    const server = await FakeGeyserServer.start(node, { reorder: true, pingIntervalMs: 100, seed: 5 })
    const lines: string[] = []
    const rpcCold = new MemoryColdStore([], 16)
    const geyserCold = new MemoryColdStore([], 16)
    const viaRpc = await createRealtimeDataset({ ...ingestOpts(node, lines), cold: rpcCold })
    const viaGeyser: GeyserDataset = await createGeyserDataset({
      ...ingestOpts(node, lines),
      cold: geyserCold,
      geyser: { url: server.url, minBackoffMs: 5, maxBackoffMs: 50, gapTimeoutMs: 10_000, pingIntervalMs: 100 },
    })
    const rnd = mulberry32(99)
    const atTip = (ds: RealtimeDataset) => ds.store.head()?.hash === node.tip.hash
    let oversized = 0
    try {
      viaRpc.start()
      viaGeyser.start()
      let disconnects = 0
      for (let i = 0; i < 200; i++) {
        const tip = node.tip.slot
        if (i % 17 === 3) for (let s = tip + 1; s <= tip + 3; s++) server.incomplete(s, 1 + (i % 3))
        if (i === 50 || i === 150) {
          for (let s = tip + 1; s <= tip + 3; s++) server.oversize(s, 5 * 1024 * 1024)
          oversized++
        }
        if (i % 25 === 10) {
          // a fork the stores already hold: replaced blocks, and slots no block takes again (dead)
          // both paths hold the blocks the fork replaces (the chain goes on while they catch up: a
          // stream whose replay sent nothing learns of the chain from the next block)
          for (let k = 0; !(atTip(viaRpc) && atTip(viaGeyser)); k++) {
            if (k % 200 === 199) node.produce()
            await sleep(5)
          }
          node.fork(3, i % 50 === 10 ? 1 : 3)
        }
        node.produce()
        if (disconnects < 20 && rnd() < 0.12) {
          disconnects++
          // every other reconnect's replay leaves blocks out (or replays nothing)
          const mode = disconnects % 4
          server.setFaults({ replaySkip: mode === 1 ? 0.5 : 0, replayNothing: mode === 3 })
          await sleep(rnd() * 20)
          await until('a subscriber', () => server.subscribers > 0)
          server.disconnect()
        }
        await sleep(rnd() * 6)
      }
      assert.equal(disconnects, 20)
      node.setFinalityLag(2)
      // the chain goes on (a stream that replayed nothing learns of the chain from the next block)
      for (let k = 0; !(caughtUp(viaRpc, node) && caughtUp(viaGeyser, node)); k++) {
        assert.ok(k < 400, `not caught up: ${JSON.stringify([viaGeyser.store.head(), viaRpc.store.head(), node.tip])}`)
        if (k % 10 === 0) node.produce()
        await sleep(25)
      }
      const chain = node.chain()
      assert.deepEqual(pairs(await chainOf(viaGeyser)), pairs(chain))
      assert.deepEqual(pairs(await chainOf(viaRpc)), pairs(chain))
      // every finalized slot appended once, in order, by both
      const finalized = chain.filter((b) => b.slot <= node.finalizedSlot).map((b) => b.slot)
      assert.deepEqual(geyserCold.appends.flat(), finalized)
      assert.deepEqual(rpcCold.appends.flat(), finalized)
      // identical stored blocks
      assert.deepStrictEqual(geyserCold.all(), rpcCold.all())
      // (the hot windows above the finalized block: a move to the cold store may still be ending)
      const unfinalized = (ds: RealtimeDataset) =>
        ds.hot
          .entries()
          .filter((e) => e.header.number > node.finalizedSlot)
          .map((e) => e.block)
      assert.deepStrictEqual(unfinalized(viaGeyser), unfinalized(viaRpc))
      const g = viaGeyser.geyser.stats
      const f = viaGeyser.geyser.feed.stats
      assert.ok(f.connects >= 21, JSON.stringify(f))
      assert.ok(f.pongs > 0 && f.serverPings > 0, JSON.stringify(f))
      assert.ok(g.incomplete >= 5, JSON.stringify(g))
      assert.ok(g.dead >= 1, JSON.stringify(g))
      assert.ok(g.filled > 0 && g.streamed > 0, JSON.stringify(g))
      assert.ok(server.stats.replaySkipped > 0 && server.stats.incomplete >= 5, JSON.stringify(server.stats))
      assert.ok(oversized === 2 && f.bytes > 10 * 1024 * 1024, JSON.stringify(f))
      assert.ok(viaGeyser.ingester.stats.forks >= 4, JSON.stringify(viaGeyser.ingester.stats))
      assert.equal(viaGeyser.geyser.gap, null)
      // the stream saves the node's getBlock calls
      const geyserCalls = viaGeyser.geyser.rpc.client.stats.calls
      const rpcCalls = (viaRpc.ingester.source as RpcSource).client.stats.calls
      assert.ok(geyserCalls < rpcCalls / 2, `${geyserCalls} RPC calls with the stream, ${rpcCalls} without`)
    } finally {
      await viaGeyser.stop()
      await viaRpc.stop()
      await server.stop()
      await node.stop()
    }
  })
})

test('a gap neither the stream nor the node can give: ingestion waits at it, the metrics show it, then it is filled', async () => {
  // the same chain twice: the stream's node is 30 blocks ahead of the RPC node
  const opts = { txPerBlock: 2, intervalMs: 0, initialBlocks: 10, skipRate: 0.2, finalityLag: 50, seed: 33 }
  const ahead = await FakeSolanaNode.start(opts)
  const behind = await FakeSolanaNode.start(opts)
  for (let i = 0; i < 30; i++) ahead.produce()
  const server = await FakeGeyserServer.start(ahead, { replayNothing: true })
  const lines: string[] = []
  const ds = await createGeyserDataset({
    ...ingestOpts(behind, lines),
    cold: new MemoryColdStore(),
    geyser: { url: server.url, gapTimeoutMs: 200 },
  })
  const metrics = new Metrics({ processMetrics: false })
  metrics.addIngester({
    dataset: 'x',
    store: ds.store,
    nodeHead: ds.geyser.nodeHead,
    stats: ds.ingester.stats,
    gap: () => ds.geyser.gap,
  })
  const gapMetric = async () => Number(/solportal_ingest_gap_slots\{dataset="x"\} (\d+)/.exec(await metrics.text())![1])
  try {
    ds.start()
    await until('a subscriber', () => server.subscribers > 0)
    ahead.produce()
    await until('the gap', () => ds.geyser.gap !== null)
    await sleep(600)
    // nothing stored above the gap: the first streamed block is not stored without the slots below it
    assert.equal(ds.store.head(), null)
    const gap = ds.geyser.gap!
    assert.equal(gap.from, behind.firstSlot)
    assert.equal(gap.to, ahead.tip.slot - 1)
    assert.equal(await gapMetric(), gap.to - gap.from + 1)
    assert.ok(ds.ingester.stats.failures >= 1)
    assert.ok(lines.some((l) => l.includes('stopped at the gap')))
    // the node catches up: the gap is filled from it, the stream goes on
    for (let i = 0; i < 31; i++) behind.produce()
    assert.equal(behind.tip.hash, ahead.tip.hash)
    ahead.produce()
    behind.produce()
    await until('caught up', () => ds.store.head()?.hash === ahead.tip.hash)
    assert.deepEqual(pairs(await chainOf(ds)), pairs(ahead.chain()))
    assert.equal(ds.geyser.gap, null)
    assert.equal(await gapMetric(), 0)
  } finally {
    await ds.stop()
    await server.stop()
    await ahead.stop()
    await behind.stop()
  }
})

test('serve: --geyser goes with --rpc (a URL) or --demo (none); processed commitment only with it', () => {
  const check = (o: Partial<ServeOptions>) => checkServeOptions(serveOptions(o))
  const rpc = { rpc: 'http://127.0.0.1:8899', dataDir: 'data-dir' }
  assert.equal(check({ ...rpc, geyser: 'https://geyser.example:443', commitment: 'processed' }).commitment, 'processed')
  assert.throws(() => check({ geyser: 'http://127.0.0.1:10000' }), /--geyser applies only to --rpc/)
  assert.throws(() => check({ ...rpc, geyser: true }), /--geyser needs the URL/)
  assert.throws(() => check({ ...rpc, geyser: 'localhost:10000' }), /--geyser must be an http/)
  assert.throws(() => check({ demo: true, geyser: 'http://127.0.0.1:1' }), /takes no URL/)
  assert.doesNotThrow(() => check({ demo: true, geyser: true }))
  assert.throws(() => check({ ...rpc, commitment: 'processed' }), /--commitment must be one of confirmed, finalized/)
})

test('a server that refuses an old from_slot: the next subscription asks for no replay, the node fills the slots', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 2,
    intervalMs: 0,
    initialBlocks: 30,
    skipRate: 0.2,
    finalityLag: 50,
    seed: 8,
  })
  const server = await FakeGeyserServer.start(node, { ringSlots: 5, refuseOldReplay: true })
  const ds = await createGeyserDataset({
    ...ingestOpts(node, []),
    cold: new MemoryColdStore(),
    geyser: { url: server.url, minBackoffMs: 5, maxBackoffMs: 20 },
  })
  try {
    ds.start()
    await until('a subscriber', () => server.subscribers > 0)
    for (let i = 0; i < 3; i++) node.produce()
    await until('caught up', () => ds.store.head()?.hash === node.tip.hash)
    assert.deepEqual(pairs(await chainOf(ds)), pairs(node.chain()))
    assert.ok(server.stats.refused >= 1, JSON.stringify(server.stats))
    assert.ok(ds.geyser.stats.filled >= 25 && ds.geyser.stats.streamed >= 1, JSON.stringify(ds.geyser.stats))
  } finally {
    await ds.stop()
    await server.stop()
    await node.stop()
  }
})
