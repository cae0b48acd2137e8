/**
 * Resilience scenarios: each module in bench/resilience/*.ts sets up a fault on loopback (a stalled
 * object store, hostile request bodies, a full disk, ...) against the real server or importer and
 * says whether the service held: `export async function run(): Promise<{ scenario, held, detail }>`.
 * This bench runs them one after the other and prints a table of what held. `RESILIENCE=a,b` runs
 * only the named scenario files (without `.ts`).
 */
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { errorMessage } from '../src/util/errors.ts'

export interface ScenarioResult {
  scenario: string
  held: boolean
  detail: string
}

const dir = join(dirname(fileURLToPath(import.meta.url)), 'resilience')

export async function run(): Promise<string> {
  const only = process.env.RESILIENCE?.split(',').filter(Boolean)
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .filter((f) => !only || only.includes(f.replace(/\.ts$/, '')))
    .sort()
  const rows: string[] = []
  let held = 0
  for (const f of files) {
    const t0 = Date.now()
    process.stderr.write(`resilience: ${f} ...\n`)
    let r: ScenarioResult
    try {
      const mod = (await import(pathToFileURL(join(dir, f)).href)) as { run: () => Promise<ScenarioResult> }
      r = await mod.run()
    } catch (e) {
      r = { scenario: f.replace(/\.ts$/, ''), held: false, detail: `the scenario failed to run: ${errorMessage(e)}` }
    }
    if (r.held) held++
    const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')
    rows.push(
      `| ${cell(r.scenario)} | ${r.held ? 'held' : '**did not hold**'} | ${cell(r.detail)} | ${((Date.now() - t0) / 1000).toFixed(1)} s |`,
    )
  }
  return [
    '## Resilience scenarios',
    '',
    `${held} of ${files.length} held (bench/resilience/*.ts, faults on loopback).`,
    '',
    '| scenario | result | what was seen | time |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n')
}
