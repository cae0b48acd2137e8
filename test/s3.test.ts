/**
 * Datasets on S3-compatible storage, end to end against a real S3 server (s3rver on loopback):
 * `solportal import s3://...` (a real CLI process), two read replicas (`serve --dataset-dir
 * s3://...`, in-process servers) answering exactly like a server over a local dataset directory,
 * a second import appearing in both replicas through the pointer poll, and an outage of the S3
 * server during that import retried.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { importToS3, runImport } from '../src/ingest/import/index.ts'
import { serve, type ServeOptions, type Serving } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { openS3Replica, s3ClientFromEnv } from '../src/store/s3.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { s3Env, startS3, stopS3 } from './support/s3/server.ts'
import { tempDir } from './support/cold/util.ts'
import { postJson, request, streamAll } from './support/http/client.ts'
import { serveOptions } from './support/serve-options.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const options = (o: Partial<ServeOptions>): ServeOptions =>
  serveOptions({ headWaitMs: '0', maxStreams: '64', quiet: true, ...o })

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: ROOT, env })
    let stderr = ''
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    p.on('error', reject)
    p.on('close', (status) => resolve({ status, stderr }))
  })
}

const QUERIES = (from: number, to: number): Record<string, unknown>[] => [
  { type: 'solana', fromBlock: from, toBlock: to, fields: { block: { number: true, hash: true, parentHash: true } } },
  {
    type: 'solana',
    fromBlock: from,
    toBlock: to,
    fields: { block: { number: true }, transaction: { signatures: true, fee: true, feePayer: true } },
    transactions: [{}],
  },
  {
    type: 'solana',
    fromBlock: from,
    toBlock: to,
    fields: { block: { number: true }, instruction: { programId: true, data: true, accounts: true } },
    instructions: [{ isCommitted: true }],
  },
]

async function answers(url: string, from: number, to: number): Promise<string[][]> {
  const out: string[][] = []
  for (const q of QUERIES(from, to)) out.push((await streamAll(`${url}/datasets/solana-mainnet`, q)).lines)
  return out
}

async function headOf(url: string): Promise<number | null> {
  const r = await request(`${url}/datasets/solana-mainnet/head`)
  return r.status === 200 ? ((JSON.parse(r.text) as { number: number } | null)?.number ?? null) : null
}

async function until(what: string, ok: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const t0 = Date.now()
  while (!(await ok())) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not reached in ${ms} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

test('import to S3, two replicas answer like a local dataset, new blocks appear, an outage is retried', async () => {
  const work = tempDir('solportal-s3-')
  const a = join(work, 'a.jsonl')
  const b = join(work, 'b.jsonl')
  await writeArchive(a, { count: 30, txPerBlock: 6 })
  await writeArchive(b, { count: 20, txPerBlock: 6, startSlot: 300_000_100 })
  const s3dir = join(work, 's3')
  let { s3, port } = await startS3(s3dir, 0, true)
  const env = s3Env(port)
  Object.assign(process.env, env) // the in-process replicas take the same standard variables
  const servers: Serving[] = []
  try {
    const staging = join(work, 'staging')
    const url = 's3://bucket/solana/main'
    const common = ['--chunk-blocks', '8', '--workers', '1', '--no-progress']
    const cli = await run(['import', url, a, '--staging-dir', staging, ...common], env)
    assert.equal(cli.status, 0, cli.stderr)
    assert.match(cli.stderr, /published to s3:\/\/bucket\/solana\/main .*: \d+ objects/)

    const local = join(work, 'local')
    await runImport(local, [a], { targetBlocks: 8, workers: 1, progress: 'none' })

    const localSrv = await serve(options({ datasetDir: local }), { logger: createLogger({ level: 'silent' }) })
    servers.push(localSrv)
    await localSrv.ready
    const replicaLogs: string[] = []
    const logger = createLogger({
      level: 'warn',
      destination: { write: (s: string) => void replicaLogs.push(s) },
    })
    const cacheDir = join(work, 'cache2')
    for (const o of [{}, { cacheDir, cacheDiskMb: '1' }]) {
      const s = await serve(options({ datasetDir: url, s3PollMs: '200', ...o }), { logger })
      servers.push(s)
      await s.ready
    }
    const [ref, r1, r2] = servers.map((s) => s.url)
    const first = (await headOf(ref))!
    const start = 300_000_000 // writeArchive's first slot
    const want = await answers(ref, start, first)
    assert.ok(
      want[1].length >= 10 && want[2].length >= 10,
      `the queries return blocks: ${want.map((w) => w.length)} ${first}`,
    )
    for (const r of [r1, r2]) {
      assert.equal(await headOf(r), first)
      assert.deepEqual(await answers(r, start, first), want)
    }
    // only chunk files were fetched into the cache (whole objects, sha256 checked)
    assert.ok(readdirSync(join(cacheDir, 'cold', 'chunks')).every((f) => f.endsWith('.spc')))

    // the S3 server is down when the second import starts publishing; it comes back a second later
    await stopS3(s3)
    const importLog: string[] = []
    const second = importToS3(
      url,
      [b],
      { stagingDir: staging, targetBlocks: 8, workers: 1, progress: 'none', client: s3ClientFromEnv(env) },
      (m) => void importLog.push(m),
    )
    // bring it back once the import and a replica's poll have met the outage (a fixed sleep raced a
    // slow import on a loaded box; an import that met it at once left the replicas no poll in it)
    const retrying = /s3: (LIST|PUT|GET) s3:\/\/bucket\/solana\/main\/.* failed .*retrying/
    const pollFailed = () => replicaLogs.some((l) => /POINTER\.json/.test(l))
    for (const t0 = Date.now(); !importLog.some((l) => retrying.test(l)) || !pollFailed();) {
      if (Date.now() - t0 > 120_000)
        assert.fail(`the outage was not met (poll failed: ${pollFailed()}):\n${importLog.join('')}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    ;({ s3 } = await startS3(s3dir, port))
    const res = await second
    assert.equal(res.imported, 20)
    assert.ok(res.uploaded > 0)
    assert.ok(
      importLog.some((l) => retrying.test(l)),
      importLog.join(''),
    )
    await runImport(local, [b], { targetBlocks: 8, workers: 1, progress: 'none' })
    const last = (await headOf(ref))!
    assert.ok(last > first)
    // both replicas see the new blocks through the pointer poll
    for (const r of [r1, r2]) await until(`replica ${r} at ${last}`, async () => (await headOf(r)) === last)
    const all = await answers(ref, start, last)
    for (const r of [r1, r2]) assert.deepEqual(await answers(r, start, last), all)
    // the replicas kept polling through the outage (failures logged with the object)
    assert.ok(pollFailed(), 'a failed poll is logged with the key')
    // an importer with an empty staging directory fetches the dataset first and publishes only
    // what changed (here nothing but the pointer: the blocks are all present)
    const again = await importToS3(
      url,
      [b],
      {
        stagingDir: join(work, 'staging2'),
        targetBlocks: 8,
        workers: 1,
        progress: 'none',
        client: s3ClientFromEnv(env),
      },
      () => {},
    )
    assert.deepEqual([again.imported, again.skipped, again.uploaded], [0, 20, 1])
    assert.equal(await headOf(r1), last)
    // a disk cache of 1 byte: every chunk is fetched, used, then evicted when its query is over
    const tiny = await openS3Replica(url, { cacheDiskBytes: 1, client: s3ClientFromEnv(env), pollMs: 60_000 })
    try {
      let blocks = 0
      for await (const c of tiny.store.chunks(start, last, true)) blocks += c.blockCount
      assert.equal(blocks, 50)
      assert.deepEqual(readdirSync(join(tiny.cacheDir, 'cold', 'chunks')), [])
      assert.equal((await tiny.store.chainBefore(last + 1, 3)).at(-1)?.number, last)
    } finally {
      await tiny.close()
    }
    // a stream from a replica over the range
    const r = await postJson(`${r2}/datasets/solana-mainnet/stream`, QUERIES(last, last)[0])
    assert.equal(r.status, 200)
  } finally {
    for (const s of servers) await s.stop()
    await stopS3(s3)
  }
})
