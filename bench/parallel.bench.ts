/**
 * Rendering in worker threads (src/server/render-pool.ts) over mainnet-shaped blocks: the same
 * wide queries through real `solportal serve --dataset-dir` servers, each in a child process, one
 * per `--render-threads` setting (0 and PARALLEL_THREADS, default "1"), the client being this
 * process (so neither the client nor another server shares the measured server's threads); rounds
 * alternate which server goes first, identity and gzip, one stream and PARALLEL_STREAMS concurrent
 * ones. Each run records the server's CPU time (user + system, every thread) and its peak RSS
 * (VmHWM, reset before the run).
 *
 * Data: PARALLEL_BLOCKS generated blocks of PARALLEL_TXS transactions (default 150 of 1,000: ~300
 * non-vote transactions and ~3,100 instructions each, votes dropped at import), generated and
 * imported into bench/tmp/parallel once (kept between runs); PARALLEL_DATASET names an existing
 * dataset directory instead (only read).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { REPO_ROOT } from '../src/ingest/sample.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'
import { freePort, resetPeak, statusKb } from './compare/pg.ts'
import { allFields, benchServeArgs, everything, TOKEN, waitForServe } from './support.ts'

const BLOCKS = Number(process.env.PARALLEL_BLOCKS ?? 150)
const TXS = Number(process.env.PARALLEL_TXS ?? 1000)
const THREADS = (process.env.PARALLEL_THREADS ?? '1').split(',').map(Number)
const ROUNDS = Number(process.env.PARALLEL_ROUNDS ?? 2)
const CACHE_MB = Number(process.env.PARALLEL_CACHE_MB ?? 192)
const STREAMS = Number(process.env.PARALLEL_STREAMS ?? 8)
const FULL_BLOCKS = Number(process.env.PARALLEL_FULL_BLOCKS ?? 15)
const TOKEN_BLOCKS = Number(process.env.PARALLEL_TOKEN_BLOCKS ?? 60)
/** untimed runs of each query on each server first (caches; the render workers' compiled code settles over a few) */
const WARM = Number(process.env.PARALLEL_WARM ?? 3)
const CLI = ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts')]

function log(msg: string): void {
  process.stderr.write(`parallel: ${msg}\n`)
}

