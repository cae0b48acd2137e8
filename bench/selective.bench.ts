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
import { fileURLToPath } from 'node:url'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { everyField } from './support.ts'

const DEFAULT_DIR = '/work/main/bench/tmp/compare/gen-b10000-t200-s1/dataset'
const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'
const SWAP_D8 = '0xf8c69e91e17587c8'
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
const POOL = 'G111111DnPt5HyjWmseU3u7rReFKX1deSMi7EQYDuHDt'
const ACCOUNT = 'E63CDwLy9Dwr3EptAzopV9RuWoQnn5ZVYEjLWnJX8dCw'
const PAYER = '91111111tjNcgGycZSmYXgZYVD7VpjVtjDkeE9UTshJH'

type Q = Record<string, unknown>

function queries(): { name: string; body: Q }[] {
  const out: { name: string; body: Q }[] = [
    {
      name: 'Q1 whirlpool+d8+a2+tx',
      body: {
        type: 'solana',
        fromBlock: 0,
        fields: {
          block: { number: true, hash: true },
          transaction: { transactionIndex: true, signatures: true, feePayer: true, err: true },
          instruction: {
            transactionIndex: true,
            instructionAddress: true,
            programId: true,
            accounts: true,
            data: true,
          },
        },
        instructions: [{ programId: [WHIRLPOOL], d8: [SWAP_D8], a2: [POOL], transaction: true }],
      },
    },
    {
      name: 'Q2 mentionsAccount',
      body: {
        type: 'solana',
        fromBlock: 0,
        fields: {
          block: { number: true },
          instruction: {
            transactionIndex: true,
            instructionAddress: true,
            programId: true,
            accounts: true,
            data: true,
          },
        },
        instructions: [{ mentionsAccount: [ACCOUNT] }],
      },
    },
    {
      name: 'Q4 feePayer+ix+balances',
      body: {
        type: 'solana',
        fromBlock: 0,
        fields: {
          block: { number: true, hash: true, timestamp: true },
          transaction: {
            transactionIndex: true,
            signatures: true,
            fee: true,
            err: true,
            feePayer: true,
            computeUnitsConsumed: true,
          },
          instruction: {
            transactionIndex: true,
            instructionAddress: true,
            programId: true,
            accounts: true,
            data: true,
            isCommitted: true,
          },
          balance: { transactionIndex: true, account: true, pre: true, post: true },
        },
        transactions: [{ feePayer: [PAYER], instructions: true, balances: true }],
      },
    },
    {
      name: 'Q3 token program all fields (first 2000 blocks)',
      body: {
        type: 'solana',
        fromBlock: 0,
        toBlock: 310002200,
        fields: {
          block: { number: true, hash: true },
          instruction: Object.fromEntries(
            [
              'transactionIndex',
              'instructionAddress',
              'programId',
              'accounts',
              'data',
              'd1',
              'd2',
              'd4',
              'd8',
              'error',
              'computeUnitsConsumed',
              'isCommitted',
              'hasDroppedLogMessages',
            ].map((k) => [k, true]),
          ),
        },
        instructions: [{ programId: [TOKEN] }],
      },
    },
    {
      name: 'Q5 everything, all fields (first 1000 blocks)',
      body: {
        type: 'solana',
        fromBlock: 0,
        toBlock: 310001099,
        includeAllBlocks: true,
        fields: everyField(),
        transactions: [{}],
        instructions: [{}],
        logs: [{}],
        balances: [{}],
        tokenBalances: [{}],
        rewards: [{}],
      },
    },
  ]
  for (const n of ['whirlpool_swap', 'instr_and_balances', 'hard']) {
    const f = `/work/shared/bench/queries/${n}.json`
    if (existsSync(f)) out.push({ name: n, body: JSON.parse(readFileSync(f, 'utf8')) as Q })
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
