/**
 * `solportal import DIR ARCHIVE...` and `solportal import DIR --rpc URL --from SLOT`: the command
 * line of the bulk import (src/ingest/import: the pipeline, its backends, progress and resume).
 * This module checks the flags, turns them into the import's options, stops the import on
 * SIGINT / SIGTERM (after the current batch becomes durable) and prints its summary. The import
 * itself loads once the flags are checked.
 */
import type { Command } from 'commander'
import { existsSync } from 'node:fs'
import type { ImportOptions, ImportResult } from '../../ingest/import/index.ts'
import { isUrl } from '../../ingest/car/source.ts'
import { MAX_TARGET_BLOCKS, MAX_TARGET_BYTES } from '../../store/cold/disk-store-options.ts'
import { errorMessage } from '../../util/errors.ts'
import { addRpcProviderOptions, httpUrlOption, intOption, UsageError } from '../options.ts'
import type { RpcInput } from './import-rpc.ts'
import type { RangeFlags } from './rpc-range.ts'

/** the flags of `solportal import` */
type ImportFlags = {
  includeVotes?: boolean
  verify?: boolean
  chunkBlocks?: string
  chunkMb?: string
  compress?: boolean
  progress?: boolean
  workers?: string
  stagingDir?: string
} & RangeFlags & { rpc?: string }

/** misused options: a UsageError, one line from main.ts, before anything is written */
function importOptions(dir: string, archives: string[], o: ImportFlags): ImportOptions {
  if (o.rpc) {
    httpUrlOption('rpc', o.rpc)
    if (archives.length) throw new UsageError('--rpc reads the blocks from the node: give no archive files')
    if (dir.startsWith('s3://')) throw new UsageError('--rpc imports into a local dataset directory')
  } else if (!archives.length) throw new UsageError('give archive files or directories, or --rpc URL --from SLOT')
  else if (o.from !== undefined || o.to !== undefined) throw new UsageError('--from and --to apply only to --rpc')
  for (const a of archives) if (!isUrl(a) && !existsSync(a)) throw new UsageError(`${a}: no such file or directory`)
  const targetBlocks = o.chunkBlocks ? intOption('chunk-blocks', o.chunkBlocks, 1, MAX_TARGET_BLOCKS) : undefined
  const chunkMb = o.chunkMb ? intOption('chunk-mb', o.chunkMb, 1, MAX_TARGET_BYTES / (1024 * 1024)) : undefined
  const workers = o.workers ? intOption('workers', o.workers, 1) : undefined
  return {
    includeVotes: o.includeVotes,
    verify: o.verify,
    targetBlocks,
    targetBytes: chunkMb !== undefined ? chunkMb * 1024 * 1024 : undefined,
    compress: o.compress,
    progress: o.progress === false ? 'none' : undefined,
    workers,
  }
}

/** the summary line(s) of an import on stderr */
function printSummary(r: ImportResult, input: RpcInput | undefined): void {
  process.stderr.write(
    `${r.interrupted ? 'interrupted after importing' : 'imported'} ${r.imported} blocks` +
      (r.imported ? ` (${r.firstBlock}..${r.lastBlock})` : '') +
      `${r.skipped ? `, skipped ${r.skipped} already present (same hash)` : ''}, ${r.warnings} warnings, ${r.seconds.toFixed(1)} s` +
      `${r.workers > 1 ? ` (${r.workers} workers)` : ''}\n`,
  )
  if (input) {
    const errors = input.range.fetcher.errorSummary()
    process.stderr.write(
      `from ${input.range.node}, slots up to ${input.range.to}` +
        `${input.skipped ? `: ${input.skipped} listed slots answered skipped (recorded)` : ''}` +
        `${errors ? `; the node: ${errors}` : ''}\n`,
    )
  }
}

/** the import of the command line, stopped by SIGINT / SIGTERM after the current batch (twice: at once) */
async function importAction(dir: string, archives: string[], o: ImportFlags): Promise<void> {
  const opts = importOptions(dir, archives, o)
  const [{ importToS3, runImport }, { RpcInput }] = await Promise.all([
    import('../../ingest/import/index.ts'),
    import('./import-rpc.ts'),
  ])
  const ac = new AbortController()
  const onSig = () => {
    if (ac.signal.aborted) process.exit(130)
    process.stderr.write('\ninterrupted: writing the current batch, then stopping (again to abort now)\n')
    ac.abort()
  }
  process.on('SIGINT', onSig)
  process.on('SIGTERM', onSig)
  let input: RpcInput | undefined
  try {
    if (o.rpc) input = await RpcInput.open(dir, o.rpc, o, (l) => process.stderr.write(l + '\n'))
    const io: ImportOptions = { input, ...opts, signal: ac.signal }
    const r = dir.startsWith('s3://')
      ? await importToS3(dir, archives, { ...io, stagingDir: o.stagingDir })
      : await runImport(dir, archives, io)
    printSummary(r, input)
    if (r.interrupted) process.exitCode = 130
  } catch (e) {
    if (e instanceof UsageError) throw e
    process.stderr.write(`import failed: ${errorMessage(e)}\n`)
    process.exitCode = 1
  } finally {
    input?.close()
    process.off('SIGINT', onSig)
    process.off('SIGTERM', onSig)
  }
}

export function register(program: Command): void {
  const cmd = program
    .command('import')
    .description(
      'bulk-load archive files (.jsonl / .jsonl.gz of getBlock results, or directories of them) into a dataset directory; resumable',
    )
    .argument(
      '<dir>',
      'dataset directory (created when missing), or s3://BUCKET/PREFIX (imported into --staging-dir, then published)',
    )
    .argument(
      '[archive...]',
      'archive files, Old Faithful CAR files (or http(s):// URLs of them), or directories of both (none with --rpc); files are imported in the order of their first blocks (with a CAR file among them: in command-line order)',
    )
    .option('--include-votes', 'keep vote transactions')
    .option('--verify', "Old Faithful CAR inputs: check each node's sha256 against its CID")
    .option('--chunk-blocks <n>', `blocks per chunk at most (default 10000, at most ${MAX_TARGET_BLOCKS})`)
    .option('--chunk-mb <n>', `approximate chunk size in MB (default 32, at most ${MAX_TARGET_BYTES / (1024 * 1024)})`)
    .option('--compress', 'deflate column blobs where it saves >= 25%')
    .option('--no-progress', 'no progress output')
    .option('--staging-dir <dir>', 's3:// targets: the local dataset directory imported into before publishing')
    .option(
      '--workers <n>',
      'threads that parse, normalize and encode (default: the available cores, at most 8; 1 = none)',
    )
    .option('--rpc <url>', 'read the blocks from a Solana node instead of archives (with --from, --to)')
    .option('--from <slot>', "--rpc: first slot (the import resumes after the dataset's last block)")
    .option('--to <slot>', "--rpc: last slot (default: the node's finalized head)")
    .option('--rpc-concurrency <n>', '--rpc: getBlock requests in flight', '8')
  addRpcProviderOptions(cmd).action(importAction)
}
