/**
 * A small real filesystem to fill up: tmpfs mounted on a directory (needs root, or a user
 * namespace with CAP_SYS_ADMIN). `mountTmpfs` answers why it could not mount instead of throwing,
 * so that a test can skip with that reason where mounting is not allowed.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'

function run(args: string[]): string | null {
  const r = spawnSync(args[0], args.slice(1), { encoding: 'utf8' })
  if (r.error) return `${args[0]}: ${r.error.message}`
  if (r.status !== 0) return `${args.join(' ')}: ${(r.stderr || r.stdout).trim() || `status ${r.status}`}`
  return null
}

/** a tmpfs of `bytes` (rounded up to 4 KiB pages) mounted on `dir`; null when mounted, else why not */
export function mountTmpfs(dir: string, bytes: number): string | null {
  mkdirSync(dir, { recursive: true })
  if (process.platform !== 'linux') return `tmpfs mounts are a Linux feature (this is ${process.platform})`
  return run(['mount', '-t', 'tmpfs', '-o', `size=${Math.ceil(bytes / 4096) * 4096}`, 'tmpfs', dir])
}

/** grow (or shrink) the tmpfs mounted on `dir`; throws when it cannot */
export function resizeTmpfs(dir: string, bytes: number): void {
  const err = run(['mount', '-o', `remount,size=${Math.ceil(bytes / 4096) * 4096}`, dir])
  if (err) throw new Error(err)
}

export function unmountTmpfs(dir: string): void {
  run(['umount', dir])
}
