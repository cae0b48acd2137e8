/**
 * Parsing and normalizing the node's answers in worker threads (src/ingest/block-workers.ts):
 * the pool decodes a real mainnet answer to the same block as the main thread does, packed into
 * one buffer (src/store/packed-block.ts) that the hot store writes as it is and reads back equal,
 * before and after a restart; errors keep the envelope's meaning; a dataset following a fake node
 * through the workers stores exactly the normalized node blocks, as the main-thread path does, and
 * reports the end of each stage of every block in order; blocks stored in the earlier msgpack forms
 * still load.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, test } from 'node:test'
import { decodeBlockAnswer, normalizeIntact } from '../src/ingest/block-decode.ts'
import { BlockWorkerPool } from '../src/ingest/block-workers.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import {
  createRealtimeDataset,
  type RealtimeDataset,
  type RealtimeDatasetOptions,
} from '../src/ingest/realtime/dataset.ts'
import { silentLogger, type StoredBlock } from '../src/ingest/realtime/types.ts'
import { checkBlockShape } from '../src/ingest/rpc/shape.ts'
import { fullBlockParams, RpcClient } from '../src/ingest/rpc/client.ts'
import { SHARED_BODY_MIN_BYTES } from '../src/ingest/rpc/http.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { RpcBlock } from '../src/rpc/types.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { HotStore } from '../src/store/hot.ts'
import { isPackedBlock, lazyBlock, storedBytes, unpackBlock, type PackedBlock } from '../src/store/packed-block.ts'
import { runInline } from './support/inline.ts'
import { mainnetAnswer } from './support/mainnet-answer.ts'
import { GENESIS, mkChain } from './support/realtime/blocks.ts'
import { asBinary, open } from 'lmdb'
import { Packr } from 'msgpackr'

/** a dataset (memory cold store, hot store in a temp dir) set to follow the fake node */
function following(
  node: FakeSolanaNode,
  opts: Pick<RealtimeDatasetOptions, 'normalizeThreads' | 'onStored'>,
): Promise<RealtimeDataset> {
  return createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: tempDir(),
    cold: new MemoryColdStore(),
    startSlot: node.firstSlot,
    pollIntervalMs: 5,
    noSync: true,
    logger: silentLogger,
    ...opts,
  })
}

/** start following the node; resolves once the dataset's head is the node's tip */
function caughtUp(ds: RealtimeDataset, node: FakeSolanaNode): Promise<void> {
  const done = new Promise<void>((resolve) => {
    const off = ds.store.onChange(() => {
      if (ds.store.head()?.hash === node.tip.hash) {
        off()
        resolve()
      }
    })
  })
  ds.start()
  return done
}

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-workers-'))
  dirs.push(d)
  return d
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

// the bundled whole mainnet block as a node's getBlock answer (raw text: u64 values exact)
const { answer, archived } = mainnetAnswer()
const expected = normalizeBlock(archived)

