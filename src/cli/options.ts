/**
 * Checks of command-line values. Every misuse throws a `UsageError` whose message names the
 * option; `main.ts` prints it as one line on stderr and exits with status 2 (other failures: 1).
 */
import type { Command } from 'commander'
import { statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseHeader } from '../ingest/rpc-provider.ts'

export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** an integer option in [min, max] (decimal digits only: no '1e3', '0x10', '' or ' 5') */
export function intOption(name: string, value: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`
    throw new UsageError(`--${name} must be an integer ${range}, got '${value}'`)
  }
  return n
}

/** a number option in [min, max] */
export function numberOption(name: string, value: string, min: number, max: number): number {
  const n = value.trim() === '' ? NaN : Number(value)
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a number in ${min}..${max}, got '${value}'`)
  }
  return n
}

export function portOption(name: string, value: string): number {
  return intOption(name, value, 0, 65535)
}

/** one of the listed words */
export function choiceOption<T extends string>(name: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) {
    throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got '${value}'`)
  }
  return value as T
}

/** an http(s) URL with a host (a bare 'localhost:8899' is refused, not taken as a scheme) */
export function httpUrlOption(name: string, value: string): string {
  let u: URL
  try {
    u = new URL(value)
  } catch {
    throw new UsageError(`--${name} must be an http:// or https:// URL, got '${value}'`)
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') {
    throw new UsageError(`--${name} must be an http:// or https:// URL, got '${value}'`)
  }
  return value
}

function statOrNull(path: string): ReturnType<typeof statSync> | null {
  try {
    return statSync(path)
  } catch {
    return null
  }
}

/** a file or directory that exists */
export function existingPath(name: string, path: string, kind: 'any' | 'dir' = 'any'): string {
  const st = statOrNull(path)
  if (!st) throw new UsageError(`--${name} ${path}: no such file or directory`)
  if (kind === 'dir' && !st.isDirectory()) throw new UsageError(`--${name} ${path}: not a directory`)
  return path
}

/** a file to be written: its directory must exist */
export function outputPath(name: string, path: string): string {
  const dir = dirname(resolve(path))
  const st = statOrNull(dir)
  if (!st || !st.isDirectory()) throw new UsageError(`--${name} ${path}: directory ${dir} does not exist`)
  const self = statOrNull(path)
  if (self?.isDirectory()) throw new UsageError(`--${name} ${path}: is a directory`)
  return path
}

/** at most one of the given options (name → whether it was given) */
export function exclusive(given: Record<string, boolean>): void {
  const set = Object.keys(given).filter((k) => given[k])
  if (set.length > 1) {
    throw new UsageError(`options ${set.map((s) => `--${s}`).join(', ')} cannot be used together (choose one)`)
  }
}

/** a listen error (EADDRINUSE and friends) as a usage error naming the option */
export function listenError(e: unknown, portOpt: string, hostOpt: string, host: string, port: number): Error {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'EADDRINUSE') return new UsageError(`--${portOpt} ${port}: address ${host}:${port} is already in use`)
  if (code === 'EACCES') return new UsageError(`--${portOpt} ${port}: permission denied to listen on ${host}:${port}`)
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new UsageError(`--${hostOpt} ${host}: cannot listen on this address (${code})`)
  }
  return e as Error
}

/** the node options of every command that reads a node (`serve --rpc`, `import --rpc`, `dump`) */
export interface RpcProviderFlags {
  rpcHeader?: string[]
  rpcRps?: string
  rpcGzip?: boolean
}

/** the options a provider needs: headers (API keys), a request-rate cap, gzip on the wire */
export function addRpcProviderOptions(cmd: Command): Command {
  return cmd
    .option(
      '--rpc-header <header>',
      "an HTTP header sent with every request to the node, 'Name: value' (repeatable: API keys, Authorization); never logged",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--rpc-rps <n>', 'requests per second to the node at most, retries included (0 = no cap)', '0')
    .option('--no-rpc-gzip', 'do not ask the node for gzip-compressed answers (nor compress requests)')
}

/** the checked values of `addRpcProviderOptions`'s options */
export function rpcProviderSettings(o: RpcProviderFlags): {
  headers: Record<string, string>
  rps: number
  gzip: boolean
} {
  const headers: Record<string, string> = {}
  for (const h of o.rpcHeader ?? []) {
    try {
      const [name, value] = parseHeader(h)
      headers[name] = value
    } catch (e) {
      throw new UsageError(`--rpc-header: ${(e as Error).message}`)
    }
  }
  return { headers, rps: numberOption('rpc-rps', o.rpcRps ?? '0', 0, 1_000_000), gzip: o.rpcGzip !== false }
}
