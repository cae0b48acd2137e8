/**
 * `solportal normalize FILE...`: prints the normalized blocks of archive files (.jsonl/.jsonl.gz,
 * or directories of them) or of bare `getBlock` results as JSON lines (u64 values as decimal
 * strings, full records including the internal `dataPrefix`); warnings go to stderr. The
 * normalization (normalize-files.ts) loads when the command runs.
 */
import type { Command } from 'commander'
import { errorMessage } from '../../util/errors.ts'
import type { NormalizeCliOptions } from './normalize-files.ts'

function writeStdout(text: string): Promise<void> | void {
  if (process.stdout.write(text)) return
  return new Promise((resolve) => process.stdout.once('drain', () => resolve()))
}

export function register(program: Command): void {
  program
    .command('normalize')
    .description('print normalized blocks (JSON lines) of archive files or bare getBlock JSON results')
    .argument('<file...>', 'archive files (.jsonl/.jsonl.gz), directories of them, or getBlock result JSON files')
    .option('--slot <n>', 'slot of a bare getBlock result (default: parentSlot+1, with a warning)')
    .option('--include-votes', 'keep vote transactions')
    .action(async (files: string[], opts: NormalizeCliOptions) => {
      try {
        const { runNormalize } = await import('./normalize-files.ts')
        await runNormalize(files, opts, writeStdout, (m) => process.stderr.write(m + '\n'))
      } catch (e) {
        process.stderr.write(`error: ${errorMessage(e)}\n`)
        process.exitCode = 1
      }
    })
}
