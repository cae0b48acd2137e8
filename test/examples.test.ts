/**
 * The clients of examples/ against the real server, with a tiny response budget so that they must
 * resume many times: the curl + jq one (written from the spec alone) over the sample, and the
 * TypeScript one over a live fake chain that forks under it.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { createRealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { sampleLines } from '../src/ingest/sample.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'

const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'

// The example needs curl and jq; a machine with only Node.js skips it (and says so).
const missing = ['curl', 'jq', 'bash'].filter((t) => spawnSync(t, ['--version']).status !== 0)

test(
  'examples/whirlpool-swaps.sh lists every committed Whirlpool swap with its signature',
  { skip: missing.length ? `not installed: ${missing.join(', ')}` : false },
  async () => {
    // expected, straight from the normalized records
    const expected: string[] = []
    for await (const line of sampleLines()) {
      const { block } = normalizeBlock(line)
      for (const ix of block.instructions) {
        if (ix.programId !== WHIRLPOOL || !ix.isCommitted || !ix.dataPrefix.startsWith('0xf8c69e91e17587c8')) continue
        const tx = block.transactions.find((t) => t.transactionIndex === ix.transactionIndex)!
        expected.push(
          [
            block.header.number,
            tx.signatures[0],
            ix.instructionAddress.join('.'),
            ix.accounts.slice(0, 3).join(','),
          ].join('\t'),
        )
      }
    }
    assert.ok(expected.length > 0, 'the sample holds Whirlpool swaps')

    const { store } = await loadStaticStore(sampleLines())
    const server = new PortalServer({
      datasets: new DatasetRegistry([{ name: 'solana-mainnet', aliases: [], store, realTime: false }]),
      limits: { responseBytes: 2000 },
      rateLimit: null,
      log: () => {},
    })
    const url = await server.listen(0, '127.0.0.1')
    try {
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        // spawnSync would block the server's event loop: run it asynchronously
        import('node:child_process').then(({ execFile }) => {
          execFile('bash', ['examples/whirlpool-swaps.sh', `${url}/datasets/solana-mainnet`], (err, stdout, stderr) =>
            resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          )
        })
      })
      assert.equal(r.status, 0, r.stderr)
      assert.deepEqual(r.stdout.trim().split('\n'), expected)
    } finally {
      await server.close()
    }
  },
)

test('examples/stream-client.ts follows a live chain through a fork: resumes, takes the 409, rolls back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-example-client-'))
  const node = await FakeSolanaNode.start({ intervalMs: 0, initialBlocks: 30, finalityLag: 32, txPerBlock: 3, seed: 5 })
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: dir,
    startSlot: node.firstSlot,
    pollIntervalMs: 10,
    finalizeIntervalMs: 50,
    noSync: true,
    logger: { info() {}, warn() {}, error() {} },
  })
  ds.start()
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'live', aliases: [], store: ds.store, realTime: true }]),
    // small responses: the client must resume many times
    limits: { responseBytes: 3000, headWaitMs: 500 },
    rateLimit: null,
    log: () => {},
  })
  const base = `${await server.listen(0, '127.0.0.1')}/datasets/live`
  const to = node.tip.slot + 40
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'examples/stream-client.ts', base, String(node.firstSlot), String(to), '--follow'],
    { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)))
  const seen = (slot: number) => out.includes(`block ${slot} `)
  const until = async (cond: () => boolean) => {
    const t0 = Date.now()
    while (!cond()) {
      if (Date.now() - t0 > 60_000) throw new Error(`not reached; client stdout: ${out.slice(-500)} stderr: ${err}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  }
  try {
    // the client holds the tip; then the node replaces its last 3 blocks
    await until(() => seen(node.tip.slot))
    const forkedAt = node.tip.slot
    node.fork(3)
    while (node.tip.slot < to) {
      node.produce()
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.equal(await exited, 0, err)
    assert.match(out, /^rollback \d+$/m, 'the client met the fork')
    // replaying the output (blocks appended, rollbacks cutting back) gives the node's chain
    const mine: { slot: number; hash: string }[] = []
    for (const l of out.trim().split('\n')) {
      const [what, n, hash] = l.split(' ')
      if (what === 'rollback') while (mine.length && mine.at(-1)!.slot > Number(n)) mine.pop()
      else mine.push({ slot: Number(n), hash })
    }
    const want = node
      .chain()
      .filter((b) => b.slot >= node.firstSlot && b.slot <= to)
      .map((b) => ({ slot: b.slot, hash: b.hash }))
    assert.deepEqual(mine, want)
    assert.ok(
      out.split('\n').filter((l) => l.startsWith('block ')).length > want.length,
      `blocks above the fork at ${forkedAt} were read twice`,
    )
  } finally {
    child.kill()
    await server.close()
    await ds.stop()
    await node.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})
