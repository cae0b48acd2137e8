/** `solportal ARGS` as a real process from the repository root: its exit code, stderr and stdout. */
import { spawn } from 'node:child_process'
import { join } from 'node:path'

const ROOT = join(import.meta.dirname, '..', '..')

/** `timeoutMs`: the process is killed past it (the code is then null) */
export function cli(
  args: string[],
  opts: { timeoutMs?: number } = {},
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, SOLPORTAL_DEBUG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const timer = opts.timeoutMs === undefined ? null : setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs)
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.on('error', reject)
    child.on('close', (code) => {
      if (timer) clearTimeout(timer)
      resolve({ code, stderr, stdout })
    })
  })
}
