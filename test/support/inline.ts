/**
 * Runs ES module code as the entry point of a child process, the way the bench harness runs benches
 * (`node --import tsx --input-type=module -e CODE`, from the repository root): its exit status,
 * stdout and stderr.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'

export async function runInline(code: string): Promise<{ status: number; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: join(import.meta.dirname, '..', '..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (c: Buffer) => (out += c))
  child.stderr.on('data', (c: Buffer) => (err += c))
  const [status] = (await once(child, 'close')) as [number]
  return { status, out, err }
}
