/**
 * `serve --heap-growing-percent 25` bounds how far V8's heap grows past its live size
 * (src/util/gc-tuning.ts `boundHeapGrowth`): a child process holds a live set (a cold cache's
 * stand-in) and makes old-generation garbage fast (rows rendered and dropped); with the bound its
 * heap stays within a small multiple of the live set (measured: 170-185 MiB for a 50 MiB live set,
 * against 430-439 MiB with V8's own factor, on the shared 2-core box).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'

const ROOT = join(import.meta.dirname, '..')

const WORKLOAD = `
import { boundHeapGrowth } from './src/util/gc-tuning.ts'
if (process.argv[1] === 'bounded') boundHeapGrowth(25)
const live = []
for (let i = 0; i < 150_000; i++) live.push({ s: 'x'.repeat(20) + i, a: [i, i + 1, i + 2, i + 3] })
const liveBytes = process.memoryUsage().heapUsed
let max = 0
const window = []
for (let r = 0; r < 80; r++) {
  const batch = []
  for (let i = 0; i < 20_000; i++) batch.push({ s: 'y'.repeat(30) + i, a: [i, r] })
  window.push(batch)
  if (window.length > 8) window.shift()
  max = Math.max(max, process.memoryUsage().heapTotal)
}
console.log(JSON.stringify({ liveBytes, max, n: live.length + window.length }))
`

function heapOf(mode: string): { liveBytes: number; max: number } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', WORKLOAD, mode], {
    cwd: ROOT,
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

test('a fixed heap growing factor bounds the heap at a small multiple of its live size, under fast old-generation garbage', () => {
  const own = heapOf('v8')
  const b = heapOf('bounded')
  const MiB = 2 ** 20
  const say = (h: { liveBytes: number; max: number }) =>
    `${(h.max / MiB).toFixed(0)} MiB for a live set of ${(h.liveBytes / MiB).toFixed(0)} MiB`
  // live set + 25 % + the young generation (up to 3 x 16 MiB) + the garbage the window keeps live
  assert.ok(b.max < 4 * b.liveBytes, `bounded heap peaked at ${say(b)}`)
  assert.ok(b.max < 0.7 * own.max, `bounded heap peaked at ${say(b)}, V8's own factor at ${say(own)}`)
})
