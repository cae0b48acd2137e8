/**
 * Object storage that stalls, against a real S3 server (s3rver) behind a real TCP proxy on loopback
 * that accepts, forwards, then stops forwarding (the connection stays open): a replica's query
 * fetching a chunk ends within a bound with a logged timeout naming the object, /ready answers 503
 * while the store is unreachable and 200 again once it answers, the chunk is then served; a chunk
 * failing its sha256 is fetched again and answered; a shortened POINTER.json fails a replica's start
 * naming the object; an import's publication through a stalled store times out, retries and
 * completes once it answers.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { importToS3 } from '../src/ingest/import/index.ts'
import { serve, type Serving } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { openS3Replica, s3ClientFromEnv } from '../src/store/s3.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'
import { postJson, request } from './support/http/client.ts'
import { s3Env, startS3, stopS3 } from './support/s3/server.ts'
import { StallProxy } from './support/s3/stall-proxy.ts'
import { serveOptions } from './support/serve-options.ts'

const query = (from: number, to: number) => ({
  type: 'solana',
  fromBlock: from,
  toBlock: to,
  fields: { block: { number: true, hash: true }, transaction: { signatures: true, fee: true } },
  transactions: [{}],
})

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const t0 = Date.now()
  while (!(await ok())) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not reached in ${ms} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** the answer, or a failure when none came within `ms` (a stalled store used to hang it for good) */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout
  return Promise.race([
    p,
    new Promise<T>((_, fail) => (t = setTimeout(() => fail(new Error(`${what}: no answer in ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(t))
}

test('a stalled object store: bounded, logged, /ready 503 then 200; damaged chunks fetched again; shortened pointer named', async () => {
  const work = tempDir('solportal-s3-stall-')
  const [a, b] = ['a.jsonl', 'b.jsonl'].map((f) => join(work, f))
  await Promise.all([
    writeArchive(a, { count: 40, txPerBlock: 3 }),
    writeArchive(b, { count: 8, txPerBlock: 3, startSlot: 300_000_100 }),
  ])
  const { s3, port } = await startS3(join(work, 's3'), 0, true)
  const direct = s3ClientFromEnv(s3Env(port))
  const proxy = await StallProxy.start(port)
  const url = 's3://bucket/ds'
  const staging = join(work, 'staging')
  const servers: Serving[] = []
  try {
    const io = { stagingDir: staging, targetBlocks: 8, workers: 1, progress: 'none' as const, client: direct }
    await importToS3(url, [a], io, () => {})
    const chunks = readdirSync(join(staging, 'cold', 'chunks'))
      .sort()
      .map((file) => {
        const m = /^(\d+)-(\d+)-/.exec(file)!
        return { file, first: Number(m[1]), last: Number(m[2]) }
      })
    assert.ok(chunks.length >= 4, chunks.map((c) => c.file).join())

    const quiet = createLogger({ level: 'silent' })
    const ref = await serve(serveOptions({ datasetDir: staging, quiet: true }), { logger: quiet })
    servers.push(ref)
    await ref.ready
    const want = async (i: number) =>
      (await postJson(`${ref.url}/datasets/solana-mainnet/stream`, query(chunks[i].first, chunks[i].last))).text

    // the replica reaches the bucket through the proxy
    Object.assign(process.env, s3Env(proxy.port))
    const logs: string[] = []
    const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void logs.push(s) } })
    const cacheDir = join(work, 'cache')
    const replica = await serve(
      serveOptions({ datasetDir: url, cacheDir, s3PollMs: '200', s3TimeoutMs: '500', quiet: true }),
      { logger },
    )
    servers.push(replica)
    await replica.ready
    const stream = `${replica.url}/datasets/solana-mainnet/stream`
    const ask = (i: number) => postJson(stream, query(chunks[i].first, chunks[i].last))
    const ready = async () => (await request(`${replica.url}/ready`)).status
    assert.equal((await ask(0)).text, await want(0))
    assert.equal(await ready(), 200)
    // every request has its line (debug level)
    assert.ok(logs.some((l) => /GET s3:\/\/bucket\/ds\/cold\/chunks\/.*: done in \d+ ms \(attempt 1\)/.test(l)))

    // the store accepts, forwards the first bytes of each answer, then stalls
    const cachedFile = (i: number) => existsSync(join(cacheDir, 'cold', 'chunks', chunks[i].file))
    assert.ok(!cachedFile(2))
    proxy.stall(100)
    const stalled = await within(ask(2), 60_000, 'a query over an uncached chunk while the store stalls')
    assert.equal(stalled.status, 500)
    const chunkKey = `s3://bucket/ds/cold/chunks/${chunks[2].file}`
    const timedOut = logs.filter((l) => l.includes(`GET ${chunkKey} failed`) && /no progress for 500 ms/.test(l))
    assert.ok(timedOut.length >= 2, logs.slice(-5).join(''))
    assert.ok(logs.some((l) => l.includes(`GET ${chunkKey} failed`) && /giving up/.test(l)))
    // /ready: 503 naming the store while it stalls (the pointer poll keeps failing)
    await until('/ready 503', async () => (await ready()) === 503)
    const r503 = await request(`${replica.url}/ready`)
    assert.match(r503.text, /"status":"unavailable".*object store unreachable: GET s3:\/\/bucket\/ds\/.*no progress/)
    // the store answers again: /ready recovers, the chunk is fetched and served
    proxy.heal()
    await until('/ready 200 again', async () => (await ready()) === 200)
    assert.equal((await ask(2)).text, await want(2))

    // a chunk whose bytes fail their sha256 is fetched again (here: until the bucket holds the
    // right bytes again), not answered with a 500
    const key = `ds/cold/chunks/${chunks[3].file}`
    const get = async (k: string) =>
      Buffer.from(
        await (await direct.send(new GetObjectCommand({ Bucket: 'bucket', Key: k }))).Body!.transformToByteArray(),
      )
    const put = (k: string, body: Uint8Array) =>
      direct.send(new PutObjectCommand({ Bucket: 'bucket', Key: k, Body: body }))
    const good = await get(key)
    const bad = Buffer.from(good)
    bad[bad.length >> 1] ^= 0xff
    await put(key, bad)
    const answer = ask(3)
    await until('a damaged fetch retried', () =>
      logs.some((l) => l.includes(`GET s3://bucket/${key} failed`) && /damaged.*retrying/.test(l)),
    )
    await put(key, good)
    const fixed = await within(answer, 60_000, 'a query over a damaged chunk')
    assert.equal(fixed.status, 200, fixed.text)
    assert.equal(fixed.text, await want(3))

    // a shortened pointer: a replica's start fails naming the object
    const pointer = await get('ds/POINTER.json')
    await put('ds/POINTER.json', pointer.subarray(0, pointer.length >> 1))
    await assert.rejects(
      openS3Replica(url, { cacheDir: join(work, 'cache2'), client: direct, log: () => {} }),
      /^Error: s3:\/\/bucket\/ds\/POINTER\.json: not valid JSON \(\d+ bytes, shortened\?\)/,
    )
    await put('ds/POINTER.json', pointer)

    // an import publishing through the stalled store: its requests time out, are retried and logged,
    // and it completes once the store answers
    await ref.stop()
    servers.shift()
    proxy.stall(0)
    const importLog: string[] = []
    const second = importToS3(
      url,
      [b],
      { ...io, client: s3ClientFromEnv(s3Env(proxy.port)), retry: { timeoutMs: 500 } },
      (m) => void importLog.push(m),
    )
    await until('an import request timed out', () =>
      importLog.some((l) => /s3: (LIST|PUT) s3:\/\/bucket\/ds\/.* failed .*no progress for 500 ms.*retrying/.test(l)),
    )
    proxy.heal()
    const res = await within(second, 60_000, 'the import')
    assert.equal(res.imported, 8)
    const head = async () =>
      JSON.parse((await request(`${replica.url}/datasets/solana-mainnet/head`)).text) as { number: number }
    await until('the replica follows the new pointer', async () => (await head()).number >= 300_000_100)
  } finally {
    for (const s of servers) await s.stop()
    await proxy.close()
    await stopS3(s3)
  }
})
