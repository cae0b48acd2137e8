/**
 * Damaged node answers, over real JSON-RPC on loopback (the fake node injects the faults):
 * junk transactions under a valid header, `transactions` not a list, transactions without `meta`,
 * transactions the normalizer cannot use, oversize bodies and stalled requests. A damaged block is
 * fetched again (each attempt logged with its slot) and stored whole, or ingestion stops with a
 * clear error; it is never stored with fewer transactions and never taken for a fork.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { ResponseTooLargeError } from '../src/ingest/rpc/errors.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import {
  createRealtimeDataset,
  type RealtimeDataset,
  type RealtimeDatasetOptions,
} from '../src/ingest/realtime/dataset.ts'
import { type RealtimeLogger } from '../src/ingest/realtime/types.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** resolves when `cond` holds, checked at every log line and store change (and every 50 ms) */
function until(what: string, cond: () => boolean, ds?: RealtimeDataset, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!cond()) return
      finish()
      resolve()
    }
    const off = ds?.store.onChange(check)
    const poll = setInterval(check, 50)
    const timer = setTimeout(() => {
      finish()
      reject(new Error(`timed out waiting for ${what}`))
    }, timeoutMs)
    const finish = () => {
      off?.()
      clearInterval(poll)
      clearTimeout(timer)
    }
    check()
  })
}

function collect(lines: string[]): RealtimeLogger {
  return {
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  }
}

async function open(
  node: FakeSolanaNode,
  lines: string[],
  extra: Partial<RealtimeDatasetOptions> = {},
): Promise<{ ds: RealtimeDataset; cold: MemoryColdStore }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'solportal-damaged-'))
  dirs.push(dataDir)
  const cold = new MemoryColdStore([], 4)
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir,
    cold,
    startSlot: node.firstSlot,
    concurrency: 3,
    pollIntervalMs: 5,
    finalizeIntervalMs: 20,
    tipCheckIntervalMs: 10,
    retryDelayMs: 5,
    malformedBackoffMs: 5,
    noSync: true,
    rpc: { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 20, timeoutMs: 30_000, stallTimeoutMs: 400 },
    logger: collect(lines),
    ...extra,
  })
  return { ds, cold }
}

/** every stored block, finalized then hot */
function storedBlocks(ds: RealtimeDataset, cold: MemoryColdStore): Block[] {
  const c = cold.all()
  const last = c.length ? c[c.length - 1].header.number : -1
  return [
    ...c,
    ...ds.hot
      .entries()
      .filter((e) => e.header.number > last)
      .map((e) => e.block),
  ]
}

const json = (b: Block) => JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))

test('damaged answers are fetched again and stored whole; each retry and stall is logged with its slot', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 6, intervalMs: 0, initialBlocks: 14, skipRate: 0, seed: 5 })
  const lines: string[] = []
  const s = (k: number) => node.firstSlot + k
  node.injectBlockFault(s(2), { kind: 'junk-transactions' }, 2)
  node.injectBlockFault(s(3), { kind: 'transactions-not-list' })
  node.injectBlockFault(s(4), { kind: 'no-meta' })
  node.injectBlockFault(s(5), { kind: 'null-instructions' })
  node.injectBlockFault(s(6), { kind: 'oversize', bytes: 3 << 20 })
  node.injectBlockFault(s(7), { kind: 'stall' }, 2)
  const { ds, cold } = await open(node, lines, { rpc: { ...baseRpc(), maxResponseBytes: 2 << 20 } })
  try {
    ds.start()
    node.setFinalityLag(4)
    await until('caught up', () => ds.store.head()?.hash === node.tip.hash && node.stats.blockFaults === 8, ds)
    // the stored chain is the node's, each block equal to the normalized intact answer
    const client = new RpcClient({ url: node.url })
    const stored = storedBlocks(ds, cold)
    assert.deepEqual(
      stored.map((b) => [b.header.number, b.header.hash]),
      node.chain().map((b) => [b.slot, b.hash]),
    )
    for (const b of stored) {
      const answer = (await client.getBlock(b.header.number, 'confirmed'))!
      assert.equal(answer.transactions!.length, 6)
      const want = normalizeBlock({ slot: b.header.number, block: answer }).block
      assert.equal(json(b), json(want), `block ${b.header.number}`)
    }
    // logged with the slot: the refetches of damaged answers and the stalled requests
    const refetch = (k: number) =>
      lines.some((l) => l.startsWith(`warn slot ${s(k)}: damaged getBlock answer`) && l.includes('fetching it again'))
    for (const k of [2, 3, 4, 5, 6]) assert.ok(refetch(k), `refetch of slot ${s(k)} logged:\n${lines.join('\n')}`)
    assert.ok(lines.some((l) => l.includes(`slot ${s(2)}: damaged`) && l.includes('transaction 0: no transaction')))
    assert.ok(lines.some((l) => l.includes(`slot ${s(3)}: damaged`) && l.includes('transactions is not a list')))
    assert.ok(lines.some((l) => l.includes(`slot ${s(4)}: damaged`) && l.includes('no meta')))
    assert.ok(lines.some((l) => l.includes(`slot ${s(5)}: damaged`) && l.includes('could not be normalized')))
    assert.ok(lines.some((l) => l.includes(`slot ${s(6)}: damaged`) && l.includes('MiB cap')))
    const stalls = lines.filter((l) => l.startsWith(`warn getBlock slot ${s(7)}: getBlock: stalled`))
    assert.equal(stalls.length, 2, lines.join('\n'))
    assert.equal(ds.ingester.stats.refetches, 6)
    assert.ok(!lines.some((l) => /fork|diverges/.test(l)), `no fork reported:\n${lines.join('\n')}`)
    assert.equal(ds.ingester.stats.forks, 0)
  } finally {
    await ds.stop()
    await node.stop()
  }
})

