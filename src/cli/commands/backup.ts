/**
 * `solportal backup DIR DEST`: a consistent copy of a dataset directory (or of a follower's data
 * directory, without its unfinalized blocks) while its writer keeps running; incremental when DEST
 * holds an older backup. See src/store/backup.ts and docs/operations.md §4. The copying code loads once
 * the arguments are checked.
 */
import type { Command } from 'commander'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { intOption, UsageError } from '../options.ts'

export function register(program: Command): void {
  program
    .command('backup')
    .description('copy a dataset directory consistently while it is being written (incremental)')
    .argument('<dir>', 'dataset directory (solportal import) or data directory (serve --rpc)')
    .argument('<dest>', 'backup directory (created when missing; an older backup there is updated)')
    .option('--attempts <n>', 'catalogue states tried when the writer replaces files under the backup', '5')
    .action(async (dir: string, dest: string, opts: { attempts: string }) => {
      const attempts = intOption('attempts', opts.attempts, 1, 1000)
      // misuses are refused before anything is created, as export refuses them (status 2)
      if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dir}: no such directory`)
      if (!existsSync(join(dir, 'cold'))) {
        throw new UsageError(`${dir}: not a dataset directory (no cold/; see solportal import or serve --rpc)`)
      }
      if (existsSync(dest) && !statSync(dest).isDirectory())
        throw new UsageError(`${dest}: exists and is not a directory`)
      const { backupDataset } = await import('../../store/backup.ts')
      const t0 = Date.now()
      const r = await backupDataset(dir, dest, { attempts })
      const range = r.firstBlock === null ? 'no blocks' : `blocks ${r.firstBlock}..${r.lastBlock}`
      process.stderr.write(
        `backed up ${r.chunks} chunk files (${range}): ${r.copied} copied (${(r.bytesCopied / 1e6).toFixed(1)} MB), ` +
          `${r.chunks - r.copied} already there, ${r.removed} old ones removed, in ${((Date.now() - t0) / 1000).toFixed(1)} s` +
          (r.attempts > 1 ? ` (${r.attempts} states read: the writer replaced files meanwhile)` : '') +
          '\n',
      )
    })
}
