/**
 * Rendering in worker threads (src/server/render-pool.ts) over mainnet-shaped blocks: the same
 * wide queries through the real server on loopback with the pool off (0) and on (PARALLEL_THREADS,
 * default 2), rounds alternating in one run, identity and gzip, one stream and N concurrent ones.
 *
 * Data: PARALLEL_BLOCKS generated blocks of PARALLEL_TXS transactions (default 150 of 1,000: ~300
 * non-vote transactions and ~3,100 instructions each, votes dropped at import), generated and
 * imported into bench/tmp/parallel once (kept between runs).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import zlib from 'node:zlib'
import { REPO_ROOT } from '../src/ingest/sample.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { RenderPool } from '../src/server/render-pool.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { allFields, everything, TOKEN } from './support.ts'

const BLOCKS = Number(process.env.PARALLEL_BLOCKS ?? 150)
const TXS = Number(process.env.PARALLEL_TXS ?? 1000)
const THREADS = Number(process.env.PARALLEL_THREADS ?? 2)
const ROUNDS = Number(process.env.PARALLEL_ROUNDS ?? 3)
const CACHE_MB = Number(process.env.PARALLEL_CACHE_MB ?? 192)
const STREAMS = Number(process.env.PARALLEL_STREAMS ?? 3)
const FULL_BLOCKS = Number(process.env.PARALLEL_FULL_BLOCKS ?? 15)
const TOKEN_BLOCKS = Number(process.env.PARALLEL_TOKEN_BLOCKS ?? 60)

function log(msg: string): void {
  process.stderr.write(`parallel: ${msg}\n`)
}

function cli(args: string[]): void {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  if (r.status !== 0) throw new Error(`solportal ${args[0]} failed`)
}

function prepare(): string {
  const dir = join(REPO_ROOT, 'bench', 'tmp', 'parallel', `b${BLOCKS}-t${TXS}`)
  const dataset = join(dir, 'dataset')
  if (existsSync(join(dataset, 'dataset.json'))) return dataset
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const archive = join(dir, 'blocks.jsonl.gz')
  log(`generating ${BLOCKS} blocks of ${TXS} transactions`)
  cli(['gen', '--blocks', String(BLOCKS), '--txs-per-block', String(TXS), '--from-slot', '310000000', '--out', archive])
  log('importing')
  cli(['import', '--no-progress', dataset, archive])
  return dataset
}

interface Got {
  wire: number
  json: number
}

function post(url: string, body: string, gzip: boolean): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json', ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
      },
      (res) => {
        let wire = 0
        let json = 0
        // gzip: the JSON bytes counted after decoding (in this process, on the threadpool)
        const gunzip = gzip ? zlib.createGunzip() : null
        gunzip?.on('data', (c: Buffer) => (json += c.length))
        res.on('data', (c: Buffer) => {
          wire += c.length
          if (gunzip) gunzip.write(c)
          else json += c.length
        })
        res.on('end', () => {
          if (!gunzip) return resolve({ wire, json })
          gunzip.end(() => resolve({ wire, json }))
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.floor(s.length / 2)]
}

export async function run(): Promise<string> {
  const dir = prepare()
  const store = await openDatasetDir(dir)
  const from = store.firstBlock()!
  const head = store.head()!.number
  const nums: number[] = []
  for await (const c of store.chunks(from, head, true)) {
    const n = c.header('number')
    for (let i = 0; i < c.blockCount; i++) nums.push(n[i])
  }
  const fullTo = nums[Math.min(nums.length, FULL_BLOCKS) - 1]
  const tokenTo = nums[Math.min(nums.length, TOKEN_BLOCKS) - 1]
  const queries = [
    {
      name: `Token program instructions, all fields (${Math.min(nums.length, TOKEN_BLOCKS)} blocks)`,
      body: {
        type: 'solana',
        fromBlock: from,
        toBlock: tokenTo,
        fields: { block: { number: true, hash: true }, instruction: allFields('instruction') },
        instructions: [{ programId: [TOKEN] }],
      },
    },
    {
      name: `everything, all fields (${Math.min(nums.length, FULL_BLOCKS)} blocks)`,
      body: everything(from, fullTo),
    },
  ]
  // each worker: the in-thread server's cache (openDatasetDir's default, 192 MiB) over the workers
  // (96 MiB each for 2: the 60-block Token query's columns fit, no run decodes them again)
  const pool = new RenderPool({ threads: THREADS, cacheBytes: Math.floor((CACHE_MB * 2 ** 20) / THREADS) })
  const limits = { responseTimeMs: 3_600_000, responseBytes: 2 ** 40 }
  const datasets = () =>
    new DatasetRegistry([{ name: 'd', aliases: [], store, realTime: false, coldDir: store.cold.dir }])
  const plain = new PortalServer({ datasets: datasets(), limits, rateLimit: null, log: () => {} })
  const pooled = new PortalServer({ datasets: datasets(), limits, rateLimit: null, log: () => {}, renderPool: pool })
  const urls = {
    0: (await plain.listen(0, '127.0.0.1')) + '/datasets/d/stream',
    [THREADS]: (await pooled.listen(0, '127.0.0.1')) + '/datasets/d/stream',
  } as Record<number, string>
  const load0 = os.loadavg()
  const rows: string[] = []
  const eluRows: string[] = []
  log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  )
  for (const q of queries) {
    const body = JSON.stringify(q.body)
    // warm both (caches, worker start)
    await post(urls[0], body, false)
    await post(urls[THREADS], body, false)
    for (const n of [1, STREAMS]) {
      const mbs: Record<string, number[]> = {}
      let json = 0
      let wireGz = 0
      for (let r = 0; r < ROUNDS; r++) {
        for (const gzip of [false, true]) {
          // alternate which goes first
          const order = r % 2 === 0 ? [0, THREADS] : [THREADS, 0]
          for (const t of order) {
            const elu0 = performance.eventLoopUtilization()
            const t0 = performance.now()
            const got = await Promise.all(Array.from({ length: n }, () => post(urls[t], body, gzip)))
            const s = (performance.now() - t0) / 1000
            const elu = performance.eventLoopUtilization(elu0).utilization
            const total = got.reduce((a, g) => a + g.json, 0)
            json = got[0].json
            if (gzip) wireGz = got[0].wire
            ;(mbs[`${t}:${gzip}`] ??= []).push(total / 1e6 / s)
            log(
              `${q.name}, ${n} stream(s), pool ${t}, ${gzip ? 'gzip' : 'identity'}: ${(total / 1e6 / s).toFixed(1)} MB/s, main thread busy ${(elu * 100).toFixed(0)}%`,
            )
            ;(mbs[`elu${t}:${gzip}`] ??= []).push(elu)
          }
        }
      }
      const m = (t: number, gz: boolean) => median(mbs[`${t}:${gz}`])
      const e = (t: number, gz: boolean) => median(mbs[`elu${t}:${gz}`])
      rows.push(
        `| ${q.name} | ${n} | ${(json / 1e6).toFixed(1)} | ${m(0, false).toFixed(1)} | ${m(THREADS, false).toFixed(1)} | ${(m(THREADS, false) / m(0, false)).toFixed(2)}× | ${m(0, true).toFixed(1)} | ${m(THREADS, true).toFixed(1)} | ${(m(THREADS, true) / m(0, true)).toFixed(2)}× | ${(wireGz / json).toFixed(3)} |`,
      )
      eluRows.push(
        `| ${q.name} | ${n} | ${e(0, false).toFixed(2)} | ${e(0, true).toFixed(2)} | ${e(THREADS, false).toFixed(2)} | ${e(THREADS, true).toFixed(2)} |`,
      )
    }
  }
  const load1 = os.loadavg()
  const rss = process.resourceUsage().maxRSS / 1024
  await plain.close()
  await pooled.close()
  await pool.close()
  await store.close()
  const la = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ')
  return [
    `## Rendering in worker threads: pool 0 vs ${THREADS} (${nums.length} generated mainnet-shaped blocks of ${TXS} tx)`,
    '',
    `Real server on loopback, client in the same process; MB/s of JSON lines (before gzip) over all the streams, the upper median of ${ROUNDS} rounds (alternating which server goes first). ${os.availableParallelism()} cores; load average ${la(load0)} at start, ${la(load1)} at end. Peak RSS of the process (server, pool, client) ${rss.toFixed(0)} MiB.`,
    '',
    `| query | streams | JSON MB per stream | pool 0 MB/s | pool ${THREADS} MB/s | ratio | pool 0 gzip MB/s | pool ${THREADS} gzip MB/s | ratio | gzip ratio |`,
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Main thread event loop utilization (share of the time the main thread was busy, client included):`,
    '',
    `| query | streams | pool 0 identity | pool 0 gzip | pool ${THREADS} identity | pool ${THREADS} gzip |`,
    '|---|---|---|---|---|---|',
    ...eluRows,
  ].join('\n')
}