test('a worker decodes a mainnet answer to the main thread’s block, packed; the hot store reads it back equal', async () => {
  const pool = new BlockWorkerPool({ threads: 2 })
  try {
    const env = await pool.decode(Buffer.from(answer), archived.slot)
    assert.equal(env.result?.kind, 'normalized')
    const r = env.result as { kind: 'normalized'; block: Block | PackedBlock; warnings: unknown[] }
    assert.ok(isPackedBlock(r.block), 'the block comes back packed')
    assert.deepStrictEqual(r.block.header, expected.block.header)
    assert.deepStrictEqual(unpackBlock(r.block.packed), expected.block)
    assert.deepStrictEqual(r.warnings, expected.warnings)
    // the same bytes decoded here, unpacked
    assert.deepStrictEqual(decodeBlockAnswer(answer, archived.slot).result, {
      kind: 'normalized',
      ...expected,
    })

    // the hot store writes the buffer as it is; the block reads back equal, lazily and after a restart
    const dir = tempDir()
    const hot = await HotStore.open({ path: dir, noSync: true })
    assert.equal((await hot.push(r.block)).status, 'extended')
    const stored = hot.entries()[0].block
    assert.deepStrictEqual(stored, expected.block)
    assert.equal(
      JSON.stringify(stored, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      JSON.stringify(expected.block, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)),
    )
    await hot.close()
    const again = await HotStore.open({ path: dir, noSync: true })
    assert.deepStrictEqual(again.entries()[0].block, expected.block)
    await again.close()

    // in two parts, one per thread: the parts read back the same block, also stored and after a restart
    const halves = new BlockWorkerPool({ threads: 2, splitMinBytes: 1, inlineMaxBytes: 0 })
    try {
      const joined = (await halves.decode(Buffer.from(answer), archived.slot)).result as { block: PackedBlock }
      assert.equal(storedBytes(joined.block)[0], 0xfe, 'packed in parts')
      assert.deepStrictEqual(lazyBlock(joined.block), expected.block)
      const dir2 = tempDir()
      const hot2 = await HotStore.open({ path: dir2, noSync: true })
      assert.equal((await hot2.push(joined.block)).status, 'extended')
      await hot2.close()
      const again2 = await HotStore.open({ path: dir2, noSync: true })
      assert.deepStrictEqual(again2.entries()[0].block, expected.block)
      await again2.close()
    } finally {
      await halves.close()
    }

    // several answers at once, spread over the threads, each to its own block
    const many = await Promise.all([1, 2].map(() => pool.decode(Buffer.from(answer), archived.slot)))
    for (const e of many) {
      const b = (e.result as { block: PackedBlock }).block
      assert.deepStrictEqual(lazyBlock(b), expected.block)
    }
    // each answer (over 1 MiB) decoded in two parts, one in each thread
    assert.equal(pool.stats.decoded, 6)
  } finally {
    await pool.close()
  }
})

