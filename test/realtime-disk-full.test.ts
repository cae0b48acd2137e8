/**
 * A follower on a full disk, for real: `solportal serve --rpc` follows a fake node into a data
 * directory on a tmpfs too small for the chain. When the disk fills it stops with status 1 and
 * one line naming the storage error (no stack, no second error); once the tmpfs has grown, the
 * same command catches up with the node, and the finalized blocks it serves equal, field for
 * field, those of a follower that ran on a roomy disk without interruption. Skipped, with the
 * reason, where a tmpfs cannot be mounted (not root).
 *
 * The node grows its chain only while the follower keeps up (at most LEAD blocks ahead) and not
 * after the follower stopped: the restarted follower's catch-up is the same few dozen blocks
 * however busy the machine is. (A node that ran on regardless put a load-dependent number of
 * blocks ahead, hundreds on a busy machine: the restarted follower held all of them in its hot
 * store while its cold writer, below the server's priority, got little CPU, and its finalized head
 * stayed where it was until the hot store filled the grown disk again.)
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { postJson, request } from './support/http/client.ts'
import { mountTmpfs, resizeTmpfs, unmountTmpfs } from './support/tmpfs.ts'

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** how far the node's chain may run ahead of the follower's head, in slots */
const LEAD = 20

interface Server {
  proc: ChildProcess
  url: Promise<string>
  exited: Promise<number | null>
  stderr: () => string
  /** everything it printed (stdout and stderr) */
  output: () => string
}

function spawnServe(rpcUrl: string, dataDir: string, fromSlot: number): Server {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--rpc',
      rpcUrl,
      '--data-dir',
      dataDir,
      '--from-slot',
      String(fromSlot),
    ],
    {
      cwd: join(import.meta.dirname, '..'),
      // logs (JSON lines on stdout) in the failure messages; stderr is for the fatal line
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let out = ''
  let err = ''
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)))
  const url = new Promise<string>((resolve, reject) => {
    const seen = () => {
      const m = /solportal listening on (http:\/\/[\d.]+:\d+)/.exec(out + err)
      if (m) resolve(m[1])
    }
    proc.stdout!.on('data', (d: Buffer) => {
      out += d
      seen()
    })
    proc.stderr!.on('data', (d: Buffer) => {
      err += d
      seen()
    })
    void exited.then(() => reject(new Error(`serve exited: ${out}${err}`)))
  })
  url.catch(() => {})
  return { proc, url, exited, stderr: () => err, output: () => out + err }
}

/** what the server logged, its request lines left out */
function logged(server: Server): string {
  return server
    .output()
    .split('\n')
    .filter((l) => !l.includes('"msg":"request"'))
    .join('\n')
}

async function getJson<T>(url: string): Promise<T> {
  return JSON.parse((await request(url)).text) as T
}

type Head = { number: number; hash: string } | null

/** polls until the server's head is the node's tip and its finalized head the node's */
async function caughtUp(server: Server, node: FakeSolanaNode, ms = 240_000): Promise<string> {
  const base = `${await server.url}/datasets/solana-mainnet`
  const t0 = Date.now()
  for (;;) {
    const h = await getJson<Head>(`${base}/head`)
    const f = await getJson<Head>(`${base}/finalized-head`)
    if (h?.hash === node.tip.hash && f?.number === node.finalizedSlot) return base
    if (Date.now() - t0 > ms)
      throw new Error(`no catch-up: ${JSON.stringify([h, f])} vs ${node.tip.slot}\n${logged(server).slice(-6000)}`)
    await sleep(50)
  }
}

/** every finalized block from `from`, with its transactions and instructions, as served */
async function finalizedBlocks(base: string, from: number, to: number): Promise<string[]> {
  const out: string[] = []
  let next = from
  while (next <= to) {
    const r = await postJson(`${base}/finalized-stream`, {
      type: 'solana',
      fromBlock: next,
      toBlock: to,
      includeAllBlocks: true,
      fields: {
        block: { number: true, hash: true, parentHash: true, timestamp: true },
        transaction: { transactionIndex: true, signatures: true, fee: true, err: true },
        instruction: { transactionIndex: true, instructionAddress: true, programId: true, data: true },
      },
      transactions: [{}],
      instructions: [{}],
    })
    assert.equal(r.status, 200, r.text)
    const lines = r.text.split('\n').filter(Boolean)
    assert.ok(lines.length > 0)
    out.push(...lines)
    next = (JSON.parse(lines[lines.length - 1]) as { header: { number: number } }).header.number + 1
  }
  return out
}

