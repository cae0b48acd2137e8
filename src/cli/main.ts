/**
 * solportal CLI. Each command is a module of ./commands (listed in `COMMANDS`) exporting
 * `register(program)`, which adds the subcommand and its options; such a module stays cheap to
 * load: its action imports what runs the command once the options are checked, so `--help`,
 * `--version` and a misused option answer without loading the server, the stores or the ingestion,
 * and a command loads only what it needs. The other modules of ./commands are the commands' parts.
 *
 * Errors end the process with one line on stderr (`solportal: error: ...`, the stack only with
 * SOLPORTAL_DEBUG=1): status 2 for a misused option (commander's own parse errors included), 1 for
 * a failure while running. A closed stdout (EPIPE, e.g. `... | head -1`) ends the process quietly.
 */
import { Command, CommanderError } from 'commander'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UsageError } from './options.ts'

process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0)
  fail(e)
})

function fail(e: unknown): never {
  const err = e instanceof Error ? e : new Error(String(e))
  const text = process.env.SOLPORTAL_DEBUG ? (err.stack ?? err.message) : err.message.split('\n')[0]
  process.stderr.write(`solportal: error: ${text}\n`)
  process.exit(err instanceof UsageError ? 2 : 1)
}

const here = dirname(fileURLToPath(import.meta.url))
const { version } = JSON.parse(readFileSync(join(here, '..', '..', 'package.json'), 'utf8')) as { version: string }

const program = new Command('solportal')
  .description('Self-hostable Solana block data query and streaming service')
  .version(version, '-V, --version', 'print the version and exit')
program.exitOverride()

/** the commands, in the order of the help text */
const COMMANDS: readonly Promise<{ register(p: Command): void }>[] = [
  import('./commands/backup.ts'),
  import('./commands/dump.ts'),
  import('./commands/export.ts'),
  import('./commands/fake-node.ts'),
  import('./commands/gen.ts'),
  import('./commands/import.ts'),
  import('./commands/normalize.ts'),
  import('./commands/serve.ts'),
]
for (const mod of await Promise.all(COMMANDS)) mod.register(program)

try {
  await program.parseAsync(process.argv)
} catch (e) {
  // commander has printed its own one-line message (or the help / version text)
  if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2)
  fail(e)
}