test('a large answer is read into shared memory, which both decoding threads read without a copy; a small one is not', async () => {
  // a node answering every call with the mainnet answer (chunked, as the fake node sends it) or,
  // for getSlot, a small one
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (body += c))
    req.on('end', () => {
      const method = (JSON.parse(body) as { method: string }).method
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(method === 'getSlot' ? '{"jsonrpc":"2.0","id":1,"result":12}' : answer)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const client = new RpcClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
  const pool = new BlockWorkerPool({ threads: 2 })
  try {
    assert.ok(answer.length >= SHARED_BODY_MIN_BYTES)
    const seen: Buffer[] = []
    const r = (await client.call('getBlock', fullBlockParams(archived.slot, 'confirmed'), undefined, (bytes) => {
      seen.push(bytes)
      return pool.decode(bytes, archived.slot)
    })) as { kind: string; block: PackedBlock }
    assert.equal(r.kind, 'normalized')
    assert.deepStrictEqual(lazyBlock(r.block), expected.block)
    assert.equal(pool.stats.decoded, 2, 'decoded in two parts, one per thread')
    assert.ok(seen[0].buffer instanceof SharedArrayBuffer, 'the body is in shared memory')
    // neither transferred away (detached) nor copied per thread: the body is still here, whole
    assert.ok(seen[0].equals(answer))
    assert.equal(await client.getSlot('confirmed'), 12)
    let small: Buffer | null = null
    await client.call('getSlot', [], undefined, async (bytes) => {
      small = bytes
      return parseJsonExact(bytes.toString('utf8'))
    })
    assert.ok(!((small as Buffer | null)?.buffer instanceof SharedArrayBuffer))
  } finally {
    client.close()
    await pool.close()
    server.closeAllConnections()
    server.close()
  }
})

test('following a node sets when V8 starts marking (process-wide), once; a process that does not follow one keeps the default', async () => {
  const r = await runInline(`
    import { incrementalMarkingTuned } from './src/util/gc-tuning.ts'
    import { createRealtimeDataset } from './src/ingest/realtime/dataset.ts'
    import { silentLogger } from './src/ingest/realtime/types.ts'
    import { mkdtempSync, rmSync } from 'node:fs'
    import { tmpdir } from 'node:os'
    import { join } from 'node:path'
    const before = incrementalMarkingTuned()
    const dir = mkdtempSync(join(tmpdir(), 'solportal-gc-'))
    const ds = await createRealtimeDataset({ rpcUrl: 'http://127.0.0.1:1', dataDir: dir, logger: silentLogger, noSync: true })
    const after = incrementalMarkingTuned()
    await ds.stop()
    rmSync(dir, { recursive: true, force: true })
    console.log(JSON.stringify({ before, after }))
  `)
  assert.equal(r.status, 0, r.err)
  assert.deepEqual(JSON.parse(r.out.trim().split('\n').pop()!), { before: false, after: true })
})

test('worker answers keep the envelope’s meaning: errors, null, damaged shapes, bytes that are not JSON', async () => {
  // every answer in the thread (inlineMaxBytes 0), and with the default: the small ones here, at once
  for (const inlineMaxBytes of [0, undefined]) await envelopeMeaning(inlineMaxBytes)
})

async function envelopeMeaning(inlineMaxBytes: number | undefined): Promise<void> {
  const pool = new BlockWorkerPool({ threads: 1, inlineMaxBytes })
  try {
    const err = await pool.decode(
      Buffer.from('{"jsonrpc":"2.0","id":1,"error":{"code":-32007,"message":"Slot 5 was skipped"}}'),
      5,
    )
    assert.deepEqual(err.error, { code: -32007, message: 'Slot 5 was skipped' })
    assert.deepEqual(await pool.decode(Buffer.from('{"jsonrpc":"2.0","id":1,"result":null}'), 5), { result: null })
    const { blockhash, previousBlockhash } = archived.block
    const bad = await pool.decode(
      Buffer.from(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          result: { blockhash, previousBlockhash, parentSlot: 4, transactions: {} },
        }),
      ),
      5,
    )
    assert.deepEqual(bad.result, { kind: 'malformed', problem: 'transactions is not a list' })
    await assert.rejects(pool.decode(answer.subarray(0, answer.length >> 1), archived.slot))
    // a small answer (a view into a shared buffer) is copied, not transferred: the caller's stays intact
    const small = Buffer.from('{"jsonrpc":"2.0","id":1,"result":null}')
    await pool.decode(small, 5)
    assert.equal(small.toString(), '{"jsonrpc":"2.0","id":1,"result":null}')
    // where they went: the half answer (~2 MB) to the thread; the four small ones (< 1 KB) to the
    // thread too, or decoded here with the default (64 KiB)
    const { decoded, failed, inline } = pool.stats
    if (inlineMaxBytes === 0) assert.deepEqual({ decoded, failed, inline }, { decoded: 4, failed: 1, inline: 0 })
    else assert.deepEqual({ decoded, failed, inline }, { decoded: 0, failed: 1, inline: 4 })
  } finally {
    await pool.close()
  }
  await assert.rejects(pool.decode(Buffer.from('{}'), 1), /closed/)
}

test('the worker threads start in a process whose entry point is inline code (node --input-type=module -e)', async () => {
  // the bench harness runs benches so; a worker inheriting `--input-type` died at once, and the
  // RPC client, taking that for damaged transport, asked again forever: no block reached the store
  const url = pathToFileURL(join(import.meta.dirname, '..', 'src', 'ingest', 'block-workers.ts')).href
  const code = `const { BlockWorkerPool } = await import(${JSON.stringify(url)})
const pool = new BlockWorkerPool({ threads: 1, inlineMaxBytes: 0 })
const env = await pool.decode(Buffer.from('{"jsonrpc":"2.0","id":1,"result":null}'), 5)
await pool.close()
process.stdout.write(JSON.stringify(env))`
  const { status, out, err } = await runInline(code)
  assert.equal(status, 0, err)
  assert.deepEqual(JSON.parse(out), { result: null })
})