test('a block that stays damaged stops ingestion with a clear error; it is not stored, not a fork', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 4, intervalMs: 0, initialBlocks: 10, skipRate: 0, seed: 6 })
  const bad = node.firstSlot + 6
  node.injectBlockFault(bad, { kind: 'junk-transactions' }, Infinity)
  const lines: string[] = []
  let fatal: Error | null = null
  const { ds, cold } = await open(node, lines, { malformedAttempts: 3, onFatal: (e) => (fatal = e) })
  try {
    ds.start()
    await until('ingestion stopped', () => fatal !== null, ds)
    assert.match(
      fatal!.message,
      new RegExp(`^slot ${bad}: the node's getBlock answer is still damaged after 3 attempts \\(transaction 0: `),
    )
    assert.ok(lines.includes(`error ingestion stopped: ${fatal!.message}`), lines.join('\n'))
    assert.equal(node.stats.blockFaults, 3, 'three answers fetched for the slot')
    // the loop has ended: nothing above the damaged block, which is not stored either
    assert.equal(ds.ingester.fatalError, fatal)
    const stored = storedBlocks(ds, cold).map((b) => b.header.number)
    assert.deepEqual(
      stored,
      node
        .chain()
        .map((b) => b.slot)
        .filter((n) => n < bad),
    )
    assert.ok(!lines.some((l) => /fork|diverges/.test(l)), lines.join('\n'))
    const refetches = lines.filter((l) => l.startsWith(`warn slot ${bad}: damaged getBlock answer`))
    assert.equal(refetches.length, 2)
  } finally {
    await ds.stop()
    await node.stop()
  }
})

test('a block whose blockhash or previousBlockhash is not a base58 hash is damage, not a fork', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 3, intervalMs: 0, initialBlocks: 10, skipRate: 0, seed: 8 })
  const lines: string[] = []
  const s = (k: number) => node.firstSlot + k
  // a line break and a control character in the hash: the log line must not be split by them
  node.injectBlockFault(s(2), { kind: 'bad-hash', member: 'blockhash', text: 'not\nbase58\u0007' }, 2)
  node.injectBlockFault(s(4), { kind: 'bad-hash', member: 'previousBlockhash', text: '1111' })
  const { ds, cold } = await open(node, lines)
  try {
    ds.start()
    node.setFinalityLag(3)
    await until('caught up', () => ds.store.head()?.hash === node.tip.hash && node.stats.blockFaults === 3, ds)
    const stored = storedBlocks(ds, cold)
    assert.deepEqual(
      stored.map((b) => [b.header.number, b.header.hash, b.header.parentHash]),
      node.chain().map((b) => [b.slot, b.hash, b.parentHash]),
    )
    assert.ok(stored.every((b) => b.header.hash !== '' && b.header.parentHash !== ''))
    const refetches = lines.filter((l) => l.includes('damaged getBlock answer'))
    assert.equal(refetches.length, 3, lines.join('\n'))
    assert.ok(
      refetches.some((l) =>
        l.startsWith(`warn slot ${s(2)}: damaged getBlock answer (blockhash "not\\nbase58\\u0007" is not a 32-byte`),
      ),
      lines.join('\n'),
    )
    assert.ok(refetches.some((l) => l.includes(`slot ${s(4)}: damaged getBlock answer (previousBlockhash "1111"`)))
    assert.ok(
      lines.every((l) => !/[\u0000-\u001f]/.test(l)),
      'no control character in a log line',
    )
    assert.ok(!lines.some((l) => /fork|diverges/.test(l)), `no fork reported:\n${lines.join('\n')}`)
    assert.equal(ds.ingester.stats.forks, 0)
  } finally {
    await ds.stop()
    await node.stop()
  }
})

