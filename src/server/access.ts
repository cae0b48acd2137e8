/**
 * API keys (off unless keys are configured; docs/operations.md §10): the dataset routes then need
 * a key, sent as `Authorization: Bearer KEY` or in a header the operator names. Each key has an id
 * (what logs and metrics show: the key itself is never logged), its own rate limit and concurrent
 * stream cap (instead of the per-address ones) and, optionally, the datasets it may use.
 *
 * Keys are kept as SHA-256 hashes only: a presented key is hashed and looked up. A request without
 * a key, or with an unknown one, is answered 401; a key used on a dataset it may not use, 403
 * (`text/plain` with the reason either way).
 */
import { createHash } from 'node:crypto'
import type http from 'node:http'
import type { ApiKeysSpec, KeySpec } from './config.ts'
import { ConfigError, KEY_FILE, readJsonFile } from './config.ts'
import type { Dataset } from './datasets.ts'
import { PerClientCap, RateLimiter, type RateLimit } from './guards.ts'
import { HttpError } from './http-error.ts'

export const sha256Hex = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex')

/** a key as the server keeps it */
export interface ApiKey {
  id: string
  sha256: string
  /** requests per second; undefined: the server's rate limit; 0: none */
  rateLimit?: number
  maxStreams?: number
  /** dataset names or aliases; undefined: all */
  datasets?: string[]
}

/** a key's limits, shared by its requests */
export interface KeyClient {
  readonly id: string
  readonly limiter: RateLimiter | null
  readonly cap: PerClientCap
  readonly datasets: ReadonlySet<string> | null
}

export interface ApiKeysOptions {
  keys: ApiKey[]
  /** `authorization` (Bearer) by default, or a header whose whole value is the key */
  header?: string
  /** the server's limits, for keys that set none */
  rateLimit: RateLimit | null
  maxStreamsPerClient: number
}

export class ApiKeys {
  private readonly byHash = new Map<string, KeyClient>()
  /** lowercase header name */
  readonly header: string

  constructor(opts: ApiKeysOptions) {
    this.header = (opts.header ?? 'authorization').toLowerCase()
    for (const k of opts.keys) {
      const rate =
        k.rateLimit === undefined
          ? opts.rateLimit
          : k.rateLimit > 0
            ? { perSecond: k.rateLimit, burst: 2 * k.rateLimit }
            : null
      this.byHash.set(k.sha256, {
        id: k.id,
        limiter: rate ? new RateLimiter(rate) : null,
        cap: new PerClientCap(k.maxStreams ?? opts.maxStreamsPerClient),
        datasets: k.datasets ? new Set(k.datasets) : null,
      })
    }
  }

  get size(): number {
    return this.byHash.size
  }

  private how(): string {
    return this.header === 'authorization' ? 'as "Authorization: Bearer KEY"' : `in the ${this.header} header`
  }

  /** the key of a request; throws a 401 naming what is wrong */
  authenticate(req: http.IncomingMessage): KeyClient {
    const raw = req.headers[this.header]
    const value = Array.isArray(raw) ? raw[0] : raw
    if (value === undefined || value.trim() === '') {
      throw unauthorized(`An API key is required: send it ${this.how()}`)
    }
    let key = value.trim()
    if (this.header === 'authorization') {
      const m = /^Bearer[ \t]+(\S+)$/i.exec(key)
      if (!m) throw unauthorized('The Authorization header must be "Bearer KEY"')
      key = m[1]
    }
    const client = this.byHash.get(sha256Hex(key))
    if (!client) throw unauthorized('Unknown API key')
    return client
  }

  /** throws a 403 when the key may not use the dataset */
  authorize(client: KeyClient, ds: Dataset): void {
    if (allows(client, ds)) return
    throw new HttpError(403, `Forbidden: API key '${client.id}' may not use dataset ${JSON.stringify(ds.name)}`)
  }
}

/** whether the key may use the dataset (named by its name or one of its aliases) */
export function allows(client: KeyClient, ds: Dataset): boolean {
  return !client.datasets || [ds.name, ...ds.aliases].some((n) => client.datasets!.has(n))
}

function unauthorized(reason: string): HttpError {
  return new HttpError(401, `Unauthorized: ${reason}`, { 'WWW-Authenticate': 'Bearer realm="solportal"' })
}

/**
 * The keys of the configuration file and of key files (`--api-keys FILE`, `apiKeys.file`), with
 * the names of the served datasets to check their lists against; null when no key is configured.
 */
export function loadApiKeys(
  spec: ApiKeysSpec | undefined,
  files: string[],
  datasetNames: ReadonlySet<string>,
): { keys: ApiKey[]; header?: string } | null {
  const keys: { where: string; key: ApiKey }[] = []
  const add = (where: string, k: KeySpec) => {
    const { key, ...rest } = k
    if ((key === undefined) === (k.sha256 === undefined))
      throw new ConfigError(`${where}: needs either "key" or "sha256" (one of them)`)
    keys.push({ where, key: { ...rest, sha256: k.sha256 ?? sha256Hex(key!) } })
  }
  spec?.keys?.forEach((k, i) => add(`apiKeys.keys[${i}]`, k))
  for (const file of [...(spec?.file ? [spec.file] : []), ...files]) {
    readJsonFile<{ keys: KeySpec[] }>(file, KEY_FILE).keys.forEach((k, i) => add(`${file}: keys[${i}]`, k))
  }
  if (keys.length === 0) {
    if (spec?.header) throw new ConfigError('apiKeys.header: no key is configured (apiKeys.keys, apiKeys.file)')
    return null
  }
  const ids = new Map<string, string>()
  const hashes = new Map<string, string>()
  for (const { where, key } of keys) {
    if (ids.has(key.id)) throw new ConfigError(`${where}.id: the id '${key.id}' is also the id of ${ids.get(key.id)}`)
    if (hashes.has(key.sha256)) throw new ConfigError(`${where}: the same key as ${hashes.get(key.sha256)}`)
    ids.set(key.id, where)
    hashes.set(key.sha256, where)
    key.datasets?.forEach((n, j) => {
      if (!datasetNames.has(n)) throw new ConfigError(`${where}.datasets[${j}]: no dataset named '${n}'`)
    })
  }
  return { keys: keys.map((k) => k.key), header: spec?.header }
}