test('following a node through the worker threads stores the normalized node blocks, as the main thread does', async () => {
  for (const normalizeThreads of [1, 0]) {
    const node = await FakeSolanaNode.start({
      txPerBlock: 40,
      intervalMs: 0,
      initialBlocks: 12,
      skipRate: 0.2,
      seed: 9,
    })
    const ds = await following(node, { normalizeThreads })
    try {
      const stored: number[] = []
      await caughtUp(ds, node)
      assert.equal(ds.decoders === null, normalizeThreads === 0)
      if (ds.decoders) assert.ok(ds.decoders.stats.decoded >= 12, JSON.stringify(ds.decoders.stats))
      const client = new RpcClient({ url: node.url })
      for (const e of ds.hot.entries()) {
        stored.push(e.header.number)
        const rpc = (await client.getBlock(e.header.number, 'confirmed'))!
        assert.deepStrictEqual(e.block, normalizeBlock({ slot: e.header.number, block: rpc }).block)
      }
      assert.deepEqual(
        stored,
        node.chain().map((b) => b.slot),
      )
    } finally {
      await ds.stop()
      await node.stop()
    }
  }
})

test('every stored block reports when each stage of its way from the node’s answer to the hot store ended, in order', async () => {
  // the stage breakdown of bench/tail.bench.ts: worker taking the answer, parse, normalize, pack,
  // back in the main thread, the hot store's write lock, LMDB commit, waiting streams told
  const node = await FakeSolanaNode.start({ txPerBlock: 40, intervalMs: 0, initialBlocks: 6, seed: 4 })
  const seen: StoredBlock[] = []
  const ds = await following(node, { normalizeThreads: 1, onStored: (e) => seen.push(e) })
  try {
    await caughtUp(ds, node)
    assert.ok(seen.length >= 3, `${seen.length} blocks stored`)
    const order = [
      'start',
      'parsed',
      'normalized',
      'packed',
      'sent',
      'received',
      'locked',
      'committed',
      'emitted',
    ] as const
    for (const s of seen) {
      const marks = s.marks ?? {}
      const times = [
        performance.timeOrigin + s.answeredAt,
        ...order.map((k) => marks[k]),
        performance.timeOrigin + s.storedAt,
      ]
      for (const [i, t] of times.entries()) assert.equal(typeof t, 'number', `block ${s.number}: mark ${i} missing`)
      // marks of different threads: allow a millisecond of clock skew between them
      for (let i = 1; i < times.length; i++)
        assert.ok(times[i]! >= times[i - 1]! - 1, `block ${s.number}: mark ${i} before mark ${i - 1}: ${times}`)
    }
  } finally {
    await ds.stop()
    await node.stop()
  }
})

test('blocks an earlier version stored (msgpack: lmdb’s encoder, or packed records) load as they were', async () => {
  // the hot store of an upgraded server: a block written by lmdb's own msgpack encoder (the
  // main-thread path) and one written as a msgpack buffer with inline records (the worker path)
  const dir = tempDir()
  const chain = mkChain(GENESIS, 3)
  const env = open({ path: dir, noSync: true, maxDbs: 4 })
  const db = env.openDB<Block, number>({ name: 'blocks', keyEncoding: 'ordered-binary', mapsAsObjects: true } as never)
  const records = new Packr({ useRecords: true, mapsAsObjects: true })
  await env.transaction(() => {
    db.put(chain[0].header.number, chain[0])
    db.put(chain[1].header.number, asBinary(records.pack(chain[1])) as unknown as Block)
  })
  await env.close()
  const hot = await HotStore.open({ path: dir, noSync: true })
  assert.deepStrictEqual(
    hot.entries().map((e) => e.block),
    chain.slice(0, 2),
  )
  // a new block goes on top in the current form, and all three read back after a restart
  assert.equal((await hot.push(chain[2])).status, 'extended')
  await hot.close()
  const again = await HotStore.open({ path: dir, noSync: true })
  assert.deepStrictEqual(
    again.entries().map((e) => e.block),
    chain,
  )
  await again.close()
})

