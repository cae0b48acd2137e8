/**
 * `npm run bench`: runs every bench/*.bench.ts (each exports `run(): Promise<string>` returning a
 * markdown section), prints the sections and writes them to bench/results/latest.md.
 *
 * `npm run bench -- NAME...` runs only the named benches (e.g. `query http`).
 */
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { portablePaths } from './support.ts'

const dir = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.includes(f.replace(/\.bench\.ts$/, '')))
  .sort()

const cpu = os.cpus()[0]?.model ?? 'unknown cpu'
const sections: string[] = [
  `# solportal benchmarks\n\n${new Date().toISOString()} · node ${process.version} · ${cpu} · ${os.cpus().length} cores · ${Math.round(os.totalmem() / 2 ** 30)} GiB\n`,
]
for (const f of files) {
  const t0 = Date.now()
  process.stderr.write(`bench: ${f} ...\n`)
  const mod = (await import(pathToFileURL(join(dir, f)).href)) as { run: () => Promise<string> }
  const section = await mod.run()
  sections.push(section.trim() + `\n\n_(${f} took ${((Date.now() - t0) / 1000).toFixed(1)} s)_\n`)
  console.log(section.trim() + '\n')
}
mkdirSync(join(dir, 'results'), { recursive: true })
const name = only.length ? `latest-${only.join('-')}.md` : 'latest.md'
writeFileSync(join(dir, 'results', name), portablePaths(sections.join('\n')))
console.error(`bench: results written to bench/results/${name}`)
