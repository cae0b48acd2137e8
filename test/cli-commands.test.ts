/**
 * src/cli/main.ts registers its commands from a list (so that it loads only their option
 * definitions, not what runs them): every module of src/cli/commands that exports `register` must
 * be in it, and nothing else; a command added without it would be missing from the CLI silently.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

const CLI = join(import.meta.dirname, '..', 'src', 'cli')

test('main.ts registers every command module, and only those', () => {
  const dir = join(CLI, 'commands')
  const commands = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && /export function register\(/.test(readFileSync(join(dir, f), 'utf8')))
    .sort()
  const code = readFileSync(join(CLI, 'main.ts'), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
  const listed = [...code.matchAll(/import\('\.\/commands\/([^']+)'\)/g)].map((m) => m[1]).sort()
  assert.ok(commands.length >= 8, commands.join(', '))
  assert.deepEqual(listed, commands)
})