test('an answer decoded transaction by transaction, or in two threads, means exactly what the whole parsed answer means, damaged or not', async () => {
  // decodeBlockAnswer splits the text into transactions; a pool of two threads decodes half of
  // them in each (every answer here: splitMinBytes 1); the reference here parses it whole
  const whole = (bytes: Buffer, slot: number): unknown => {
    const body = parseJsonExact(bytes.toString('utf8')) as { result?: unknown }
    if (!body || typeof body !== 'object' || !('result' in body) || body.result === null) return body
    const problem = checkBlockShape(body.result)
    if (problem !== null) return { result: { kind: 'malformed', problem } }
    return { result: normalizeIntact(slot, body.result as RpcBlock, (l) => normalizeBlock(l)) }
  }
  const node = await FakeSolanaNode.start({ txPerBlock: 6, intervalMs: 0, initialBlocks: 12, skipRate: 0, seed: 5 })
  const pool = new BlockWorkerPool({ threads: 2, splitMinBytes: 1, inlineMaxBytes: 0 })
  const inParts = async (bytes: Buffer, slot: number, want: unknown) => {
    const env = await pool.decode(Buffer.from(bytes), slot)
    const r = env.result
    if (r?.kind !== 'normalized') return assert.deepStrictEqual(env, want, `slot ${slot} in parts`)
    const w = (want as { result: { block: Block; warnings: unknown[] } }).result
    assert.deepStrictEqual(lazyBlock(r.block as PackedBlock), w.block, `slot ${slot} in parts`)
    assert.deepStrictEqual(r.warnings, w.warnings)
  }
  try {
    const s = (k: number) => node.firstSlot + k
    node.injectBlockFault(s(1), { kind: 'junk-transactions' })
    node.injectBlockFault(s(2), { kind: 'transactions-not-list' })
    node.injectBlockFault(s(3), { kind: 'no-meta' })
    node.injectBlockFault(s(4), { kind: 'null-instructions' })
    node.injectBlockFault(s(5), { kind: 'bad-hash', member: 'blockhash', text: 'x' })
    const kinds = new Set<string>()
    for (let k = 0; k < 8; k++) {
      const res = await fetch(node.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: fullBlockParams(s(k), 'confirmed') }),
      })
      const bytes = Buffer.from(await res.arrayBuffer())
      const want = whole(bytes, s(k))
      kinds.add(JSON.stringify((want as { result?: { kind?: string; problem?: string } }).result?.kind))
      assert.deepStrictEqual(decodeBlockAnswer(bytes, s(k)), want, `slot ${s(k)}`)
      await inParts(bytes, s(k), want)
      const packed = decodeBlockAnswer(bytes, s(k), {}, true).result
      if (packed?.kind === 'normalized')
        assert.deepStrictEqual(lazyBlock(packed.block as PackedBlock), expectedOf(want))
      // a transaction that is not JSON, and a cut answer: not JSON either way
      const text = bytes.toString('utf8')
      const at = text.indexOf('"meta"')
      if (at >= 0) {
        const broken = Buffer.from(text.slice(0, at) + '"meta"::' + text.slice(at + 7))
        assert.throws(() => whole(broken, s(k)))
        assert.throws(() => decodeBlockAnswer(broken, s(k)))
        await assert.rejects(pool.decode(broken, s(k)))
        // the last transaction damaged (in the second part): the same problem as parsed whole
        const last = text.lastIndexOf('"meta"')
        const noMeta = Buffer.from(text.slice(0, last) + '"meta_"' + text.slice(last + 6))
        const damaged = whole(noMeta, s(k))
        if ((damaged as { result?: { kind?: string } }).result?.kind === 'malformed') kinds.add('last damaged')
        assert.deepStrictEqual(decodeBlockAnswer(noMeta, s(k)), damaged)
        await inParts(noMeta, s(k), damaged)
      }
      assert.throws(() => decodeBlockAnswer(bytes.subarray(0, bytes.length - 3), s(k)))
      await assert.rejects(pool.decode(bytes.subarray(0, bytes.length - 3), s(k)))
    }
    assert.deepEqual([...kinds].sort(), ['"malformed"', '"normalized"', 'last damaged'])
    assert.ok(pool.stats.decoded >= 16, JSON.stringify(pool.stats))
  } finally {
    await pool.close()
    await node.stop()
  }
})

function expectedOf(env: unknown): Block {
  return (env as { result: { block: Block } }).result.block
}