function cli(args: string[]): void {
  const r = spawnSync(process.execPath, [...CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (r.status !== 0) throw new Error(`solportal ${args[0]} failed`)
}

function prepare(): string {
  if (process.env.PARALLEL_DATASET) return process.env.PARALLEL_DATASET
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

/** a `solportal serve --dataset-dir` child process */
class Server {
  private constructor(
    readonly threads: number,
    readonly proc: ChildProcess,
    readonly url: string,
  ) {}

  static async start(dataset: string, threads: number): Promise<Server> {
    const port = await freePort()
    const proc = spawn(
      process.execPath,
      [...CLI, ...benchServeArgs(dataset, port), '--cache-mb', String(CACHE_MB), '--render-threads', String(threads)],
      { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
    )
    const base = `http://127.0.0.1:${port}`
    await waitForServe(proc, base)
    return new Server(threads, proc, `${base}/datasets/solana-mainnet/stream`)
  }

  /** CPU seconds (user + system) of the process so far, every thread */
  cpu(): number {
    const f = readFileSync(`/proc/${this.proc.pid}/stat`, 'utf8')
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ')
    return (Number(rest[11]) + Number(rest[12])) / 100
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.proc.once('exit', r))
    this.proc.kill('SIGTERM')
    await exited
  }
}

/** one stream request; resolves with the body bytes as sent (gzip bytes with `gzip`) */
function post(url: string, body: string, gzip: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json', ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
        let wire = 0
        res.on('data', (c: Buffer) => (wire += c.length))
        res.on('end', () => resolve(wire))
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
  await store.close()
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
  const settings = [0, ...THREADS]
  const servers: Server[] = []
  try {
    for (const t of settings) servers.push(await Server.start(dir, t))
    const load0 = os.loadavg()
    log(`load average ${load0.map((x) => x.toFixed(1)).join(' ')}`)
    const rows: string[] = []
    let peakKb = 0
    for (const q of queries) {
      const body = JSON.stringify(q.body)
      // warm every server (caches, worker start) and learn the JSON size
      let json = 0
      for (let i = 0; i < WARM; i++) for (const s of servers) json = await post(s.url, body, false)
      for (const n of [1, STREAMS]) {
        const got: Record<string, { mbs: number[]; cpu: number[]; rss: number[]; wire: number }> = {}
        for (let r = 0; r < ROUNDS; r++) {
          for (const gzip of [false, true]) {
            const order = r % 2 === 0 ? servers : [...servers].reverse()
            for (const s of order) {
              resetPeak(s.proc.pid!)
              const cpu0 = s.cpu()
              const t0 = performance.now()
              const wires = await Promise.all(Array.from({ length: n }, () => post(s.url, body, gzip)))
              const secs = (performance.now() - t0) / 1000
              const cpu = s.cpu() - cpu0
              const rss = statusKb(s.proc.pid!, 'VmHWM') / 1024
              peakKb = Math.max(peakKb, rss * 1024)
              const mbs = (n * json) / 1e6 / secs
              const g = (got[`${s.threads}:${gzip}`] ??= { mbs: [], cpu: [], rss: [], wire: 0 })
              g.mbs.push(mbs)
              g.cpu.push(cpu / secs)
              g.rss.push(rss)
              g.wire = wires[0]
              log(
                `${q.name}, ${n} stream(s), ${s.threads} render thread(s), ${gzip ? 'gzip' : 'identity'}: ${mbs.toFixed(1)} MB/s, server ${(cpu / secs).toFixed(2)} cores, peak RSS ${rss.toFixed(0)} MiB`,
              )
            }
          }
        }
        for (const gzip of [false, true]) {
          const base = median(got[`0:${gzip}`].mbs)
          const cells = settings.map((t) => {
            const g = got[`${t}:${gzip}`]
            const m = median(g.mbs)
            const ratio = t === 0 ? '' : ` (${(m / base).toFixed(2)}×)`
            return `${m.toFixed(1)}${ratio}, ${median(g.cpu).toFixed(2)} cores, ${Math.max(...g.rss).toFixed(0)} MiB`
          })
          const wire = gzip ? ` (gzip ${(got[`0:true`].wire / 1e6).toFixed(1)} MB)` : ''
          rows.push(
            `| ${q.name} | ${n} | ${gzip ? 'gzip' : 'identity'} | ${(json / 1e6).toFixed(1)}${wire} | ${cells.join(' | ')} |`,
          )
        }
      }
    }
    const load1 = os.loadavg()
    const la = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ')
    return [
      `## Rendering in worker threads: --render-threads ${settings.join(' vs ')} (${nums.length} generated mainnet-shaped blocks of ${TXS} tx)`,
      '',
      `Each setting a \`solportal serve --dataset-dir\` child process (\`--cache-mb ${CACHE_MB}\`, response budget lifted), the client this process; cell: MB/s of JSON lines (before gzip) over all the streams, after ${WARM} untimed runs per query and server, the median of ${ROUNDS} rounds (alternating which server goes first; ratio to 0 threads), the server's CPU in cores (user + system of every thread over the run's wall time), its peak RSS (VmHWM reset before each run, the highest run). ${os.availableParallelism()} cores; load average ${la(load0)} at start, ${la(load1)} at end. Highest server peak RSS ${(peakKb / 1024).toFixed(0)} MiB.`,
      '',
      `| query | streams | encoding | JSON MB per stream | ${settings.map((t) => `${t} render threads`).join(' | ')} |`,
      `|---|---|---|---|${settings.map(() => '---|').join('')}`,
      ...rows,
    ].join('\n')
  } finally {
    for (const s of servers) await s.stop()
  }
}
