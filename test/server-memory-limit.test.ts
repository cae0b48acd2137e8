/**
 * The memory limit on a busy machine (`serve --memory-limit-mb`, src/server/memory-gate.ts): a
 * real `solportal serve --dataset-dir` over generated 1,500-transaction blocks, two busy loops
 * beside it on the cores (the machine is loaded, garbage collection falls behind), and 32
 * concurrent streams of every field of every row whose clients read slowly (2 MB/s each). Every
 * such stream holds the chunk it renders from until its blocks are written: without the limit the
 * server's resident memory grows with the number of streams (on the 2-core machine 447-461 MiB
 * after 5 s, 521-537 MiB after 20-25 s, still rising). With `--memory-limit-mb 320` the peak (VmHWM, every thread)
 * stays under 320 MiB and the streams keep moving.
 *
 * The dataset (40 blocks, ~30 s to generate and import) is kept in the system's temporary
 * directory and reused by later runs. And the gate's rules alone, on a simulated memory reading.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { MemoryGate } from '../src/server/memory-gate.ts'
import { everything } from './support/http/hostile.ts'
import { startServe } from './support/http/load.ts'

const LIMIT_MIB = 320
const STREAMS = 32
const READ_BYTES_PER_S = 2_000_000
const RUN_MS = 20_000
const FIRST = 310_000_000
const BLOCKS = 40
const ROOT = join(import.meta.dirname, '..')

/** 40 generated blocks of 1,500 transactions imported into a dataset directory, made once */
function dataset(): string {
  const dir = join(tmpdir(), `solportal-test-memory-b${BLOCKS}-t1500-s1`)
  const ds = join(dir, 'dataset')
  if (existsSync(join(dir, 'imported'))) return ds
  mkdirSync(dir, { recursive: true })
  const cli = (args: string[]) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, `solportal ${args[0]}: ${r.stderr}`)
  }
  const archive = join(dir, 'blocks.jsonl.gz')
  const gen = `gen --blocks ${BLOCKS} --seed 1 --from-slot ${FIRST} --txs-per-block 1500 --out`
  cli([...gen.split(' '), archive])
  cli(['import', '--no-progress', ds, archive])
  writeFileSync(join(dir, 'imported'), '')
  return ds
}

function statusMiB(pid: number, key: 'VmHWM'): number {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : 0
}

/** a stream request whose client reads at most READ_BYTES_PER_S since `t0` */
function slowStream(url: string, body: unknown, t0: number, got: { bytes: number }): http.ClientRequest {
  const req = http.request(
    `${url}/datasets/solana-mainnet/stream`,
    { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
    (res) => {
      let mine = 0
      res.on('data', (c: Buffer) => {
        mine += c.length
        got.bytes += c.length
        const ahead = mine - ((performance.now() - t0) / 1000) * READ_BYTES_PER_S
        if (ahead > 0) {
          res.pause()
          setTimeout(() => res.resume(), Math.min(1000, (ahead / READ_BYTES_PER_S) * 1000))
        }
      })
      res.on('error', () => {})
    },
  )
  req.on('error', () => {})
  req.end(JSON.stringify(body))
  return req
}

test(
  `${STREAMS} wide streams read slowly on a loaded machine stay under --memory-limit-mb ${LIMIT_MIB}`,
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async () => {
    const ds = dataset()
    // two busy loops, one per core, each ending by itself
    const busy: ChildProcess[] = [0, 1].map(() =>
      spawn(process.execPath, ['-e', `const e = Date.now() + ${RUN_MS + 60_000}; while (Date.now() < e);`], {
        stdio: 'ignore',
      }),
    )
    const s = await startServe([
      '--dataset-dir',
      ds,
      '--quiet',
      '--rate-limit',
      '0',
      '--response-time-ms',
      '600000',
      '--response-bytes',
      String(4 * 1024 ** 3),
      '--memory-limit-mb',
      String(LIMIT_MIB),
    ])
    const reqs: http.ClientRequest[] = []
    try {
      const t0 = performance.now()
      const got = { bytes: 0 }
      for (let i = 0; i < STREAMS; i++)
        reqs.push(slowStream(s.url, everything(FIRST + Math.floor((i * BLOCKS) / STREAMS)), t0, got))
      let peak = 0
      const samples: string[] = []
      for (let n = 0; performance.now() - t0 < RUN_MS; n++) {
        await new Promise((r) => setTimeout(r, 250))
        peak = Math.max(peak, statusMiB(s.child.pid!, 'VmHWM'))
        if (n % 20 === 0) samples.push(`${((performance.now() - t0) / 1000) | 0} s: ${Math.round(peak)} MiB`)
      }
      const sent = got.bytes
      assert.ok(peak < LIMIT_MIB, `peak RSS ${peak.toFixed(0)} MiB >= ${LIMIT_MIB} MiB (${samples.join(', ')})`)
      // the streams moved on: the limit holds them back, never stops them
      assert.ok(sent > 20e6, `${sent} bytes sent in ${RUN_MS} ms`)
    } finally {
      for (const r of reqs) r.destroy()
      for (const b of busy) b.kill('SIGKILL')
      await s.stop()
    }
  },
)

test('the gate: at once under 3/4 of the limit; above it a stream waits while another holds a chunk, and one always goes', async () => {
  let rss = 100
  let collections = 0
  const gate = new MemoryGate(400, { rss: () => rss, gc: () => collections++, gcIntervalMs: 0, pollMs: 1 })
  const a = gate.tryEnter()!
  const b = gate.tryEnter()!
  assert.equal(gate.holding, 2)
  assert.equal(collections, 0, 'no collection under the soft limit')
  rss = 350 // over 300 (3/4 of 400)
  assert.equal(gate.tryEnter(), null, 'a third stream waits')
  assert.ok(collections >= 1, 'the heap was collected')
  let entered: (() => void) | null = null
  const waiting = gate.enter().then((l) => (entered = l))
  await new Promise((r) => setTimeout(r, 20))
  assert.equal(entered, null)
  a()
  a() // a release counts once
  await new Promise((r) => setTimeout(r, 20))
  assert.equal(entered, null, 'still one holder, still over')
  b()
  await waiting
  assert.ok(entered, 'no holder left: it goes, over the limit or not')
  assert.equal(gate.holding, 1)
  // back under the soft limit: at once again, beside a holder
  rss = 250
  const c = gate.tryEnter()
  assert.ok(c)
  assert.equal(gate.holding, 2)
  // an aborted wait answers null and takes nothing
  rss = 350
  const ctl = new AbortController()
  const aborted = gate.enter(ctl.signal)
  ctl.abort()
  assert.equal(await aborted, null)
  assert.equal(gate.holding, 2)
  // no limit: never waits
  const off = new MemoryGate(0, { rss: () => 1e12, gc: null })
  off.tryEnter()
  assert.ok(off.tryEnter())
})
