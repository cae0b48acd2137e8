/** Helpers shared by the benches. Field lists come from the one field catalogue. */
import type { ChildProcess } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import http from 'node:http'
import { homedir, tmpdir } from 'node:os'
import { dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fieldsOf, SELECTOR_NAMES, type SelectorName } from '../src/catalogue.ts'

/** a selector choosing every field of `selector` (first spelling of each) */
export function allFields(selector: SelectorName): Record<string, true> {
  return Object.fromEntries(fieldsOf(selector).map((f) => [f.selectors[0], true]))
}

/** a `fields` object choosing every field of every selector */
export function everyField(): Record<string, Record<string, true>> {
  return Object.fromEntries(SELECTOR_NAMES.map((s) => [s, allFields(s)]))
}

/** every field of every selector, every row of every kind, over [fromBlock, toBlock] */
export function everything(fromBlock: number, toBlock?: number): Record<string, unknown> {
  return {
    type: 'solana',
    fromBlock,
    ...(toBlock != null ? { toBlock } : {}),
    fields: everyField(),
    transactions: [{}],
    instructions: [{}],
    logs: [{}],
    balances: [{}],
    tokenBalances: [{}],
    rewards: [{}],
  }
}

export const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'
export const SWAP_D8 = '0xf8c69e91e17587c8'
export const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'

export interface ComparisonParams {
  /** a Whirlpool pool (the a2 filter of Q1) */
  pool: string
  /** an account for Q2's mentionsAccount */
  account: string
  /** a fee payer for Q4 */
  payer: string
  /** last block of Q5 (everything) */
  fullTo: number
  fullBlocks: number
}

/**
 * The five queries of the PostgreSQL comparison (bench/compare.bench.ts), also run in-process by
 * bench/selective.bench.ts: Q1 program + d8 + a2 + transaction, Q2 mentionsAccount, Q3 a busy
 * program with all fields, Q4 fee payer + instructions + balances, Q5 everything.
 */
export function comparisonQueries(
  from: number,
  to: number,
  p: ComparisonParams,
): { name: string; body: Record<string, unknown> }[] {
  return [
    {
      name: 'Q1 program + d8 + a2 (Whirlpool swaps of one pool) + transaction',
      body: {
        type: 'solana',
        fromBlock: from,
        toBlock: to,
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
        instructions: [{ programId: [WHIRLPOOL], d8: [SWAP_D8], a2: [p.pool], transaction: true }],
      },
    },
    {
      name: 'Q2 instructions mentionsAccount (one account)',
      body: {
        type: 'solana',
        fromBlock: from,
        toBlock: to,
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
        instructions: [{ mentionsAccount: [p.account] }],
      },
    },
    {
      name: 'Q3 all instructions of the Token program, all fields',
      body: {
        type: 'solana',
        fromBlock: from,
        toBlock: to,
        fields: { block: { number: true, hash: true }, instruction: allFields('instruction') },
        instructions: [{ programId: [TOKEN] }],
      },
    },
    {
      name: 'Q4 transactions by fee payer + instructions + balances',
      body: {
        type: 'solana',
        fromBlock: from,
        toBlock: to,
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
          balance: allFields('balance'),
        },
        transactions: [{ feePayer: [p.payer], instructions: true, balances: true }],
      },
    },
    {
      name: `Q5 everything, all fields, first ${p.fullBlocks.toLocaleString('en-US')} blocks`,
      body: { ...everything(from, p.fullTo), includeAllBlocks: true },
    },
  ]
}

/**
 * Results text without machine-specific paths: the repository root becomes relative, the
 * temporary directory `$TMPDIR` and the home directory `~`, so committed results stay portable.
 */
