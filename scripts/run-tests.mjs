// Runs the lint (prettier --check, tsc), then every test/**/*.test.ts with node's test runner (via tsx).
// `node scripts/run-tests.mjs FILE...` runs only those files, without the lint.
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
  // lint first: formatting (prettier) and the strict type check
  for (const [what, args] of [
    ['format check (npm run format fixes it)', ['prettier', '--check', '--log-level', 'warn', '.']],
    ['type check', ['tsc', '--noEmit', '-p', '.']],
  ]) {
    const r = spawnSync('npx', args, { stdio: 'inherit' })
    if (r.status !== 0) {
      console.error(`${what} failed`)
      process.exit(r.status ?? 1)
    }
  }
}
const files = only.length ? only : find('test')
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
)
process.exit(r.status ?? 1)
