// `import --rpc`: killed with SIGKILL at random points and resumed, every slot once and the same
// chunk files as a straight run; a listed slot answered skipped is recorded and not asked again.
// `import --rpc`, `dump` + `import` and `serve --rpc --from-slot` over one fake chain (skipped
// slots, -32004s, 429s): the three datasets answer the same queries byte for byte.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runDump } from '../src/cli/commands/dump-blocks.ts'
import { runImport } from '../src/ingest/import/index.ts'
import { BLOCK_MEMBERS, fieldsOf, SELECTOR_NAMES } from '../src/catalogue.ts'
import { RpcInput, SKIPPED_FILE } from '../src/cli/commands/import-rpc.ts'
import { serve } from '../src/cli/commands/serve.ts'
import { DEFAULT_TEMPLATE, readArchiveLines, SAMPLE_TEMPLATE } from '../src/ingest/fake-node/templates.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { type FakeNodeOptions } from '../src/ingest/fake-node/types.ts'
import { createLogger } from '../src/log.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import type { BlockStore } from '../src/store/types.ts'
import { benchQueries, runEngine } from './support/conformance.ts'
import { tempDir } from './support/cold/util.ts'
import { serveOptions } from './support/serve-options.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const CHAIN: FakeNodeOptions = {
  txPerBlock: 4,
  intervalMs: 0,
  finalityLag: 2,
  skipRate: 0.3,
  rate429: 0.05,
  retryAfterSec: 0,
  notAvailableRate: 0.08,
}

/** the slots of the dataset directory's blocks, in order */
async function slotsOf(dir: string): Promise<number[]> {
  const s = await openDatasetDir(dir)
  const out: number[] = []
  for await (const c of s.cold.chunks(0, Number.MAX_SAFE_INTEGER)) out.push(...Array.from(c.header('number')))
  await s.close()
  return out
}

function chunkFiles(dir: string): Map<string, Buffer> {
  const d = join(dir, 'cold', 'chunks')
  return new Map(
    readdirSync(d)
      .sort()
      .map((f) => [f, readFileSync(join(d, f))]),
  )
}

test('import --rpc killed with SIGKILL at random points and resumed: every slot once, the chunk files of a straight run', async (t) => {
  const node = await FakeSolanaNode.start({ ...CHAIN, initialBlocks: 70, seed: 31 })
  try {
    const chain = node.chain().filter((b) => b.slot <= node.finalizedSlot)
    // the range ends on a slot the node lists but answers as skipped (in the last gap)
    let k = chain.length - 1
    while (chain[k].slot - chain[k - 1].slot < 2) k--
    const phantom = chain[k].slot - 1
    node.answerSkipped(phantom, -32007)
    const to = phantom
    const want = chain.filter((b) => b.slot <= to).map((b) => b.slot)
    const work = tempDir()
    const args = (dir: string) => [
      'src/cli/main.ts',
      'import',
      dir,
      '--rpc',
      node.url,
      '--from',
      String(node.firstSlot),
      '--to',
      String(to),
      '--chunk-blocks',
      '6',
      '--workers',
      '2',
      '--rpc-rps',
      '80',
      '--no-progress',
    ]
    /**
     * a run of the import, killed (`kill`) once it made `requests` more getBlock calls, or when
     * `requests` is 0 after `ms` (before its first request: tsx's start-up takes ~0.5 s)
     */
    const run = (dir: string, kill: { requests: number; ms: number } | null) =>
      new Promise<{ killed: boolean; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', ...args(dir)], {
          cwd: ROOT,
          stdio: ['ignore', 'ignore', 'pipe'],
        })
        let stderr = ''
        child.stderr!.on('data', (d) => (stderr += d))
        const base = node.stats.getBlock
        const t0 = Date.now()
        const timer =
          kill === null
            ? null
            : setInterval(() => {
                const due =
                  kill.requests === 0 ? Date.now() - t0 >= kill.ms : node.stats.getBlock - base >= kill.requests
                if (due) child.kill('SIGKILL')
              }, 2)
        child.on('exit', (code, signal) => {
          if (timer) clearInterval(timer)
          if (signal === 'SIGKILL') resolve({ killed: true, stderr })
          else if (code === 0) resolve({ killed: false, stderr })
          else reject(new Error(`import exited ${code}: ${stderr}`))
        })
      })
    const straight = join(work, 'straight')
    await run(straight, null)
    assert.deepEqual(await slotsOf(straight), want)

    const dir = join(work, 'killed')
    // kills at random points from before the first request on: after 0-8 more getBlock calls (a
    // run makes ~70 with retries: five kills leave work for the last run), by the requests
    // rather than by time, so that a machine's speed does not decide whether a run ends first
    const points: string[] = []
    for (let i = 0; points.length < 5 && i < 20; i++) {
      const kill = { requests: Math.floor(Math.random() * 9), ms: Math.round(50 + Math.random() * 400) }
      const r = await run(dir, kill)
      if (r.killed) points.push(kill.requests === 0 ? `${kill.ms} ms` : `${kill.requests} requests`)
    }
    assert.ok(points.length >= 5, `killed ${points.length} times`)
    await run(dir, null)
    assert.deepEqual(await slotsOf(dir), want, 'every slot once')
    assert.deepEqual(chunkFiles(dir), chunkFiles(straight), 'the same chunk files, byte for byte')
    // the slot answered skipped is recorded once met, and not asked for again by a later run
    assert.match(readFileSync(join(dir, SKIPPED_FILE), 'utf8'), new RegExp(`^${phantom} -32007$`, 'm'))
    const asked = node.stats.skippedAnswers
    const getBlocks = node.stats.getBlock
    const again = await run(dir, null)
    assert.equal(node.stats.skippedAnswers, asked, 'the recorded slot is not asked for again')
    assert.equal(node.stats.getBlock, getBlocks)
    assert.match(again.stderr, /imported 0 blocks/)
    t.diagnostic(`killed at ${points.join(', ')}`)
  } finally {
    await node.stop()
  }
})

