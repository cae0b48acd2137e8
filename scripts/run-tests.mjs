// Runs the type check, then every test/**/*.test.ts with node's test runner (via tsx).
import { spawnSync } from 'node:child_process'
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
  const tc = spawnSync('npx', ['tsc', '--noEmit', '-p', '.'], { stdio: 'inherit' })
  if (tc.status !== 0) {
    console.error('type check failed')
    process.exit(tc.status ?? 1)
  }
}
const files = only.length ? only : find('test')
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
)
process.exit(r.status ?? 1)