export function portablePaths(text: string): string {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  // a checkout whose node_modules is a link to another one's: profiles name the files where they are
  let modules = join(root, 'node_modules')
  try {
    modules = realpathSync(modules)
  } catch {
    // no node_modules: nothing to map
  }
  const swaps: [string, string][] = [
    ...(modules !== join(root, 'node_modules') ? ([[modules, 'node_modules']] as [string, string][]) : []),
    [root + sep, ''],
    [root, '.'],
    [tmpdir(), '$TMPDIR'],
    [homedir(), '~'],
  ]
  let out = text
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  // only where a path starts: not inside one (`bench/tmp/x` keeps its `/tmp`)
  for (const [from, to] of swaps)
    if (from.length > 1) out = out.replace(new RegExp(`(?<![\\w.$~-])${esc(from)}`, 'g'), () => to)
  return out
}

/**
 * CPU ms process `pid` has used so far: its main thread and the whole process (Linux /proc, 10 ms
 * ticks; zeros elsewhere). Less sensitive to other work on a shared machine than wall times.
 */
export function processCpuMs(pid: number): { main: number; all: number } {
  const ticks = (file: string) => {
    try {
      const f = readFileSync(file, 'utf8').split(') ')[1].split(' ')
      return (Number(f[11]) + Number(f[12])) * 10
    } catch {
      return 0
    }
  }
  return { main: ticks(`/proc/${pid}/task/${pid}/stat`), all: ticks(`/proc/${pid}/stat`) }
}

/**
 * this process's main thread's CPU ms so far (an HTTP client's JS and its socket reads; not the
 * process's other threads, e.g. an idle database engine's pool); `process.cpuUsage()` elsewhere
 */
export function ownCpuMs(): number {
  const main = processCpuMs(process.pid).main
  if (main > 0) return main
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/**
 * What the CPU allows a request on `cores` cores, from the mean CPU its runs took: the server's
 * main thread runs it alone, and the server's threads and the client share the cores, so the runs
 * take on average at least max(main, (server + client) / cores) ms each.
 */
export function cpuFloorMs(perRun: { main: number; all: number; client: number }, cores: number): number {
  return Math.max(perRun.main, (perRun.all + perRun.client) / cores)
}

/** `cpuFloorMs` with the figures it comes from and the runs' mean wall time, as a sentence */
export function cpuFloor(perRun: { main: number; all: number; client: number; meanMs: number }, cores: number): string {
  const floor = cpuFloorMs(perRun, cores)
  const f = (x: number) => x.toFixed(1)
  return (
    `mean CPU per timed run: server ${f(perRun.all)} ms (main thread ${f(perRun.main)}), client ${f(perRun.client)} ms (its main thread); ` +
    `on ${cores} cores the runs take on average at least max(${f(perRun.main)}, (${f(perRun.all)} + ${f(perRun.client)}) / ${cores}) = ${f(floor)} ms (measured mean ${f(perRun.meanMs)} ms)`
  )
}

/**
 * The arguments of `solportal serve --dataset-dir DIR` on loopback port `port` as the benches run
 * it (after the node and CLI entry arguments): quiet, no rate limit, and the response time and
 * byte budgets lifted so that one response holds a whole range
 */
export function benchServeArgs(datasetDir: string, port: number): string[] {
  return [
    'serve',
    '--dataset-dir',
    datasetDir,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--quiet',
    '--rate-limit',
    '0',
    '--response-time-ms',
    String(3_600_000),
    '--response-bytes',
    String(2 ** 45),
  ]
}

/**
 * Waits until the `solportal serve` child `proc`, listening at `base` (`http://host:port`), answers
 * `GET /datasets/solana-mainnet/head` with 200 (up to 60 s, polled every 100 ms); throws when the
 * child exits first or does not come up.
 */
export async function waitForServe(proc: ChildProcess, base: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`solportal serve exited ${proc.exitCode}`)
    const ok = await new Promise<boolean>((r) => {
      http
        .get(`${base}/datasets/solana-mainnet/head`, (res) => (res.resume(), r(res.statusCode === 200)))
        .on('error', () => r(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('solportal serve did not come up')
}