/** the answers of the bench queries and a query of every field over [from, to] */
async function answers(store: BlockStore, from: number, to: number): Promise<string> {
  const bodies = benchQueries().map((q) => q.body)
  // every field of every kind, every record
  const fields: Record<string, Record<string, boolean>> = {}
  for (const sel of SELECTOR_NAMES) fields[sel] = Object.fromEntries(fieldsOf(sel).map((f) => [f.name, true]))
  const all: Record<string, unknown> = { fromBlock: from, includeAllBlocks: true, fields }
  for (const { member } of BLOCK_MEMBERS) all[member] = [{}]
  bodies.push(all)
  const out: string[] = []
  for (const body of bodies) {
    const r = await runEngine(store, { body: { ...body, fromBlock: from }, to, bigintsAsNumbers: false })
    out.push(r.lines.map((l) => `${l.number} ${l.hash} ${l.line}`).join('\n'))
  }
  return out.join('\n--\n')
}

test('import --rpc, dump + import and serve --rpc --from-slot store the same chain: same answers, byte for byte', async () => {
  // templates holding legacy, v0 and version 1 transactions: blocks of the bundled sample from its
  // block 120 on (v1 appended to each) and the mainnet block (v0 with lookups), 8 a block
  const sample = readArchiveLines(SAMPLE_TEMPLATE)
  const node = await FakeSolanaNode.start({
    ...CHAIN,
    txPerBlock: 8,
    templateLines: [...sample.slice(120, 140), ...readArchiveLines(DEFAULT_TEMPLATE)],
    initialBlocks: 50,
    seed: 32,
    gzip: true,
  })
  const work = tempDir()
  try {
    const from = node.chain()[3].slot
    // 40 blocks: two of the follower's batches of 20 finalized blocks, moved to its cold store
    // without waiting for the 30 s of a partial batch
    const chain = node
      .chain()
      .filter((b) => b.slot >= from && b.slot <= node.finalizedSlot)
      .slice(0, 40)
    assert.equal(chain.length, 40)
    const to = chain[chain.length - 1].slot
    const flags = { from: String(from), to: String(to), rpcConcurrency: '4' }
    // import --rpc
    const a = join(work, 'rpc')
    const input = await RpcInput.open(a, node.url, flags, () => {})
    await runImport(a, [], { input, progress: 'none', workers: 2 })
    input.close()
    // dump, then import
    const file = join(work, 'dump.jsonl')
    const out = new PassThrough()
    const parts: Buffer[] = []
    out.on('data', (c: Buffer) => parts.push(c))
    await runDump(node.url, flags, out, () => {})
    writeFileSync(file, Buffer.concat(parts))
    const b = join(work, 'dump')
    await runImport(b, [file], { progress: 'none', workers: 2 })
    assert.deepEqual(chunkFiles(a), chunkFiles(b), 'the same chunk files')
    // serve --rpc --from-slot: streams served while it backfills
    const c = join(work, 'serve')
    const logger = createLogger({ level: 'silent' })
    const s = await serve(
      serveOptions({ rpc: node.url, dataDir: c, fromSlot: String(from), rpcRps: '60', commitment: 'finalized' }),
      { logger },
    )
    try {
      await s.ready
      const meta = (await (await fetch(`${s.url}/datasets/solana-mainnet/metadata`)).json()) as { start_block: number }
      assert.equal(meta.start_block, from)
      let during = false
      for (let i = 0; i < 600; i++) {
        const head = (await (await fetch(`${s.url}/datasets/solana-mainnet/head`)).json()) as { number: number } | null
        if (head && !during && head.number < to) {
          const res = await fetch(`${s.url}/datasets/solana-mainnet/stream`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              type: 'solana',
              fromBlock: from,
              toBlock: head.number,
              includeAllBlocks: true,
              fields: { block: { number: true } },
            }),
          })
          assert.equal(res.status, 200)
          const text = await res.text()
          assert.ok(text.includes(`"number":${chain[0].slot}`), `a stream during the backfill: ${text.slice(0, 300)}`)
          during = true
        }
        const fin = (await (await fetch(`${s.url}/datasets/solana-mainnet/finalized-head`)).json()) as {
          number: number
        } | null
        if (fin && fin.number >= to) break
        await sleep(100)
      }
      assert.ok(during, 'a stream was served while the follower was behind')
    } finally {
      await s.stop()
    }
    assert.ok(node.stats.injected429 > 0 && node.stats.notAvailable > 0, JSON.stringify(node.stats))
    const stores = await Promise.all([a, b, c].map((d) => openDatasetDir(d)))
    try {
      const [x, y, z] = await Promise.all(stores.map((st) => answers(st, from, to)))
      assert.ok(x.length > 1000)
      for (const version of ['"legacy"', '0', '1'])
        assert.ok(x.includes(`"version":${version}`), `the chain holds transactions of version ${version}`)
      assert.equal(y, x, 'dump + import answers as import --rpc')
      assert.equal(z, x, 'serve --from-slot answers as import --rpc')
    } finally {
      for (const st of stores) await st.close()
    }
  } finally {
    await node.stop()
  }
})
