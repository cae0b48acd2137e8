/**
 * Real crashes: the ingester runs in a child process (LMDB hot store + a durable file cold
 * store) and is SIGKILLed at random moments while the node produces blocks and forks. After the
 * last restart the stores hold exactly the node's chain: finalized blocks in the cold store in
 * order, without gap or duplicate, the rest in the hot store.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node.ts'
import type { HeadInfo } from '../src/store/chunk.ts'
import { HotStore } from '../src/store/hot.ts'
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
      new Promise((r) => (timer = setTimeout(() => r('timeout'), 20_000))),
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
      while (!child.last?.head && Date.now() - t0 < 20_000) await sleep(10)
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
      if (Date.now() - t0 > 20_000)
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
