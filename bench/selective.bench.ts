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
 * SELECTIVE_FULL_BLOCKS  blocks of Q5, everything (default 1000; the compare bench's is 200): its range
 *                    is 1.1 times as many slots (about one in ten is skipped)
 * SELECTIVE_FROM   first block (default 310000000, `gen --from-slot`); the range ends at the dataset's head.
 * Each row also gives the brotli frames decompressed
 * (and their raw MB) by the first run and by the last warm run.
 *
 * SELECTIVE_HTTP=1   the same queries over HTTP instead: a real `solportal serve --dataset-dir` child
 *                    (the compare bench's arguments), one request at a time on loopback, the time
 *                    until the last byte; best and median of SELECTIVE_RUNS after one untimed run.
 * SELECTIVE_BASE     with SELECTIVE_HTTP: the root of another checkout (the code before a change);
 *                    its server runs alongside, the runs alternate (base, new, base, ...) and the
 *                    table gives new / base, and whether both outputs are the same bytes.
 *                    Each server's CPU time per timed run (its main thread and the whole process,
 *                    from /proc on Linux) is given too: on a shared machine it moves less than
 *                    the wall time. So is this process's own CPU (the client's), and from the
 *                    three the run's CPU floor on this machine's cores (`cpuFloorMs`).
 * SELECTIVE_SERVE_ARGS  extra `serve` arguments for both servers (space-separated)
 * SELECTIVE_BASE_SERVE_ARGS  extra `serve` arguments for the base server only (SELECTIVE_BASE may then
 *                    be this checkout: two settings compared)
 * SELECTIVE_NODE_ARGS   extra node arguments for the servers; with `--cpu-prof --cpu-prof-dir DIR` (and
 *                    no SELECTIVE_BASE) the table is followed by the server's top functions during
 *                    the timed runs (DIR must be empty)
 * Run alone: node --import tsx bench/selective.bench.ts
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import http from 'node:http'
import { createServer } from 'node:net'
import { availableParallelism, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { frameStats } from '../src/store/cold/frames.ts'
import { GEN_VERSION } from '../src/ingest/generate.ts'
import { benchServeArgs, comparisonQueries, cpuFloorMs, ownCpuMs, processCpuMs, waitForServe } from './support.ts'
import { monotonicMicros, profileTable, summarizeProfileDir } from './compare/profile.ts'

const DEFAULT_DIR = join(import.meta.dirname, 'tmp', 'compare', `gen-v${GEN_VERSION}-b1000-t1500-s1`, 'dataset')
/** the compare bench's picks on `solportal gen --seed 1` blocks (1,500 transactions each) */
const POOL = process.env.SELECTIVE_POOL ?? 'G111111DnPt5HyjWmseU3u7rReFKX1deSMi7EQYDuHDt'
const ACCOUNT = process.env.SELECTIVE_ACCOUNT ?? '4111111Dneqr5otaZqC2LqYAhhc4TXxfdc8s6Y1BNTkE'
const PAYER = process.env.SELECTIVE_PAYER ?? '91111111tjNcgGycZSmYXgZYVD7VpjVtjDkeE9UTshJH'

/** blocks of Q5 (everything, all fields) */
const FULL_BLOCKS = Number(process.env.SELECTIVE_FULL_BLOCKS ?? 1000)

type Q = Record<string, unknown>

function queries(FROM: number, TO: number): { name: string; body: Q }[] {
  // the comparison's five queries (bench/support.ts) over the whole dataset, Q3 over its first
  // 2,000 blocks, then three of the reference's queries
  const out = comparisonQueries(FROM, TO, {
    pool: POOL,
    account: ACCOUNT,
    payer: PAYER,
    fullTo: FROM + Math.round(FULL_BLOCKS * 1.1) - 1,
    fullBlocks: FULL_BLOCKS,
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

/** the queries to run on each dataset dir (those whose name starts with one of `only`) */
async function* selected(dirs: string[], only: string[] | undefined) {
  for (const dir of dirs) {
    const probe = await openDatasetDir(dir)
    const from = Number(process.env.SELECTIVE_FROM ?? 310_000_000)
    const to = probe.head()!.number
    await probe.close()
    for (const { name, body } of queries(from, to))
      if (!only || only.some((o) => name.startsWith(o))) yield { dir, name, body }
  }
}

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

/** a `solportal serve --dataset-dir` child from the checkout at `root` */
class Serve {
  private constructor(
    readonly proc: ChildProcess,
    readonly url: string,
  ) {}

  static async start(root: string, dir: string, more: string[] = []): Promise<Serve> {
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port
        s.close(() => done(p))
      })
    })
    const extra = [...words(process.env.SELECTIVE_SERVE_ARGS), ...more]
    const cli = [...words(process.env.SELECTIVE_NODE_ARGS), '--import', 'tsx', join(root, 'src', 'cli', 'main.ts')]
    const proc = spawn(process.execPath, [...cli, ...benchServeArgs(dir, port), ...extra], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const url = `http://127.0.0.1:${port}`
    await waitForServe(proc, url)
    return new Serve(proc, url)
  }

  /**
   * one stream request: ms until the last byte, the body's bytes and lines, and with `sha` a sha1 of
   * the body (timed runs count newlines only, as the compare bench's client does)
   */
  post(body: Q, sha = false): Promise<{ ms: number; bytes: number; lines: number; sha: string }> {
    return new Promise((done, fail) => {
      const h = sha ? createHash('sha1') : null
      let bytes = 0
      let lines = 0
      const t0 = performance.now()
      const req = http.request(
        `${this.url}/datasets/solana-mainnet/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
        (res) => {
          if (res.statusCode !== 200) return fail(new Error(`HTTP ${res.statusCode}`))
          res.on('data', (c: Buffer) => {
            bytes += c.length
            for (let i = c.indexOf(10); i >= 0; i = c.indexOf(10, i + 1)) lines++
            h?.update(c)
          })
          res.on('end', () =>
            done({ ms: performance.now() - t0, bytes, lines, sha: h ? h.digest('hex').slice(0, 12) : '' }),
          )
          res.on('error', fail)
        },
      )
      req.on('error', fail)
      req.end(JSON.stringify(body))
    })
  }

  /** CPU ms the server used so far: its main thread and the whole process (`processCpuMs`) */
  cpu(): { main: number; all: number } {
    return processCpuMs(this.proc.pid!)
  }

  stop(): Promise<void> {
    return new Promise((done) => {
      if (this.proc.exitCode !== null) return done()
      this.proc.once('exit', () => done())
      this.proc.kill('SIGTERM')
    })
  }
}

const words = (v: string | undefined) => (v ?? '').split(' ').filter((a) => a !== '')

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** SELECTIVE_HTTP: the queries through `solportal serve` (and the base checkout's, alternating) */
async function runHttp(dirs: string[], runs: number, only: string[] | undefined): Promise<string> {
  const roots: [string, string][] = [['new', resolve(import.meta.dirname, '..')]]
  if (process.env.SELECTIVE_BASE) roots.unshift(['base', resolve(process.env.SELECTIVE_BASE)])
  const lines = [
    `## selective queries over HTTP (\`solportal serve\` child, one request at a time, time to the last byte; best / median of ${runs} after one untimed run${roots.length > 1 ? ', base and new alternating' : ''})`,
    '',
    `load average at start: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
    '',
    '| query | code | lines | MB | best ms | median ms | MB/s (best) | vs base (best, median) | server CPU ms/run: main thread, process | client CPU ms/run | CPU floor ms/run | CPU vs base (main, process) | sha1 |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  for await (const { dir, name, body } of selected(dirs, only)) {
    const servers: Serve[] = []
    let window: { fromUs: number; toUs: number } | null = null
    try {
      for (const [code, root] of roots)
        servers.push(await Serve.start(root, dir, code === 'base' ? words(process.env.SELECTIVE_BASE_SERVE_ARGS) : []))
      const firsts = []
      for (const s of servers) firsts.push(await s.post(body, true))
      const times: number[][] = servers.map(() => [])
      // the servers' CPU time over the timed runs (main thread, whole process)
      const cpu = servers.map(() => ({ main: 0, all: 0, client: 0 }))
      const fromUs = monotonicMicros()
      for (let i = 0; i < runs; i++)
        for (let k = 0; k < servers.length; k++) {
          const c0 = servers[k].cpu()
          const own0 = ownCpuMs()
          const r = await servers[k].post(body)
          cpu[k].client += ownCpuMs() - own0
          const c1 = servers[k].cpu()
          cpu[k].main += c1.main - c0.main
          cpu[k].all += c1.all - c0.all
          if (r.bytes !== firsts[k].bytes || r.lines !== firsts[k].lines)
            throw new Error(`${roots[k][0]}: output changed between runs`)
          times[k].push(r.ms)
        }
      for (let k = 0; k < servers.length; k++) {
        const best = Math.min(...times[k])
        const med = median(times[k])
        const mb = firsts[k].bytes / 1e6
        const vs =
          roots.length > 1 && k > 0
            ? `${(best / Math.min(...times[0])).toFixed(2)}, ${(med / median(times[0])).toFixed(2)}${firsts[k].sha === firsts[0].sha ? '' : ' (OUTPUT DIFFERS)'}`
            : ''
        const per = (x: number) => (x / runs).toFixed(1)
        const cpuVs =
          roots.length > 1 && k > 0
            ? `${(cpu[k].main / cpu[0].main).toFixed(2)}, ${(cpu[k].all / cpu[0].all).toFixed(2)}`
            : ''
        const floor = cpuFloorMs(cpu[k], availableParallelism()) / runs
        const row = `| ${k === 0 ? name : ''} | ${roots[k][0]} | ${firsts[k].lines} | ${mb.toFixed(1)} | ${best.toFixed(1)} | ${med.toFixed(1)} | ${(mb / (best / 1000)).toFixed(0)} | ${vs} | ${per(cpu[k].main)}, ${per(cpu[k].all)} | ${per(cpu[k].client)} | ${floor.toFixed(1)} | ${cpuVs} | ${firsts[k].sha} |`
        lines.push(row)
        console.error(row)
      }
      window = { fromUs, toUs: monotonicMicros() }
    } finally {
      for (const s of servers) await s.stop()
    }
    const nodeArgs = (process.env.SELECTIVE_NODE_ARGS ?? '').split(' ')
    const profDir = nodeArgs[nodeArgs.indexOf('--cpu-prof-dir') + 1]
    if (roots.length === 1 && nodeArgs.includes('--cpu-prof-dir') && profDir && window) {
      lines.push('', `server CPU profile during the timed runs (${profDir}):`, '')
      lines.push(...profileTable(summarizeProfileDir(profDir, roots[0][1], { ...window, top: 25 }).slice(0, 1)), '')
    }
  }
  lines.push(
    '',
    `Client CPU: this process's main thread (the HTTP client) during the timed runs, per run. CPU floor: on ${availableParallelism()} cores the runs take on average at least max(server main thread, (server process + client) / cores) ms each: where the median is near it, the cores, not waiting, bound the query.`,
  )
  lines.push(
    '',
    `load average at end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  )
  return lines.join('\n')
}

export async function run(): Promise<string> {
  const dirs = (process.env.SELECTIVE_DIRS ?? DEFAULT_DIR).split(',').filter((d) => existsSync(d))
  const runs = Number(process.env.SELECTIVE_RUNS ?? 2)
  const only = process.env.SELECTIVE_ONLY?.split(',')
  if (process.env.SELECTIVE_HTTP === '1') return runHttp(dirs, runs, only)
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
  for await (const { dir, name, body } of selected(dirs, only)) {
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
