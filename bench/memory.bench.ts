/**
 * Peak RSS of `solportal serve --dataset-dir` per query, on an idle and on a CPU-loaded machine, for
 * one or more server settings side by side (`npm run bench -- memory`).
 *
 * The compare bench (bench/compare.bench.ts) reports the server's peak RSS over its whole run (~25 min
 * with PostgreSQL); this bench repeats its solportal part that sets the peak — the reference queries
 * over the whole range (bench/queries) and the "everything" query with gzip — in a few minutes, on a
 * dataset of generated blocks (`solportal gen` + `solportal import`, kept in bench/tmp/memory/ and
 * reused). Each query's peak: the child's VmHWM, reset through /proc/PID/clear_refs just before it;
 * its RSS after; its wall time (one HTTP request over loopback, body read and dropped).
 *
 * Load: MEMORY_LOAD busy-loop processes (default 2, one per core of the 2-core box) started for the
 * loaded passes only, each ending by itself after MEMORY_LOAD_S seconds at most (and killed when the
 * pass ends), so that the server's threads (V8's concurrent marking among them) share the cores.
 *
 * Settings: MEMORY_CONFIGS, `;`-separated `name=args`, args being serve options and `node:FLAG`
 * for the node process, `env:NAME=VALUE` for its environment (e.g. `default=;cache16=--cache-mb 16;semi4=node:--max-semi-space-size=4`).
 * Each round runs every setting idle then loaded, the settings alternating within the round, a
 * fresh server each time (the peak of a pass includes what earlier queries of the pass left, as in
 * a long-running server).
 *
 * Environment: MEMORY_BLOCKS (200), MEMORY_TXS (1500), MEMORY_ROUNDS (1), MEMORY_FULL_BLOCKS (blocks of
 * the "everything" query, 100), MEMORY_QUERIES (the sequence, comma-separated among
 * instr_and_logs, hard, instr_and_balances, whirlpool_swap, everything, everything-gzip:
 * `instr_and_logs,hard,instr_and_logs,everything-gzip`), MEMORY_DATASET (an existing dataset
 * directory instead of the generated one), MEMORY_LOAD (2; 0: idle passes only), MEMORY_LOAD_S (300), MEMORY_IDLE (0: loaded passes only),
 * MEMORY_TRACE (1: the server's heap sampled, see TRACE).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { benchServeArgs, everything, waitForServe } from './support.ts'
import { resetPeak, statusKb } from './compare/pg.ts'

const BLOCKS = Number(process.env.MEMORY_BLOCKS ?? 200)
const TXS = Number(process.env.MEMORY_TXS ?? 1500)
const ROUNDS = Number(process.env.MEMORY_ROUNDS ?? 1)
const FULL_BLOCKS = Number(process.env.MEMORY_FULL_BLOCKS ?? 100)
const LOAD = Number(process.env.MEMORY_LOAD ?? 2)
const LOAD_S = Number(process.env.MEMORY_LOAD_S ?? 300)
/** MEMORY_IDLE=0: loaded passes only */
const PHASES = LOAD > 0 ? (process.env.MEMORY_IDLE === '0' ? [true] : [false, true]) : [false]
const QUERIES = (process.env.MEMORY_QUERIES ?? 'instr_and_logs,hard,instr_and_logs,everything-gzip').split(',')
const CONFIGS = (process.env.MEMORY_CONFIGS ?? 'default=').split(';').map((c) => {
  const i = c.indexOf('=')
  const words = c
    .slice(i + 1)
    .split(/\s+/)
    .filter(Boolean)
  return {
    name: c.slice(0, i),
    node: words.filter((w) => w.startsWith('node:')).map((w) => w.slice(5)),
    env: Object.fromEntries(
      words.filter((w) => w.startsWith('env:')).map((w) => [w.slice(4, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
    ),
    serve: words.filter((w) => !w.startsWith('node:') && !w.startsWith('env:')),
  }
})
const REPO_ROOT = join(import.meta.dirname, '..')
/** MEMORY_TRACE=1: the server samples its heap (bench/memory/trace.mjs) into bench/tmp/memory/trace-*.txt */
const TRACE = process.env.MEMORY_TRACE === '1'
const CLI = ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts')]
const FROM_SLOT = 310_000_000

function cli(args: string[]): void {
  const r = spawnSync(process.execPath, [...CLI, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  if (r.status !== 0) throw new Error(`solportal ${args[0]} failed (${r.status})`)
}

/** the dataset (generated and imported once, then reused) */
function dataset(): string {
  if (process.env.MEMORY_DATASET) return process.env.MEMORY_DATASET
  const dir = join(import.meta.dirname, 'tmp', 'memory', `gen-b${BLOCKS}-t${TXS}-s1`)
  const ds = join(dir, 'dataset')
  if (existsSync(join(dir, 'imported'))) return ds
  mkdirSync(dir, { recursive: true })
  const archive = join(dir, 'blocks.jsonl.gz')
  cli([
    'gen',
    '--blocks',
    String(BLOCKS),
    '--out',
    archive,
    '--seed',
    '1',
    '--from-slot',
    String(FROM_SLOT),
    '--txs-per-block',
    String(TXS),
  ])
  cli(['import', '--no-progress', ds, archive])
  spawnSync('touch', [join(dir, 'imported')])
  return ds
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

interface Head {
  from: number
  to: number
}

function queryBody(name: string, range: Head): { body: string; gzip: boolean } {
  const gzip = name.endsWith('-gzip')
  const base = name.replace(/-gzip$/, '')
  if (base === 'everything')
    return { body: JSON.stringify(everything(range.from, range.from + FULL_BLOCKS * 1.2)), gzip }
  const q = JSON.parse(readFileSync(join(import.meta.dirname, 'queries', `${base}.json`), 'utf8'))
  return { body: JSON.stringify({ ...q, fromBlock: range.from, toBlock: range.to }), gzip }
}

/** one request; resolves with its wall ms and the body's bytes as sent */
function post(url: string, body: string, gzip: boolean): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now()
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' }
    if (gzip) headers['Accept-Encoding'] = 'gzip'
    const req = http.request(
      `${url}/datasets/solana-mainnet/stream`,
      { method: 'POST', agent: false, headers },
      (res) => {
        let bytes = 0
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`))
        res.on('data', (c: Buffer) => (bytes += c.length))
        res.on('end', () => resolve({ ms: performance.now() - t0, bytes }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** busy-loop processes, each ending by itself after LOAD_S seconds */
function startLoad(n: number): ChildProcess[] {
  const code = `const end = Date.now() + ${LOAD_S * 1000}; let x = 0; while (Date.now() < end) x = (x * 31 + 7) % 1000003`
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' }))
}

function stopLoad(ps: ChildProcess[]): Promise<void> {
  return Promise.all(
    ps.map(
      (p) =>
        new Promise<void>((r) => {
          if (p.exitCode !== null || p.signalCode !== null) return r()
          p.once('exit', () => r())
          p.kill('SIGKILL')
        }),
    ),
  ).then(() => undefined)
}

interface Row {
  round: number
  config: string
  loaded: boolean
  query: string
  ms: number
  mb: number
  peakMiB: number
  afterMiB: number
  load: number
}

async function pass(ds: string, cfg: (typeof CONFIGS)[number], loaded: boolean, round: number): Promise<Row[]> {
  const port = await freePort()
  const trace = TRACE
    ? join(import.meta.dirname, 'tmp', 'memory', `trace-r${round}-${cfg.name}-${loaded ? 'loaded' : 'idle'}.txt`)
    : ''
  if (trace) rmSync(trace, { force: true })
  const traceArgs = trace ? ['--import', join(import.meta.dirname, 'memory', 'trace.mjs')] : []
  const proc = spawn(process.execPath, [...cfg.node, ...traceArgs, ...CLI, ...benchServeArgs(ds, port), ...cfg.serve], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ...cfg.env, MEMORY_TRACE_FILE: trace },
  })
  const url = `http://127.0.0.1:${port}`
  const load: ChildProcess[] = []
  try {
    await waitForServe(proc, url)
    const head: Head = { from: FROM_SLOT, to: FROM_SLOT + BLOCKS * 2 }
    if (loaded) load.push(...startLoad(LOAD))
    await new Promise((r) => setTimeout(r, 500))
    const rows: Row[] = []
    for (const name of QUERIES) {
      const { body, gzip } = queryBody(name, head)
      resetPeak(proc.pid!)
      const r = await post(url, body, gzip)
      rows.push({
        round,
        config: cfg.name,
        loaded,
        query: name,
        ms: r.ms,
        mb: r.bytes / 1e6,
        peakMiB: statusKb(proc.pid!, 'VmHWM') / 1024,
        afterMiB: statusKb(proc.pid!, 'VmRSS') / 1024,
        load: os.loadavg()[0],
      })
      process.stderr.write(
        `memory: r${round} ${cfg.name} ${loaded ? 'loaded' : 'idle'} ${name}: ${r.ms.toFixed(0)} ms, peak ${rows.at(-1)!.peakMiB.toFixed(0)} MiB, after ${rows.at(-1)!.afterMiB.toFixed(0)} MiB\n`,
      )
    }
    return rows
  } finally {
    await stopLoad(load)
    await new Promise<void>((r) => {
      if (proc.exitCode !== null) return r()
      proc.once('exit', () => r())
      proc.kill('SIGTERM')
    })
  }
}

export async function run(): Promise<string> {
  const ds = dataset()
  const rows: Row[] = []
  const t0 = new Date().toISOString()
  const load0 = os.loadavg()[0]
  for (let round = 1; round <= ROUNDS; round++)
    for (const loaded of PHASES)
      for (const cfg of round % 2 ? CONFIGS : [...CONFIGS].reverse()) rows.push(...(await pass(ds, cfg, loaded, round)))
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
  const out = [
    `## Peak RSS of the server per query, idle and loaded (${f(BLOCKS)} generated blocks of ${f(TXS)} transactions)`,
    '',
    `Run ${t0} → ${new Date().toISOString()}; node ${process.version}; ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}; load average ${f(load0, 1)} at start (the cores are shared with other work).`,
    '',
    `Command: \`${[
      'MEMORY_BLOCKS',
      'MEMORY_TXS',
      'MEMORY_ROUNDS',
      'MEMORY_FULL_BLOCKS',
      'MEMORY_LOAD',
      'MEMORY_QUERIES',
      'MEMORY_CONFIGS',
    ]
      .filter((k) => process.env[k] !== undefined)
      .map((k) => `${k}='${process.env[k]}'`)
      .join(
        ' ',
      )} npm run bench -- memory\`. Settings: ${CONFIGS.map((c) => `${c.name} = \`${[...Object.entries(c.env).map(([k, v]) => `${k}=${v}`), ...c.node.map((n) => `node ${n}`), ...c.serve].join(' ') || 'defaults'}\``).join('; ')}. Loaded: ${LOAD} busy-loop processes beside the server and the client. Queries in order, one server per pass: ${QUERIES.join(', ')} (bench/queries over the whole range; everything = every table, all fields, first ${FULL_BLOCKS} blocks; -gzip: \`Accept-Encoding: gzip\`). Peak = VmHWM of the server reset before each query; after = VmRSS when the response ended.`,
    '',
    '| round | settings | machine | query | wall ms | MB sent | peak RSS MiB | RSS after MiB | load avg |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.round} | ${r.config} | ${r.loaded ? 'loaded' : 'idle'} | ${r.query} | ${f(r.ms)} | ${f(r.mb, 1)} | ${f(r.peakMiB)} | ${f(r.afterMiB)} | ${f(r.load, 1)} |`,
    ),
    '',
    '| settings | machine | max peak RSS MiB | sum of wall ms |',
    '|---|---|---|---|',
    ...CONFIGS.flatMap((c) =>
      PHASES.map((l) => {
        const rs = rows.filter((r) => r.config === c.name && r.loaded === l)
        return `| ${c.name} | ${l ? 'loaded' : 'idle'} | ${f(Math.max(...rs.map((r) => r.peakMiB)))} | ${f(rs.reduce((s, r) => s + r.ms, 0) / ROUNDS)} per round |`
      }),
    ),
  ]
  return out.join('\n')
}
