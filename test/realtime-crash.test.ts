/**
 * Real crashes: the ingester runs in a child process (LMDB hot store + a durable file cold
 * store) and is SIGKILLed at random moments while the node produces blocks and forks. After the
 * last restart the stores hold exactly the node's chain: finalized blocks in the cold store in
 * order, without gap or duplicate, the rest in the hot store. The same for the whole server:
 * `solportal serve --rpc` killed with SIGKILL during live ingest and restarted serves every block
 * of the node's chain exactly once, in order, with the node's hashes and transactions.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { HeadInfo } from '../src/store/chunk.ts'
import { HotStore } from '../src/store/hot.ts'
import { postJson, request } from './support/http/client.ts'
import { FileColdStore } from './support/realtime/file-cold.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Child {
  proc: ChildProcess
  last: { head: HeadInfo | null; fin: HeadInfo | null; dropped: number } | null
  exited: Promise<void>
}

function spawnChild(
  url: string,
  dataDir: string,
  coldPath: string,
  startSlot: number,
  env: Record<string, string> = {},
): Child {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'support', 'realtime', 'ingest-child.ts'),
      url,
      dataDir,
      coldPath,
      String(startSlot),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } },
  )
  const c: Child = { proc, last: null, exited: new Promise((r) => proc.once('exit', () => r())) }
  createInterface({ input: proc.stdout! }).on('line', (l) => {
    c.last = JSON.parse(l)
  })
  return c
}

test('SIGKILL at random moments loses nothing and duplicates nothing', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 2,
    intervalMs: 0,
    initialBlocks: 20,
    skipRate: 0.2,
    finalityLag: 8,
    seed: 21,
  })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-crash-'))
  dirs.push(dir)
  const dataDir = join(dir, 'data')
  const coldPath = join(dir, 'cold.bin')
  let child: Child | null = null
  try {
    let x = 7
    const rnd = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648
    // a crash exactly between a durable cold append and the hot delete
    child = spawnChild(node.url, dataDir, coldPath, node.firstSlot, { CRASH_AFTER_COLD_APPEND: '2' })
    let timer: NodeJS.Timeout | undefined
    const exitedBy = Promise.race([
      child.exited.then(() => 'exit'),
      new Promise((r) => (timer = setTimeout(() => r('timeout'), 120_000))),
    ])
    void exitedBy.then(() => clearTimeout(timer))
    let done = false
    void exitedBy.then(() => (done = true))
    while (!done) {
      node.produce()
      await sleep(20)
    }
    assert.equal(await exitedBy, 'exit')
    assert.equal(child.proc.signalCode, 'SIGKILL')
    child = null
    for (let round = 0; round < 4; round++) {
      child = spawnChild(node.url, dataDir, coldPath, node.firstSlot)
      // wait until the child ingests, then keep the chain moving and kill it mid-work
      const t0 = Date.now()
      while (!child.last?.head && Date.now() - t0 < 120_000) await sleep(10)
      assert.ok(child.last?.head, 'child did not start ingesting')
      // after the crash between cold append and hot delete, the restart drops the moved blocks
      if (round === 0) assert.ok(child.last.dropped > 0, JSON.stringify(child.last))
      const steps = 10 + Math.floor(rnd() * 20)
      for (let i = 0; i < steps; i++) {
        node.produce()
        if (rnd() < 0.15) node.fork(1 + Math.floor(rnd() * 4), 1 + Math.floor(rnd() * 4))
        await sleep(rnd() * 15)
      }
      child.proc.kill('SIGKILL')
      await child.exited
      child = null
    }
    node.setFinalityLag(3)
    node.produce()
    child = spawnChild(node.url, dataDir, coldPath, node.firstSlot)
    const t0 = Date.now()
    for (;;) {
      const l: Child['last'] = child.last
      if (l?.head?.hash === node.tip.hash && l.fin?.number === node.finalizedSlot) break
      if (Date.now() - t0 > 120_000)
        throw new Error(`no convergence: ${JSON.stringify(l)} vs ${node.tip.slot}/${node.finalizedSlot}`)
      await sleep(10)
    }
    child.proc.kill('SIGTERM')
    await child.exited
    child = null
    // inspect what is on disk
    const cold = new FileColdStore(coldPath)
    const hot = await HotStore.open({ path: join(dataDir, 'hot'), coldLast: cold.lastBlock() })
    try {
      const chain = node.chain()
      const stored = [
        ...cold.all().map((b) => [b.header.number, b.header.hash]),
        ...hot.entries().map((e) => [e.header.number, e.header.hash]),
      ]
      assert.deepEqual(
        stored,
        chain.map((b) => [b.slot, b.hash]),
      )
      assert.deepEqual(
        cold.all().map((b) => b.header.number),
        chain.filter((b) => b.slot <= node.finalizedSlot).map((b) => b.slot),
      )
      assert.equal(hot.droppedOnOpen.length, 0)
    } finally {
      await hot.close()
      await cold.close()
    }
  } finally {
    if (child) {
      child.proc.kill('SIGKILL')
      await child.exited
    }
    await node.stop()
  }
})

interface Server {
  proc: ChildProcess
  url: Promise<string>
  exited: Promise<void>
  output: () => string
}

function spawnServe(rpcUrl: string, dataDir: string): Server {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--rpc', rpcUrl, '--data-dir', dataDir, '--quiet'],
    {
      cwd: join(import.meta.dirname, '..'),
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let out = ''
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  const url = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d
      const m = /solportal listening on (http:\/\/[\d.]+:\d+)/.exec(out)
      if (m) resolve(m[1])
    }
    proc.stdout!.on('data', onData)
    proc.stderr!.on('data', onData)
    void exited.then(() => reject(new Error(`serve exited: ${out}`)))
  })
  url.catch(() => {})
  return { proc, url, exited, output: () => out }
}

async function getJson<T>(url: string): Promise<T> {
  return JSON.parse((await request(url)).text) as T
}

/** polls `read` until `cond` holds (the server pushes nothing to a plain GET), with a generous bound */
async function untilValue<T>(what: string, read: () => Promise<T>, cond: (v: T) => boolean, ms = 90_000): Promise<T> {
  const t0 = Date.now()
  for (;;) {
    const v = await read()
    if (cond(v)) return v
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`)
    await sleep(50)
  }
}

interface Line {
  header: { number: number; hash: string; parentHash: string }
  transactions?: { transactionIndex: number; signatures: string[] }[]
}

/** every block the server has, through the stream endpoint, resuming until the head */
async function allBlocks(base: string, from: number, to: number): Promise<Line[]> {
  const out: Line[] = []
  let next = from
  while (next <= to) {
    const r = await postJson(`${base}/stream`, {
      type: 'solana',
      fromBlock: next,
      toBlock: to,
      includeAllBlocks: true,
      fields: {
        block: { number: true, hash: true, parentHash: true },
        transaction: { transactionIndex: true, signatures: true },
      },
      transactions: [{}],
    })
    assert.equal(r.status, 200, r.text)
    const lines = r.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line)
    assert.ok(lines.length > 0)
    out.push(...lines)
    next = lines[lines.length - 1].header.number + 1
  }
  return out
}

test('serve --rpc killed with SIGKILL during live ingest, then restarted: every block once, in order, equal to the node', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 3,
    intervalMs: 0,
    initialBlocks: 24,
    skipRate: 0.2,
    finalityLag: 6,
    seed: 33,
  })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-serve-crash-'))
  dirs.push(dir)
  const dataDir = join(dir, 'data')
  let server: Server | null = null
  // the server starts at the node's finalized block when its stores are empty
  const first = node.finalizedSlot
  try {
    let x = 11
    const rnd = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648
    let kills = 0
    for (let round = 0; round < 3; round++) {
      server = spawnServe(node.url, dataDir)
      const base = `${await server.url}/datasets/solana-mainnet`
      await untilValue(
        'a head',
        () => getJson<{ number: number } | null>(`${base}/head`),
        (h) => h !== null,
      )
      // keep the chain moving (forks included) and kill the server in the middle of it
      const steps = 8 + Math.floor(rnd() * 12)
      for (let i = 0; i < steps; i++) {
        node.produce()
        if (rnd() < 0.2) node.fork(1 + Math.floor(rnd() * 3), 1 + Math.floor(rnd() * 3))
        await sleep(rnd() * 40)
      }
      server.proc.kill('SIGKILL')
      await server.exited
      assert.equal(server.proc.signalCode, 'SIGKILL')
      kills++
      server = null
    }
    // a final run catches up with the node, finalizing up to 3 slots below its tip
    node.setFinalityLag(3)
    node.produce()
    server = spawnServe(node.url, dataDir)
    const base = `${await server.url}/datasets/solana-mainnet`
    type Head = { number: number; hash: string } | null
    await untilValue(
      "the node's head and finalized head",
      async () => [await getJson<Head>(`${base}/head`), await getJson<Head>(`${base}/finalized-head`)],
      ([h, f]) => h?.hash === node.tip.hash && f?.number === node.finalizedSlot,
    )
    const got = await allBlocks(base, first, node.tip.slot)
    const chain = node.chain().filter((b) => b.slot >= first)
    assert.deepEqual(
      got.map((l) => [l.header.number, l.header.hash, l.header.parentHash]),
      chain.map((b) => [b.slot, b.hash, b.parentHash]),
      "every block of the node's chain exactly once, in order, with its hashes",
    )
    // and the content: the transactions of each block are those of the node's answer
    const client = new RpcClient({ url: node.url })
    for (const l of got) {
      const answer = (await client.getBlock(l.header.number, 'confirmed'))!
      const want = normalizeBlock({ slot: l.header.number, block: answer }).block.transactions
      assert.deepEqual(
        (l.transactions ?? []).map((t) => [t.transactionIndex, t.signatures]),
        want.map((t) => [t.transactionIndex, t.signatures]),
        `transactions of block ${l.header.number}`,
      )
    }
    assert.equal(kills, 3)
    server.proc.kill('SIGTERM')
    await server.exited
    assert.equal(server.proc.exitCode, 0, server.output())
    server = null
  } finally {
    if (server) {
      server.proc.kill('SIGKILL')
      await server.exited
    }
    await node.stop()
  }
})
