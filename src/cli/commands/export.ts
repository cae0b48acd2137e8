/**
 * `solportal export DIR OUTDIR [--from N] [--to M]`: the records of a dataset directory as Parquet
 * files compressed with zstd, one per record kind (src/export/parquet.ts, docs/export.md). The export
 * code loads once the arguments are checked.
 */
import type { Command } from 'commander'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { intOption, UsageError } from '../options.ts'

export function register(program: Command): void {
  program
    .command('export')
    .description('write the records of a dataset directory as Parquet files (zstd), one file per record kind')
    .argument('<dir>', 'dataset directory (written by solportal import)')
    .argument('<outdir>', 'output directory (created when missing; files of an earlier export are replaced)')
    .option('--from <n>', 'first block number (default: the first block of the dataset)')
    .option('--to <n>', 'last block number (default: the last block of the dataset)')
    .action(async (dir: string, outDir: string, opts: { from?: string; to?: string }) => {
      const from = opts.from === undefined ? 0 : intOption('from', opts.from)
      const to = opts.to === undefined ? Number.MAX_SAFE_INTEGER : intOption('to', opts.to)
      if (from > to) throw new UsageError(`--from ${from} is above --to ${to}`)
      if (!existsSync(join(dir, 'dataset.json')) || !statSync(dir).isDirectory()) {
        throw new UsageError(`${dir}: not a dataset directory (no dataset.json; see solportal import)`)
      }
      if (existsSync(outDir) && !statSync(outDir).isDirectory()) {
        throw new UsageError(`${outDir}: exists and is not a directory`)
      }
      const [{ exportParquet }, { openDatasetDir }] = await Promise.all([
        import('../../export/parquet.ts'),
        import('../../store/dataset-dir.ts'),
      ])
      const t0 = Date.now()
      const store = await openDatasetDir(dir)
      try {
        const r = await exportParquet(store, outDir, from, to)
        const range = r.firstBlock === null ? 'no blocks in range' : `blocks ${r.firstBlock}..${r.lastBlock}`
        const counts = Object.entries(r.rows)
          .map(([f, n]) => `${f.replace('.parquet', '')} ${n}`)
          .join(', ')
        process.stderr.write(
          `exported ${r.blocks} blocks (${range}) to ${outDir}: ${counts} rows, in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
        )
      } finally {
        await store.close()
      }
    })
}
