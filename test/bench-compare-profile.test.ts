// bench/compare: the CPU-profile summary that explains unmet targets (a real `node --cpu-prof` child,
// windowed by the shared monotonic clock), the tail bench's table reader, and the CPU floor a missed
// speed target is explained with (a real busy child's CPU read from /proc).
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { boundedBy, summarizeProfileDir } from '../bench/compare/profile.ts'
import { tailP99, tailStages } from '../bench/compare/tail.ts'
import { cpuFloor, cpuFloorMs, processCpuMs } from '../bench/support.ts'
import { warmUp } from '../bench/compare/warm.ts'

test('a --cpu-prof profile summarized over a window of the monotonic clock names the function that ran in it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'compare-profile-'))
  try {
    const script = join(dir, 'child.mjs')
    writeFileSync(
      script,
      `const now = () => Number(process.hrtime.bigint() / 1000n)
function spinAlpha(ms) { const e = Date.now() + ms; let x = 0; while (Date.now() < e) x += Math.sqrt(x + 1); return x }
function spinBeta(ms) { const e = Date.now() + ms; let x = 0; while (Date.now() < e) x += Math.sin(x + 1); return x }
spinAlpha(400)
const a = now()
spinBeta(400)
const b = now()
process.stdout.write(JSON.stringify({ a, b }))
`,
    )
    const r = spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, script], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const w = JSON.parse(r.stdout) as { a: number; b: number }

    const whole = summarizeProfileDir(dir, dir)
    assert.equal(whole.length, 1)
    assert.equal(whole[0].thread, 'main')
    const names = whole[0].top.map((f) => f.name)
    assert.ok(names.includes('spinAlpha') && names.includes('spinBeta'), names.join(', '))

    const win = summarizeProfileDir(dir, dir, { fromUs: w.a, toUs: w.b })
    assert.equal(win[0].windowed, true)
    assert.equal(win[0].top[0].name, 'spinBeta')
    assert.equal(win[0].top[0].where, 'child.mjs:3')
    assert.ok(!win[0].top.some((f) => f.name === 'spinAlpha'), 'a function that ran outside the window')
    assert.ok(win[0].top[0].share > 0.5, String(win[0].top[0].share))
    // the one-line summary the targets table shows
    assert.match(
      boundedBy(win),
      /^main thread \([\d.]+ s busy, \d+% of its sampled time\): `spinBeta` \(child\.mjs:3\) \d+%/,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("the tail bench's table: client p99 of the row with the most clients, found by column name", () => {
  const md = [
    '## Tail latency',
    '',
    '| clients | blocks | lines received / expected | store p50 ms | store p99 ms | client p50 ms | client p99 ms |',
    '|---|---|---|---|---|---|---|',
    '| 1 | 40 | 40/40 | 23.7 | 84.5 | 25.1 | 85.6 |',
    '| 100 | 40 | 4000/4000 | 23.3 | 69.8 | 31.0 | 119.4 |',
  ].join('\n')
  assert.deepEqual(tailP99(md), { p99Ms: 119.4, clients: 100 })
  assert.equal(tailP99('no table here'), null)
})

test("the tail bench's tables: where the latency of the default path's row with the most clients goes", () => {
  const md = [
    '## Live tail, mainnet-sized blocks (fake node → clients)',
    '',
    '| parse + normalize | clients | lines received / expected | block → answer p50 ms | answer → store p99 ms | client p99 ms |',
    '|---|---|---|---|---|---|',
    '| worker threads (2) (default) | 1 | 30/30 | 17 | 89 | 119 |',
    '| main thread | 100 | 3000/3000 | 15 | 104 | 140 |',
    '| worker threads (2) (default) | 100 | 3000/3000 | 14 | 105 | 141 |',
    '',
    '### answer → store by stage (p50 / p99 ms; the slowest block of each row: ms per stage)',
    '',
    '| parse + normalize | clients | normalize | LMDB write | store → client p50 / p99 | slowest block: total = stages |',
    '|---|---|---|---|---|---|',
    '| worker threads (2) (default) | 100 | 36 / 61 | 8 / 18 | 8 / 23 | 105 = 3 + 61 + 11 |',
    '| main thread | 100 | - | 26 / 44 | 3 / 23 | 104 = 63 + 39 |',
  ].join('\n')
  assert.equal(
    tailStages(md),
    'Live tail, mainnet-sized blocks: block → answer p50 14, answer → store p99 105, client p99 141; ' +
      'answer → store by stage: normalize 36 / 61, LMDB write 8 / 18, store → client 8 / 23',
  )
  assert.equal(tailStages('no table here'), null)
})

test('the CPU floor of a run: the main thread alone, or the server and the client sharing the cores', () => {
  // the main thread bounds it: 12 ms against (13 + 8) / 2
  assert.equal(cpuFloorMs({ main: 12, all: 13, client: 8 }, 2), 12)
  // the cores do: (13 + 15) / 2 = 14 ms against the main thread's 12
  assert.equal(cpuFloorMs({ main: 12, all: 13, client: 15 }, 2), 14)
  assert.match(
    cpuFloor({ main: 12, all: 13, client: 15, meanMs: 16 }, 2),
    /client 15\.0 ms \(its main thread\); on 2 cores .* = 14\.0 ms \(measured mean 16\.0 ms\)$/,
  )
})

test(
  "a child's CPU from /proc: its main thread's busy time counted, the process's at least as much",
  { skip: process.platform !== 'linux' },
  async () => {
    // spins until it has run 400 ms of CPU (not of wall time: on a loaded machine the thread gets a
    // fraction of a core), then says so and idles
    const child = spawn(process.execPath, [
      '-e',
      'let x = 0; while (process.cpuUsage().user < 400_000) for (let i = 0; i < 1e5; i++) x += Math.sqrt(x + 1); process.stdout.write("spun\\n"); setTimeout(() => {}, 5000)',
    ])
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('spun') && resolve())
        child.on('error', reject)
      })
      const c = processCpuMs(child.pid!)
      assert.ok(c.main >= 200, `main thread ${c.main} ms after a 400 ms spin`)
      assert.ok(c.all >= c.main, `process ${c.all} ms, main thread ${c.main}`)
    } finally {
      child.kill()
    }
    // a process that is gone: zeros, not a throw
    assert.deepEqual(processCpuMs(2 ** 30), { main: 0, all: 0 })
  },
)

test('the compare warm-up: decided by the query’s own time, not by the checked run’s', async () => {
  const runner = (ms: number) => {
    let calls = 0
    const run = async () => {
      calls++
      await new Promise((r) => setTimeout(r, ms))
    }
    return { run, calls: () => calls }
  }
  // a fast query whose check was slow (a large output parsed and hashed): one plain run, then warm-up runs
  const fast = runner(5)
  const n = await warmUp(400, fast.run, 100, 10)
  assert.equal(n, fast.calls())
  assert.ok(n >= 5 && n <= 11, `${n} runs`)
  // a query slower than the warm-up budget: the plain run only
  const slow = runner(120)
  assert.equal(await warmUp(400, slow.run, 100, 10), 1)
  // a fast check: no plain run, straight to the warm-up runs (capped)
  const quick = runner(1)
  assert.equal(await warmUp(20, quick.run, 1000, 10), 10)
})
