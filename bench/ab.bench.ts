/**
 * Two versions of solportal's code, alternating on the same data: is a change within noise?
 *
 * `AB_BASE=<a checkout of the other code, with node_modules> npm run bench -- ab`
 * (e.g. `git worktree add ../base <commit> && ln -s "$PWD/node_modules" ../base/`).
 *
 * 1. `solportal gen` (deterministic, cached under bench/tmp/ab/) → `solportal import` by each code,
 *    alternating, AB_IMPORT_ROUNDS times each: wall time and CPU time (the child's, from this
 *    process's waited-for-children ticks). The chunk files both imports write are compared byte for
 *    byte.
 * 2. `solportal serve --dataset-dir` of each code, both on a copy of the dataset the base code
 *    imported (the new code must read files the old one wrote); the compare bench's five queries
 *    (bench/support.ts `comparisonQueries`) and the reference engine's five (bench/queries/) are sent
 *    to both, alternating the order every round, AB_ROUNDS rounds: wall time and server CPU time per
 *    query; the two answers must be byte-identical.
 *
 * Environment: AB_BASE (required), AB_BLOCKS (300), AB_TXS (1500), AB_SEED (1), AB_ROUNDS (5),
 * AB_IMPORT_ROUNDS (2), AB_WORK (bench/tmp/ab), AB_NEW_SERVE_ARGS (extra `serve` flags of the new
 * code only, space-separated: e.g. a flag the base code does not know).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './compare/pg.ts'
import {
  benchServeArgs,
  comparisonQueries,
  processCpuMs,
  SWAP_D8,
  waitForServe,
  WHIRLPOOL,
  type ComparisonParams,
} from './support.ts'

const BENCH = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(BENCH, '..')
const WORK = process.env.AB_WORK ?? join(BENCH, 'tmp', 'ab')
const BLOCKS = Number(process.env.AB_BLOCKS ?? 300)
const TXS = Number(process.env.AB_TXS ?? 1500)
const SEED = Number(process.env.AB_SEED ?? 1)
const ROUNDS = Number(process.env.AB_ROUNDS ?? 5)
const IMPORT_ROUNDS = Number(process.env.AB_IMPORT_ROUNDS ?? 2)
const FROM_SLOT = 310_000_000
const log = (s: string) => process.stderr.write(`ab: ${s}\n`)

type Json = Record<string, unknown>

interface Code {
  name: 'base' | 'new'
  root: string
  head: string
}

function cliArgs(code: Code, args: string[]): string[] {
  return ['--import', 'tsx', join(code.root, 'src', 'cli', 'main.ts'), ...args]
}

/** CPU ms of the children this process has waited for (cutime + cstime of /proc/self/stat) */
function childrenCpuMs(): number {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(f[13]) + Number(f[14])) * 10
}

function runCli(code: Code, args: string[], what: string): { wallMs: number; cpuMs: number; stderr: string } {
  const c0 = childrenCpuMs()
  const t0 = performance.now()
  const r = spawnSync(process.execPath, cliArgs(code, args), { cwd: code.root, encoding: 'utf8', maxBuffer: 1 << 26 })
  if (r.status !== 0) throw new Error(`${what} (${code.name}) failed (${r.status}): ${r.stderr}`)
  return { wallMs: performance.now() - t0, cpuMs: childrenCpuMs() - c0, stderr: r.stderr }
}

/** every file under `dir` (relative path → sha256) */
function digestTree(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.isFile()) out.set(relative(dir, p), createHash('sha256').update(readFileSync(p)).digest('hex'))
    }
  }
  walk(dir)
  return out
}

function treeBytes(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += statSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size
  }
  return n
}

class Server {
  private constructor(
    readonly code: Code,
    readonly proc: ChildProcess,
    readonly url: string,
  ) {}

