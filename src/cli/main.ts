/**
 * solportal CLI. Every file in ./commands exports `register(program)` and adds its own subcommand,
 * so stages can grow their commands independently.
 */
import { Command } from 'commander'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const { version } = JSON.parse(readFileSync(join(here, '..', '..', 'package.json'), 'utf8')) as { version: string }

const program = new Command('solportal')
  .description('Self-hostable Solana block data query and streaming service')
  .version(version, '-V, --version', 'print the version and exit')

const dir = join(here, 'commands')
for (const name of readdirSync(dir).sort()) {
  if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue
  const mod = (await import(pathToFileURL(join(dir, name)).href)) as { register?: (p: Command) => void }
  mod.register?.(program)
}

await program.parseAsync(process.argv)
