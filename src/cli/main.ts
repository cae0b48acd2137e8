/**
 * solportal CLI. Every file in ./commands exports `register(program)` and adds its own subcommand,
 * so stages can grow their commands independently.
 */
import { Command } from 'commander'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const program = new Command('solportal').description('Self-hostable Solana block data query and streaming service')

const dir = join(dirname(fileURLToPath(import.meta.url)), 'commands')
for (const name of readdirSync(dir).sort()) {
  if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue
  const mod = (await import(pathToFileURL(join(dir, name)).href)) as { register?: (p: Command) => void }
  mod.register?.(program)
}

await program.parseAsync(process.argv)
