/**
 * Object-store stall: a read replica (`serve --dataset-dir s3://…`, in process, --s3-timeout-ms
 * 1000) reads a bucket on a real S3 server (s3rver) through a TCP proxy on loopback; the proxy is
 * told to forward the first 100 bytes of each answer and then hold the rest (connections stay
 * open). Held when a query over a chunk not cached yet answers (an error) within 20 s (6 attempts
 * of 1 s plus the backoffs), each timed-out attempt is logged naming the object, /ready turns 503
 * within 10 s of the stall and 200 within 10 s of the heal, and the chunk is then served exactly as
 * a server over the same dataset on local disk serves it. (Before the timeouts, such a query hung
 * for good: 260 s, 0 bytes, nothing logged, /ready 200.)
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { importToS3 } from '../../src/ingest/import/index.ts'
import { serve, type Serving } from '../../src/cli/commands/serve.ts'
import { createLogger } from '../../src/log.ts'
import { s3ClientFromEnv } from '../../src/store/s3.ts'
import { writeArchive } from '../../test/support/cold/archive-gen.ts'
import { postJson, request } from '../../test/support/http/client.ts'
import { s3Env, startS3, stopS3 } from '../../test/support/s3/server.ts'
import { StallProxy } from '../../test/support/s3/stall-proxy.ts'
import { serveOptions } from '../../test/support/serve-options.ts'

const QUERY_BOUND_S = 20
const READY_BOUND_S = 10

/** seconds until `ok()` holds, or null after `s` seconds */
async function secondsUntil(ok: () => Promise<boolean>, s: number): Promise<number | null> {
  const t0 = performance.now()
  while (performance.now() - t0 < s * 1000) {
    if (await ok()) return (performance.now() - t0) / 1000
    await new Promise((r) => setTimeout(r, 50))
  }
  return null
}

export async function run(): Promise<{ scenario: string; held: boolean; detail: string }> {
  const work = mkdtempSync(join(tmpdir(), 'solportal-resilience-s3-'))
  const saved = { ...process.env }
  const { s3, port } = await startS3(join(work, 's3'), 0, true)
  const proxy = await StallProxy.start(port)
  const servers: Serving[] = []
  try {
    const archive = join(work, 'a.jsonl')
    await writeArchive(archive, { count: 32, txPerBlock: 20 })
    const staging = join(work, 'staging')
    const client = s3ClientFromEnv(s3Env(port))
    const io = { stagingDir: staging, targetBlocks: 8, workers: 1, progress: 'none' as const, client }
    await importToS3('s3://bucket/ds', [archive], io, () => {})
    const chunk = readdirSync(join(staging, 'cold', 'chunks')).sort()[2]
    const [first, last] = /^(\d+)-(\d+)-/.exec(chunk)!.slice(1).map(Number)
    const query = {
      type: 'solana',
      fromBlock: first,
      toBlock: last,
      fields: { transaction: { signatures: true } },
      transactions: [{}],
    }

    const silent = createLogger({ level: 'silent' })
    const local = await serve(serveOptions({ datasetDir: staging, quiet: true }), { logger: silent })
    servers.push(local)
    await local.ready
    const want = (await postJson(`${local.url}/datasets/solana-mainnet/stream`, query)).text

    Object.assign(process.env, s3Env(proxy.port))
    const logs: string[] = []
    const logger = createLogger({ level: 'warn', destination: { write: (s: string) => void logs.push(s) } })
    const replica = await serve(
      serveOptions({ datasetDir: 's3://bucket/ds', s3PollMs: '500', s3TimeoutMs: '1000', quiet: true }),
      { logger },
    )
    servers.push(replica)
    await replica.ready
    const ready = async () => (await request(`${replica.url}/ready`)).status
    const readyBefore = await ready()

    proxy.stall(100)
    const t0 = performance.now()
    const during = await Promise.race([
      postJson(`${replica.url}/datasets/solana-mainnet/stream`, query),
      new Promise<null>((r) => setTimeout(() => r(null), 120_000).unref()),
    ])
    const querySeconds = (performance.now() - t0) / 1000
    const to503 = await secondsUntil(async () => (await ready()) === 503, READY_BOUND_S)
    const timeouts = logs.filter((l) => l.includes(chunk) && /no progress for 1000 ms/.test(l)).length
    proxy.heal()
    const to200 = await secondsUntil(async () => (await ready()) === 200, READY_BOUND_S)
    const after = await postJson(`${replica.url}/datasets/solana-mainnet/stream`, query)
    const same = after.status === 200 && after.text === want && want.length > 0

    const held =
      readyBefore === 200 &&
      during !== null &&
      during.status >= 500 &&
      querySeconds < QUERY_BOUND_S &&
      timeouts >= 1 &&
      to503 !== null &&
      to200 !== null &&
      same
    return {
      scenario: 'object-store stall: a replica behind a proxy that forwards 100 bytes, then holds',
      held,
      detail:
        `query over an uncached chunk: ${during ? `${during.status}` : 'no answer'} after ${querySeconds.toFixed(1)} s ` +
        `(bound ${QUERY_BOUND_S} s), ${timeouts} timed-out attempts logged naming the chunk; /ready 503 ` +
        `${to503 === null ? 'never' : `after ${to503.toFixed(1)} s`}, 200 again ${to200 === null ? 'never' : `${to200.toFixed(1)} s after the heal`}; ` +
        `the chunk then served ${same ? 'as a local server serves it' : `differently (${after.status})`}`,
    }
  } finally {
    for (const s of servers.reverse()) await s.stop()
    await proxy.close()
    await stopS3(s3)
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
    rmSync(work, { recursive: true, force: true })
  }
}