/** `serve --rpc` from `from` into `dataDir` until it holds the node's chain: its finalized blocks, after a clean stop */
async function followedBlocks(node: FakeSolanaNode, dataDir: string, from: number, running: Set<Server>) {
  const server = spawnServe(node.url, dataDir, from)
  running.add(server)
  const base = await caughtUp(server, node).catch((e: Error) => {
    throw new Error(`${e.message} (exit ${server.proc.exitCode})\n${logged(server).slice(-6000)}`)
  })
  const lines = await finalizedBlocks(base, from, node.finalizedSlot).catch((e: Error) => {
    throw new Error(`${e.message}\n${logged(server).slice(-6000)}`)
  })
  server.proc.kill('SIGTERM')
  assert.equal(await server.exited, 0, server.stderr())
  running.delete(server)
  return lines
}

test('serve --rpc on a full disk: status 1 and one line; restarted with room, the same finalized blocks as an uninterrupted follower', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'solportal-follow-full-'))
  dirs.push(root)
  const mnt = join(root, 'mnt')
  const why = mountTmpfs(mnt, 3 * 1024 * 1024)
  if (why) return t.skip(`cannot mount a tmpfs to fill (${why})`)
  const node = await FakeSolanaNode.start({
    txPerBlock: 60,
    intervalMs: 0,
    initialBlocks: 10,
    skipRate: 0.1,
    finalityLag: 4,
    seed: 41,
  })
  const from = node.firstSlot
  const running = new Set<Server>()
  try {
    const server = spawnServe(node.url, join(mnt, 'data'), from)
    running.add(server)
    const base = `${await server.url}/datasets/solana-mainnet`
    // the chain grows, as the follower keeps up, until the follower has filled its disk and stopped
    let stopped = false
    void server.exited.then(() => (stopped = true))
    const t0 = Date.now()
    while (!stopped && Date.now() - t0 < 120_000) {
      if (!server.output().includes('ingestion stopped')) {
        const head = await getJson<Head>(`${base}/head`).catch(() => null)
        if (head && node.tip.slot - head.number < LEAD) node.produce()
      }
      await sleep(15)
    }
    assert.ok(stopped, 'the follower did not stop on the full disk')
    const code = await server.exited
    const stderr = server.stderr()
    running.delete(server)
    assert.equal(code, 1, stderr)
    const lines = stderr.trimEnd().split('\n')
    assert.equal(lines.length, 1, stderr)
    assert.match(
      lines[0],
      /^solportal: error: the disk is full or failing: .*: no space left on the device \(ENOSPC\); free space and run again/,
    )
    // room again: the same command catches up with the node
    resizeTmpfs(mnt, 256 * 1024 * 1024)
    for (let i = 0; i < 10 || node.tip.slot - from < 60; i++) node.produce()
    // beside it, a follower of the same chain on a roomy disk, never interrupted
    const [resumed, uninterrupted] = await Promise.all([
      followedBlocks(node, join(mnt, 'data'), from, running),
      followedBlocks(node, join(root, 'roomy'), from, running),
    ])
    assert.ok(resumed.length > 30, `${resumed.length} blocks`)
    assert.equal(resumed.length, uninterrupted.length)
    assert.deepEqual(resumed, uninterrupted)
    const numbers = resumed.map((l) => (JSON.parse(l) as { header: { number: number } }).header.number)
    assert.deepEqual(
      numbers,
      node
        .chain()
        .filter((b) => b.slot >= from && b.slot <= node.finalizedSlot)
        .map((b) => b.slot),
    )
  } finally {
    for (const server of running) {
      server.proc.kill('SIGKILL')
      await server.exited
    }
    await node.stop()
    unmountTmpfs(mnt)
  }
})
