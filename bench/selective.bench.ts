/**
 * Selective and wide queries in-process (`executeQuery` over `openDatasetDir`) on a dataset dir:
 * wall ms (best of N runs after one untimed run), output MB, MB/s, and a sha1 of the output lines
 * (to check results are byte-identical across formats / code versions).
 *
 * SELECTIVE_DIRS   comma-separated dataset dirs (default: the 10,000-block compare dataset)
 * SELECTIVE_RUNS   timed runs per query (default 2)
 * SELECTIVE_ONLY   comma-separated query name prefixes to run
 * Run alone: node --import tsx bench/selective.bench.ts
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { comparisonQueries } from './support.ts'

const DEFAULT_DIR = join(import.meta.dirname, 'tmp', 'compare', 'gen-b10000-t200-s1', 'dataset')
/** the generated dataset's slot range (solportal gen --from-slot 310000000, 10,000 blocks) */
const FROM = 310_000_000
const TO = 310_010_949
const POOL = 'G111111DnPt5HyjWmseU3u7rReFKX1deSMi7EQYDuHDt'
const ACCOUNT = 'E63CDwLy9Dwr3EptAzopV9RuWoQnn5ZVYEjLWnJX8dCw'
const PAYER = '91111111tjNcgGycZSmYXgZYVD7VpjVtjDkeE9UTshJH'

type Q = Record<string, unknown>

function queries(): { name: string; body: Q }[] {
  // the comparison's five queries (bench/support.ts) over the whole dataset, Q3 over its first
  // 2,000 blocks, then three of the reference's queries
  const out = comparisonQueries(FROM, TO, {
    pool: POOL,
    account: ACCOUNT,
    payer: PAYER,
    fullTo: FROM + 1099,
    fullBlocks: 1000,
  })
  out[2].body.toBlock = FROM + 2200
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
      bytes += b.line.length + 1
      lines++
      h.update(b.line)
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
  lines.push('| query | dataset | lines | MB | first ms | best ms | MB/s | sha1 |', '|---|---|---|---|---|---|---|---|')
  for (const { name, body } of queries()) {
    if (only && !only.some((o) => name.startsWith(o))) continue
    for (const dir of dirs) {
      // one store per query, kept open like a server's: the untimed first run reads (and checks) cold
      const store = await openDatasetDir(dir)
      const first = await runOnce(store, body)
      let best = Infinity
      for (let i = 0; i < runs; i++) best = Math.min(best, (await runOnce(store, body)).ms)
      await store.close()
      const mb = first.bytes / 1e6
      const row = `| ${name} | ${dir.replace(/.*\/(tmp\/)/, '')} | ${first.lines} | ${mb.toFixed(1)} | ${first.ms.toFixed(0)} | ${best.toFixed(0)} | ${(mb / (best / 1000)).toFixed(1)} | ${first.sha} |`
      lines.push(row)
      console.error(row)
    }
  }
  lines.push('', `process peak RSS over the whole run: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`)
  return lines.join('\n')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await run())
