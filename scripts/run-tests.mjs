// Runs the lint (prettier --check, tsc), then every test/**/*.test.ts with node's test runner (via tsx),
// the longest files first.
// `node scripts/run-tests.mjs FILE...` runs only those files, without the lint.
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

function find(dir) {
  const out = []
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...find(p))
    else if (name.endsWith('.test.ts')) out.push(p)
  }
  return out
}

const only = process.argv.slice(2)
if (only.length === 0) {
  // lint first: formatting (prettier) and the strict type check, side by side (one core each)
  const checks = [
    ['format check (npm run format fixes it)', ['prettier', '--check', '--log-level', 'warn', '.']],
    ['type check', ['tsc', '--noEmit', '-p', '.']],
  ].map(([what, args]) => {
    const c = spawn('npx', args, { stdio: 'inherit' })
    return new Promise((resolve) => {
      c.on('error', () => resolve({ what, status: 1 }))
      c.on('exit', (code) => resolve({ what, status: code ?? 1 }))
    })
  })
  const failed = (await Promise.all(checks)).filter((r) => r.status !== 0)
  for (const r of failed) console.error(`${r.what} failed`)
  if (failed.length) process.exit(failed[0].status)
}
// The longest files start first (each ~25-210 s on an idle 2-core box, the rest mostly a few
// seconds): started last in name order, one of them would run alone at the end with a core idle.
const LONGEST_FIRST = [
  'test/realtime-soak-cold.test.ts',
  'test/server-resilience.test.ts',
  'test/cold-crash.test.ts',
  'test/server-memory-limit.test.ts',
  'test/realtime-crash.test.ts',
  'test/cli-misuse.test.ts',
  'test/serve-archive.test.ts',
  'test/query-page.test.ts',
  'test/observability.test.ts',
  'test/cold-import.test.ts',
  'test/store-disk-full.test.ts',
  'test/realtime-disk-full.test.ts',
]
const rank = (f) => {
  const i = LONGEST_FIRST.indexOf(f.split('\\').join('/'))
  return i === -1 ? LONGEST_FIRST.length : i
}
const files = only.length ? only : find('test').sort((a, b) => rank(a) - rank(b))
const gone = only.length ? [] : LONGEST_FIRST.filter((f) => !files.some((g) => g.split('\\').join('/') === f))
if (gone.length) {
  console.error(`scripts/run-tests.mjs: LONGEST_FIRST names files that do not exist: ${gone.join(', ')}`)
  process.exit(1)
}
// two files at a time, in this order (scripts/test-files.mjs: `node --test` would sort them by name)
const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/test-files.mjs', ...files], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test' },
})
process.exit(r.status ?? 1)
