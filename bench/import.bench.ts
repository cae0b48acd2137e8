/**
 * `solportal import` throughput on generated mainnet-shaped blocks: in-process (`--workers 1`) vs
 * worker threads (`--workers N`, N = available parallelism), alternating runs on the same archive,
 * and the generator's own speed. Checks that both modes wrote the same chunk files (sha256 in the
 * manifests).
 *
 * Env: IMPORT_BLOCKS (default 200), IMPORT_TXS (mean transactions per block, default 1000),
 * IMPORT_ROUNDS (default 2), IMPORT_WORKERS (default the available parallelism).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/cli/commands/import.ts'
import { writeArchive, type GenStats } from '../src/ingest/generate.ts'
import { readCatalogue } from '../src/store/cold/catalogue.ts'
import { coldDir } from '../src/store/dataset-dir.ts'

const WORK = join(fileURLToPath(new URL('.', import.meta.url)), 'tmp', 'import')
const BLOCKS = Number(process.env.IMPORT_BLOCKS ?? 200)
const TXS = Number(process.env.IMPORT_TXS ?? 1000)
const ROUNDS = Number(process.env.IMPORT_ROUNDS ?? 2)
const WORKERS = Number(process.env.IMPORT_WORKERS ?? availableParallelism())

const log = (s: string) => process.stderr.write(`import bench: ${s}\n`)
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })

export async function run(): Promise<string> {
  mkdirSync(WORK, { recursive: true })
  const archive = join(WORK, `gen-b${BLOCKS}-t${TXS}.jsonl.gz`)
  const statsFile = `${archive}.json`
  let gen: { stats: GenStats; seconds: number; cpu: number; cached: boolean }
  if (existsSync(archive) && existsSync(statsFile)) {
    gen = { ...JSON.parse(readFileSync(statsFile, 'utf8')), cached: true }
  } else {
    log(`generating ${BLOCKS} blocks of ~${TXS} transactions`)
    const t = performance.now()
    const c = process.cpuUsage()
    const stats = await writeArchive(archive, { blocks: BLOCKS, txsPerBlock: TXS })
    const cu = process.cpuUsage(c)
    gen = { stats, seconds: (performance.now() - t) / 1000, cpu: (cu.user + cu.system) / 1e6, cached: false }
    writeFileSync(statsFile, JSON.stringify({ stats, seconds: gen.seconds, cpu: gen.cpu }))
  }
  const ix = gen.stats.nonVoteInstructions
  const rows: string[] = []
  const sums = new Map<number, { s: number; cpu: number; n: number }>()
  let reference: string | null = null
  for (let round = 0; round < ROUNDS; round++) {
    for (const workers of [1, WORKERS]) {
      const dir = join(WORK, `ds-w${workers}`)
      rmSync(dir, { recursive: true, force: true })
      const c = process.cpuUsage()
      const r = await runImport(dir, [archive], { progress: 'none', workers })
      const cu = process.cpuUsage(c)
      const cpu = (cu.user + cu.system) / 1e6
      const files = JSON.stringify((await readCatalogue(coldDir(dir)))!.map((e) => [e.file, e.sha256]))
      if (reference === null) reference = files
      else if (files !== reference) throw new Error(`import bench: --workers ${workers} wrote other chunk files`)
      log(`round ${round + 1}, ${workers} worker(s): ${r.seconds.toFixed(1)} s, CPU ${cpu.toFixed(1)} s`)
      rows.push(
        `| ${round + 1} | ${workers} | ${r.seconds.toFixed(1)} | ${fmt(r.imported / r.seconds, 1)} | ${fmt(ix / r.seconds)} | ${cpu.toFixed(1)} |`,
      )
      const x = sums.get(workers) ?? { s: 0, cpu: 0, n: 0 }
      x.s += r.seconds
      x.cpu += cpu
      x.n++
      sums.set(workers, x)
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const one = sums.get(1)!
  const many = sums.get(WORKERS)!
  const perBlock = (n: number) => fmt(n / gen.stats.blocks)
  return [
    `## import (${fmt(gen.stats.blocks)} generated blocks, ${perBlock(gen.stats.txs)} transactions, ${perBlock(ix)} non-vote instructions per block)`,
    '',
    `Archive: ${(gen.stats.bytes / 2 ** 20).toFixed(0)} MiB of JSON (gzip level 1). Generator: ${gen.seconds.toFixed(1)} s, ` +
      `${fmt(gen.stats.blocks / gen.seconds, 1)} blocks/s (CPU ${gen.cpu.toFixed(1)} s)${gen.cached ? ', measured when the archive was generated' : ''}.`,
    '',
    '| round | workers | seconds | blocks/s | instructions/s | CPU s (all threads) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Mean: 1 worker ${fmt((one.n * gen.stats.blocks) / one.s, 1)} blocks/s, ${WORKERS} workers ${fmt((many.n * gen.stats.blocks) / many.s, 1)} blocks/s ` +
      `(${(one.s / one.n / (many.s / many.n)).toFixed(2)}×); the chunk files of both are identical (sha256).`,
  ].join('\n')
}