test('the count of failed sessions in a row starts again after a success', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 2, intervalMs: 0, initialBlocks: 3, skipRate: 0, seed: 7 })
  const lines: string[] = []
  const { ds } = await open(node, lines, { rpc: { ...baseRpc(), maxRetries: 0 } })
  const failedInARow = () =>
    lines.map((l) => /ingest session failed \((\d+) in a row\)/.exec(l)?.[1]).filter((x) => x !== undefined)
  try {
    node.setFaults({ rate429: 1, retryAfterSec: 0 })
    ds.start()
    await until('three failures in a row', () => failedInARow().length >= 3, ds)
    node.setFaults({ rate429: 0 })
    await until('caught up', () => ds.store.head()?.hash === node.tip.hash, ds)
    const before = failedInARow().length
    node.setFaults({ rate429: 1 })
    node.produce()
    await until('a new failure', () => failedInARow().length > before, ds)
    node.setFaults({ rate429: 0 })
    const counts = failedInARow().map(Number)
    assert.deepEqual(counts.slice(0, 3), [1, 2, 3])
    assert.equal(counts[before], 1, `counted from 1 again after the success: ${counts.join(',')}`)
  } finally {
    await ds.stop()
    await node.stop()
  }
})

test('serve --rpc as a real process: a block that stays damaged ends it with status 1 and says why', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 3,
    intervalMs: 0,
    initialBlocks: 12,
    skipRate: 0,
    finalityLag: 8,
  })
  // the server starts at the node's finalized block; the second block above it stays damaged
  const bad = node.finalizedSlot + 2
  node.injectBlockFault(bad, { kind: 'junk-transactions' }, Infinity)
  const dataDir = mkdtempSync(join(tmpdir(), 'solportal-damaged-serve-'))
  dirs.push(dataDir)
  try {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'serve',
        '--rpc',
        node.url,
        '--data-dir',
        dataDir,
        '--rpc-damaged-attempts',
        '2',
      ],
      {
        cwd: join(import.meta.dirname, '..'),
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.stderr.on('data', (d: Buffer) => (out += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)))
    clearTimeout(timer)
    assert.equal(code, 1, out)
    assert.match(
      out,
      new RegExp(`slot ${bad}: damaged getBlock answer \\(transaction 0: no transaction\\); fetching it again`),
    )
    assert.match(
      out,
      new RegExp(`ingestion stopped: slot ${bad}: the node's getBlock answer is still damaged after 2 attempts`),
    )
    assert.equal(node.stats.blockFaults, 2)
  } finally {
    await node.stop()
  }
})

test('an endless answer without Content-Length is abandoned at the size cap, not read whole', async () => {
  // a node that streams a JSON answer forever (chunked): the client must stop at its cap
  let sent = 0
  let closed!: () => void
  const connectionClosed = new Promise<void>((r) => (closed = r))
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'application/json' })
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    res.write('{"jsonrpc":"2.0","id":1,"result":')
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) sent += chunk.length
      if (!res.destroyed) res.once('drain', pump)
    }
    res.on('close', () => closed())
    pump()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const c = new RpcClient({ url, maxRetries: 0, maxResponseBytes: 4 << 20 })
    await assert.rejects(c.getBlock(1, 'confirmed'), (e: Error) => e instanceof ResponseTooLargeError)
    assert.equal(c.stats.tooLarge, 1)
    await connectionClosed // the client gave up the connection: the node stops sending
    assert.ok(sent < 64 << 20, `${sent} bytes sent before the client hung up`)
  } finally {
    server.closeAllConnections()
    server.close()
  }
})

function baseRpc(): NonNullable<RealtimeDatasetOptions['rpc']> {
  return { minBackoffMs: 1, maxBackoffMs: 20, maxRetries: 20, timeoutMs: 30_000, stallTimeoutMs: 400 }
}