  static async start(code: Code, datasetDir: string): Promise<Server> {
    const port = await freePort()
    const extra = code.name === 'new' ? (process.env.AB_NEW_SERVE_ARGS ?? '').split(' ').filter((a) => a !== '') : []
    const proc = spawn(process.execPath, cliArgs(code, [...benchServeArgs(datasetDir, port), ...extra]), {
      cwd: code.root,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const url = `http://127.0.0.1:${port}`
    await waitForServe(proc, url)
    return new Server(code, proc, url)
  }

  /** one stream request: wall ms, server CPU ms (all threads), body sha256, bytes */
  async query(body: string): Promise<{ wallMs: number; cpuMs: number; sha: string; bytes: number }> {
    const pid = this.proc.pid!
    const c0 = processCpuMs(pid).all
    const t0 = performance.now()
    const hash = createHash('sha256')
    let bytes = 0
    await new Promise<void>((resolveQuery, reject) => {
      const req = http.request(
        `${this.url}/datasets/solana-mainnet/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
        (res) => {
          if (res.statusCode !== 200) {
            let t = ''
            res.on('data', (c) => (t += c))
            res.on('end', () => reject(new Error(`${this.code.name}: HTTP ${res.statusCode}: ${t}`)))
            return
          }
          res.on('data', (c: Buffer) => {
            bytes += c.length
            hash.update(c)
          })
          res.on('end', () => resolveQuery())
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end(body)
    })
    const wallMs = performance.now() - t0
    return { wallMs, cpuMs: processCpuMs(pid).all - c0, sha: hash.digest('hex'), bytes }
  }

  /** every JSON line of a stream request */
  async lines(body: Json): Promise<Json[]> {
    const out: Json[] = []
    let rest = ''
    await new Promise<void>((resolveQuery, reject) => {
      const req = http.request(
        `${this.url}/datasets/solana-mainnet/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
        (res) => {
          res.setEncoding('utf8')
          if (res.statusCode !== 200) {
            let t = ''
            res.on('data', (c: string) => (t += c))
            res.on('end', () => reject(new Error(`HTTP ${res.statusCode}: ${t} (query ${JSON.stringify(body)})`)))
            return
          }
          res.on('data', (c: string) => {
            const parts = (rest + c).split('\n')
            rest = parts.pop()!
            for (const p of parts) if (p) out.push(JSON.parse(p))
          })
          res.on('end', () => resolveQuery())
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })
    return out
  }

  stop(): Promise<void> {
    return new Promise((r) => {
      if (this.proc.exitCode !== null) return r()
      this.proc.once('exit', () => r())
      this.proc.kill('SIGTERM')
    })
  }
}

/** the most frequent value of `values`, ties broken by the value; `skip` first ones left out */
function mostFrequent(values: Iterable<string>, skip = 0): string {
  const n = new Map<string, number>()
  for (const v of values) n.set(v, (n.get(v) ?? 0) + 1)
  const sorted = [...n].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  if (sorted.length === 0) throw new Error('no values to pick a query parameter from')
  return sorted[Math.min(skip, sorted.length - 1)][0]
}

/** the parameters of the comparison queries, picked as the compare bench picks them (first 50 blocks) */
async function pickParams(s: Server, from: number, to: number): Promise<ComparisonParams> {
  const pickTo = Math.min(to, from + 50 * 2)
  const swaps = await s.lines({
    type: 'solana',
    fromBlock: from,
    toBlock: pickTo,
    fields: { instruction: { accounts: true } },
    instructions: [{ programId: [WHIRLPOOL], d8: [SWAP_D8] }],
  })
  const ix = await s.lines({
    type: 'solana',
    fromBlock: from,
    toBlock: pickTo,
    fields: { instruction: { programId: true, accounts: true }, transaction: { feePayer: true } },
    instructions: [{}],
    transactions: [{}],
  })
  const rows = <T>(lines: Json[], kind: string) => lines.flatMap((l) => (l[kind] as T[] | undefined) ?? [])
  const programs = new Set(rows<{ programId: string }>(ix, 'instructions').map((i) => i.programId))
  const accounts = rows<{ accounts: string[] }>(ix, 'instructions')
    .flatMap((i) => i.accounts)
    .filter((a) => !programs.has(a))
  const blocks = await s.lines({
    type: 'solana',
    fromBlock: from,
    toBlock: to,
    includeAllBlocks: true,
    fields: { block: { number: true } },
  })
  const numbers = blocks.map((b) => (b.header as { number: number }).number)
  const fullBlocks = Math.min(200, numbers.length)
  return {
    pool: mostFrequent(rows<{ accounts: string[] }>(swaps, 'instructions').map((i) => i.accounts[2])),
    account: mostFrequent(accounts, 50),
    payer: mostFrequent(rows<{ feePayer: string }>(ix, 'transactions').map((t) => t.feePayer)),
    fullTo: numbers[fullBlocks - 1],
    fullBlocks,
  }
}

function referenceQueries(from: number, to: number): { name: string; body: Json }[] {
  return ['whirlpool_swap', 'hard', 'instr_and_logs', 'instr_and_balances', 'all_blocks'].map((name) => ({
    name: `reference ${name}`,
    body: { ...JSON.parse(readFileSync(join(BENCH, 'queries', `${name}.json`), 'utf8')), fromBlock: from, toBlock: to },
  }))
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))
const ratio = (n: number, b: number) => (b > 0 ? (n / b).toFixed(3) : 'n/a')

function headOf(root: string): string {
  const r = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' })
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).stdout.trim()
  return (r.stdout.trim() || 'unknown') + (dirty ? ' + uncommitted src/ changes' : '')
}

function generate(code: Code): string {
  const dir = join(WORK, `gen-b${BLOCKS}-t${TXS}-s${SEED}`)
  const archive = join(dir, 'blocks.jsonl.gz')
  const done = join(dir, 'done')
  if (existsSync(done)) return archive
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  log(`generating ${BLOCKS} blocks of ${TXS} transactions`)
  const args = ['gen', '--blocks', String(BLOCKS), '--out', archive, '--seed', String(SEED)]
  runCli(code, [...args, '--from-slot', String(FROM_SLOT), '--txs-per-block', String(TXS)], 'solportal gen')
  spawnSync('touch', [done])
  return archive
}

interface ImportRun {
  code: Code
  wallMs: number
  cpuMs: number
}

function imports(codes: [Code, Code], archive: string): { runs: ImportRun[]; dirs: Map<string, string> } {
  const runs: ImportRun[] = []
  const dirs = new Map<string, string>()
  for (let r = 0; r < IMPORT_ROUNDS; r++) {
    const order = r % 2 === 0 ? codes : ([codes[1], codes[0]] as const)
    for (const code of order) {
      const dir = join(WORK, `dataset-${code.name}`)
      rmSync(dir, { recursive: true, force: true })
      log(`import round ${r + 1}: ${code.name}`)
      const t = runCli(code, ['import', '--no-progress', dir, archive], 'solportal import')
      runs.push({ code, wallMs: t.wallMs, cpuMs: t.cpuMs })
      dirs.set(code.name, dir)
    }
  }
  return { runs, dirs }
}

/** files of the two datasets: equal, or the differences */
function compareDatasets(a: string, b: string): string {
  const x = digestTree(a)
  const y = digestTree(b)
  const diff: string[] = []
  for (const [f, h] of x) if (y.get(f) !== h) diff.push(y.has(f) ? `${f} differs` : `${f} only in base's`)
  for (const f of y.keys()) if (!x.has(f)) diff.push(`${f} only in new's`)
  const chunks = [...x.keys()].filter((f) => f.endsWith('.spc')).length
  return diff.length === 0
    ? `the ${x.size} files (${chunks} chunk files, ${(treeBytes(a) / 2 ** 20).toFixed(1)} MiB) are byte-identical`
    : `**${diff.length} files differ**: ${diff.slice(0, 12).join('; ')}`
}

export async function run(): Promise<string> {
  const baseRoot = process.env.AB_BASE
  if (!baseRoot) throw new Error('AB_BASE: set it to a checkout of the code to compare with (see bench/ab.bench.ts)')
  const base: Code = { name: 'base', root: resolve(baseRoot), head: headOf(resolve(baseRoot)) }
  const next: Code = { name: 'new', root: ROOT, head: headOf(ROOT) }
  for (const c of [base, next]) {
    if (!existsSync(join(c.root, 'node_modules', 'tsx'))) throw new Error(`${c.root}: no node_modules (link one)`)
  }
  mkdirSync(WORK, { recursive: true })
  const started = new Date()
  const load0 = os.loadavg()[0]
  const archive = generate(next)
  const imp = imports([base, next], archive)
  const sameFiles = compareDatasets(imp.dirs.get('base')!, imp.dirs.get('new')!)

  // both servers read what the base code wrote (a copy each: a dataset dir is opened by one process)
  const servers: Server[] = []
  const rows: string[] = []
  const totals = { base: { wall: 0, cpu: 0 }, new: { wall: 0, cpu: 0 } }
  try {
    for (const c of [base, next]) {
      const dir = join(WORK, `serve-${c.name}`)
      rmSync(dir, { recursive: true, force: true })
      cpSync(imp.dirs.get('base')!, dir, { recursive: true })
      servers.push(await Server.start(c, dir))
    }
    const numbers = (
      await servers[1].lines({
        type: 'solana',
        fromBlock: FROM_SLOT,
        includeAllBlocks: true,
        fields: { block: { number: true } },
      })
    ).map((b) => (b.header as { number: number }).number)
    const from = numbers[0]
    const to = numbers[numbers.length - 1]
    const params = await pickParams(servers[1], from, to)
    log(`parameters: ${JSON.stringify(params)}`)
    const queries = [
      ...comparisonQueries(from, to, params).map((q) => ({ name: q.name, body: q.body as Json })),
      ...referenceQueries(from, to),
    ]
    for (const q of queries) {
      const body = JSON.stringify(q.body)
      const m = {
        base: { wall: [] as number[], cpu: [] as number[] },
        new: { wall: [] as number[], cpu: [] as number[] },
      }
      let sha = ''
      let bytes = 0
      // one untimed run each (JIT warm-up, page cache), then the timed rounds
      for (const s of servers) await s.query(body)
      for (let r = 0; r < ROUNDS; r++) {
        for (const s of r % 2 === 0 ? servers : [servers[1], servers[0]]) {
          const res = await s.query(body)
          if (sha === '') [sha, bytes] = [res.sha, res.bytes]
          else if (res.sha !== sha) throw new Error(`${q.name}: the answers of base and new differ`)
          m[s.code.name].wall.push(res.wallMs)
          m[s.code.name].cpu.push(res.cpuMs)
        }
      }
      const mb = { wall: median(m.base.wall), cpu: median(m.base.cpu) }
      const mn = { wall: median(m.new.wall), cpu: median(m.new.cpu) }
      totals.base.wall += mb.wall
      totals.base.cpu += mb.cpu
      totals.new.wall += mn.wall
      totals.new.cpu += mn.cpu
      rows.push(
        `| ${q.name} | ${(bytes / 1e6).toFixed(1)} MB | ${fmt(mb.wall)} | ${fmt(mn.wall)} | **${ratio(mn.wall, mb.wall)}** | ${fmt(mb.cpu)} | ${fmt(mn.cpu)} | **${ratio(mn.cpu, mb.cpu)}** |`,
      )
      log(`${q.name}: wall ${fmt(mb.wall)} → ${fmt(mn.wall)} ms, server CPU ${fmt(mb.cpu)} → ${fmt(mn.cpu)} ms`)
    }
  } finally {
    for (const s of servers) await s.stop()
  }

  const impRow = (c: Code) => {
    const r = imp.runs.filter((x) => x.code === c)
    return { wall: median(r.map((x) => x.wallMs)), cpu: median(r.map((x) => x.cpuMs)), all: r }
  }
  const ib = impRow(base)
  const inew = impRow(next)
  const secs = (ms: number) => (ms / 1000).toFixed(1)
  return [
    `## Two versions of the code, alternating on the same data (ab)`,
    '',
    `Run ${started.toISOString()} → ${new Date().toISOString()}; node ${process.version}; ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}; load average (1 min) ${load0.toFixed(1)} at start, ${os.loadavg()[0].toFixed(1)} at end.`,
    '',
    `Base: ${base.head}. New: ${next.head}${process.env.AB_NEW_SERVE_ARGS ? ` (serve ${process.env.AB_NEW_SERVE_ARGS})` : ''}. Data: \`solportal gen --blocks ${BLOCKS} --txs-per-block ${TXS} --seed ${SEED}\` (votes dropped at import). Command: \`AB_BASE=<checkout> ${BLOCKS !== 300 ? `AB_BLOCKS=${BLOCKS} ` : ''}${TXS !== 1500 ? `AB_TXS=${TXS} ` : ''}npm run bench -- ab\`. Times are medians; ratios new / base (below 1: the new code is faster).`,
    '',
    `### Import (${IMPORT_ROUNDS} runs each, alternating)`,
    '',
    '| code | wall s (runs) | CPU s (runs) |',
    '|---|---|---|',
    `| base | ${secs(ib.wall)} (${ib.all.map((x) => secs(x.wallMs)).join(', ')}) | ${secs(ib.cpu)} (${ib.all.map((x) => secs(x.cpuMs)).join(', ')}) |`,
    `| new | ${secs(inew.wall)} (${inew.all.map((x) => secs(x.wallMs)).join(', ')}) | ${secs(inew.cpu)} (${inew.all.map((x) => secs(x.cpuMs)).join(', ')}) |`,
    `| new / base | **${ratio(inew.wall, ib.wall)}** | **${ratio(inew.cpu, ib.cpu)}** |`,
    '',
    `Dataset files written by the two imports: ${sameFiles}.`,
    '',
    `### Queries (${ROUNDS} timed rounds, order alternating; both servers on the base code's files; answers byte-identical)`,
    '',
    '| query | answer | wall ms base | wall ms new | new / base | server CPU ms base | new | new / base |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    `| sum of medians | | ${fmt(totals.base.wall)} | ${fmt(totals.new.wall)} | **${ratio(totals.new.wall, totals.base.wall)}** | ${fmt(totals.base.cpu)} | ${fmt(totals.new.cpu)} | **${ratio(totals.new.cpu, totals.base.cpu)}** |`,
  ].join('\n')
}
