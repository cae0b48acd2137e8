/**
 * Selective and wide queries in-process (`executeQuery` over `openDatasetDir`) on a dataset dir:
 * wall ms (best of N runs after one untimed run), output MB, MB/s, and a sha1 of the output lines
 * (to check results are byte-identical across formats / code versions).
 *
 * SELECTIVE_DIRS   comma-separated dataset dirs (default: the 10,000-block compare dataset)
 * SELECTIVE_RUNS   timed runs per query (default 2)
 * SELECTIVE_ONLY   comma-separated query name prefixes to run
 * SELECTIVE_POOL, SELECTIVE_ACCOUNT, SELECTIVE_PAYER   the queries' parameters (defaults below)
 * SELECTIVE_CACHE_MB   the store's cache budget (default: the store's own default)
 * SELECTIVE_FROM   first block (default 310000000, `gen --from-slot`); the range ends at the dataset's head.
 * Each row also gives the brotli frames decompressed
 * (and their raw MB) by the first run and by the last warm run.
 * Run alone: node --import tsx bench/selective.bench.ts
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { frameStats } from '../src/store/cold/frames.ts'
import { comparisonQueries } from './support.ts'

const DEFAULT_DIR = join(import.meta.dirname, 'tmp', 'compare', 'gen-b1000-t1500-s1', 'dataset')
/** the compare bench's picks on `solportal gen --seed 1` blocks (1,500 transactions each) */
const POOL = process.env.SELECTIVE_POOL ?? 'G111111DnPt5HyjWmseU3u7rReFKX1deSMi7EQYDuHDt'
const ACCOUNT = process.env.SELECTIVE_ACCOUNT ?? '4111111Dneqr5otaZqC2LqYAhhc4TXxfdc8s6Y1BNTkE'
const PAYER = process.env.SELECTIVE_PAYER ?? '91111111tjNcgGycZSmYXgZYVD7VpjVtjDkeE9UTshJH'

type Q = Record<string, unknown>

function queries(FROM: number, TO: number): { name: string; body: Q }[] {
  // the comparison's five queries (bench/support.ts) over the whole dataset, Q3 over its first
  // 2,000 blocks, then three of the reference's queries
  const out = comparisonQueries(FROM, TO, {
    pool: POOL,
    account: ACCOUNT,
    payer: PAYER,
    fullTo: FROM + 1099,
    fullBlocks: 1000,
  })
  out[2].body.toBlock = Math.min(TO, FROM + 2200)
  for (const n of ['whirlpool_swap', 'instr_and_balances', 'hard']) {
    const f = join(import.meta.dirname, 'queries', `${n}.json`)
    if (existsSync(f))
      out.push({ name: n, body: { ...(JSON.parse(readFileSync(f, 'utf8')) as Q), fromBlock: FROM, toBlock: TO } })
  }
  return out
}

type Store = Awaited<ReturnType<typeof openDatasetDir>>

async function runOnce(store: Store, body: Q): Promise<{ ms: number; bytes: number; lines: number; sha: string }> {
  {
    const q = parseQuery(body)
    const head = store.head()!.number
    const h = createHash('sha1')
    let bytes = 0
    let lines = 0
    const t0 = performance.now()
    for await (const b of executeQuery(store, q, { to: head, finalizedOnly: true })) {
      // the bytes as the server writes them (the cold store renders bytes; other stores strings)
      const out = b.bytes ?? Buffer.from(b.line)
      bytes += out.length + 1
      lines++
      h.update(out)
    }
    const ms = performance.now() - t0
    return { ms, bytes, lines, sha: h.digest('hex').slice(0, 12) }
  }
}

export async function run(): Promise<string> {
  const dirs = (process.env.SELECTIVE_DIRS ?? DEFAULT_DIR).split(',').filter((d) => existsSync(d))
  const runs = Number(process.env.SELECTIVE_RUNS ?? 2)
  const only = process.env.SELECTIVE_ONLY?.split(',')
  const lines: string[] = [
    '## selective queries in-process (first run on a freshly opened store, then best of ' +
      runs +
      ' on the same store)',
    '',
  ]
  lines.push(
    `load average at start: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
    '',
    '| query | dataset | lines | MB | first ms | best ms | MB/s | frames first run (raw MB) | frames last run (raw MB) | sha1 |',
    '|---|---|---|---|---|---|---|---|---|---|',
  )
  const cacheMb = process.env.SELECTIVE_CACHE_MB
  for (const dir of dirs) {
    const probe = await openDatasetDir(dir)
    const from = Number(process.env.SELECTIVE_FROM ?? 310_000_000)
    const to = probe.head()!.number
    await probe.close()
    for (const { name, body } of queries(from, to)) {
      if (only && !only.some((o) => name.startsWith(o))) continue
      // one store per query, kept open like a server's: the untimed first run reads (and checks) cold
      const store = await openDatasetDir(dir, cacheMb ? { cacheBytes: Number(cacheMb) * 1024 * 1024 } : undefined)
      const f0 = { ...frameStats }
      const first = await runOnce(store, body)
      const f1 = { ...frameStats }
      let best = Infinity
      let fl = { ...frameStats }
      let fe = fl
      for (let i = 0; i < runs; i++) {
        fl = { ...frameStats }
        best = Math.min(best, (await runOnce(store, body)).ms)
        fe = { ...frameStats }
      }
      await store.close()
      const fr = (a: typeof f0, b: typeof f0) => `${b.frames - a.frames} (${((b.bytes - a.bytes) / 1e6).toFixed(1)})`
      const mb = first.bytes / 1e6
      const row = `| ${name} | ${dir.replace(/.*\/(tmp\/)/, '')} | ${first.lines} | ${mb.toFixed(1)} | ${first.ms.toFixed(0)} | ${best.toFixed(0)} | ${(mb / (best / 1000)).toFixed(1)} | ${fr(f0, f1)} | ${fr(fl, fe)} | ${first.sha} |`
      lines.push(row)
      console.error(row)
    }
  }
  lines.push(
    '',
    `load average at end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  )
  lines.push('', `process peak RSS over the whole run: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`)
  return lines.join('\n')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await run())
