/**
 * The configuration file of `solportal serve --config FILE` (JSON; docs/operations.md §10): the
 * datasets one process serves, where each one's blocks come from, API keys, CORS origins and the
 * trusted proxies. Checked against a schema before anything starts; every error names the file and
 * the path of the wrong key.
 *
 * A source is an object tagged by `kind` with options of its own kind; sources are declared inline
 * in a dataset or by name under `sources` (two datasets, e.g. the stable and the complete view,
 * may share one source, which is then loaded once).
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, resolve } from 'node:path'
import { check, SchemaError, type ObjectSchema, type Schema } from './schema.ts'

export type SourceSpec =
  | { kind: 'sample'; includeVotes?: boolean }
  | { kind: 'archive'; paths: string[]; includeVotes?: boolean }
  | { kind: 'dataset-dir'; path: string; cacheDir?: string; cacheDiskMb?: number; pollMs?: number }
  | {
      kind: 'rpc'
      url: string
      dataDir: string
      commitment?: 'confirmed' | 'finalized'
      startSlot?: number
      concurrency?: number
      pollMs?: number
      maxBodyMb?: number
      stallMs?: number
      damagedAttempts?: number
      includeVotes?: boolean
    }
  | { kind: 'demo'; dataDir?: string }

export type View = 'stable' | 'complete'

export interface DatasetSpec {
  name: string
  aliases?: string[]
  kind?: 'solana'
  /** a name under `sources`, or the source itself */
  source: string | SourceSpec
  /** default `complete`: from the source's first block (the bundled sample's stable view starts later) */
  view?: View
  startBlock?: number
  displayName?: string
  bigintsAsNumbers?: boolean
}

export interface KeySpec {
  /** what logs and metrics show (never the key) */
  id: string
  /** the key itself (config file only), or ... */
  key?: string
  /** ... the hex SHA-256 of it */
  sha256?: string
  /** requests per second (stream requests, timestamp lookups); default the server's --rate-limit, 0 = none */
  rateLimit?: number
  /** concurrent stream requests; default the server's --max-streams-per-client */
  maxStreams?: number
  /** the datasets (names or aliases) the key may use; default all */
  datasets?: string[]
}

export interface ApiKeysSpec {
  /** `Authorization` (default: `Authorization: Bearer KEY`) or the name of a header holding the key */
  header?: string
  /** a JSON file `{"keys": [...]}` of keys given by `sha256` */
  file?: string
  keys?: KeySpec[]
}

export interface PortalConfig {
  sources?: Record<string, SourceSpec>
  datasets: DatasetSpec[]
  apiKeys?: ApiKeysSpec
  cors?: string[]
  trustProxy?: string[]
}

export const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/
const name: Schema = {
  type: 'string',
  pattern: NAME_PATTERN,
  expect: 'a name of lowercase letters, digits, ".", "_" and "-" (up to 64, not starting with a punctuation mark)',
}
const str: Schema = { type: 'string', pattern: /./, expect: 'a non-empty string' }
const int = (minimum: number, maximum?: number): Schema => ({ type: 'integer', minimum, maximum })
const bool: Schema = { type: 'boolean' }
const strings: Schema = { type: 'array', items: str }

const SOURCE: Schema = {
  type: 'tagged',
  tag: 'kind',
  variants: {
    sample: { type: 'object', properties: { includeVotes: bool } },
    archive: {
      type: 'object',
      properties: { paths: { type: 'array', items: str, minItems: 1 }, includeVotes: bool },
      required: ['paths'],
    },
    'dataset-dir': {
      type: 'object',
      properties: { path: str, cacheDir: str, cacheDiskMb: int(1, 1 << 30), pollMs: int(100) },
      required: ['path'],
    },
    rpc: {
      type: 'object',
      properties: {
        url: { type: 'string', pattern: /^https?:\/\/[^/\s]+/, expect: 'an http:// or https:// URL' },
        dataDir: str,
        commitment: { type: 'string', enum: ['confirmed', 'finalized'] },
        startSlot: int(0),
        concurrency: int(1, 256),
        pollMs: int(1, 60_000),
        maxBodyMb: int(1, 1 << 16),
        stallMs: int(1),
        damagedAttempts: int(1, 1000),
        includeVotes: bool,
      },
      required: ['url', 'dataDir'],
    },
    demo: { type: 'object', properties: { dataDir: str } },
  },
}

const DATASET: ObjectSchema = {
  type: 'object',
  properties: {
    name,
    aliases: { type: 'array', items: name },
    kind: { type: 'string', enum: ['solana'] },
    source: { type: 'either', of: [name, SOURCE] },
    view: { type: 'string', enum: ['stable', 'complete'] },
    startBlock: int(0),
    displayName: str,
    bigintsAsNumbers: bool,
  },
  required: ['name', 'source'],
}

const KEY_ID: Schema = {
  type: 'string',
  pattern: /^[A-Za-z0-9._-]{1,64}$/,
  expect: 'an id of letters, digits, ".", "_" and "-" (up to 64)',
}
const SHA256: Schema = { type: 'string', pattern: /^[0-9a-f]{64}$/, expect: '64 lowercase hex digits (sha256sum)' }
const KEY_PROPS = {
  id: KEY_ID,
  sha256: SHA256,
  rateLimit: int(0, 1_000_000),
  maxStreams: int(1, 1_000_000),
  datasets: { type: 'array', items: name, minItems: 1 },
} satisfies Record<string, Schema>

/** a key file: keys by their hash only */
export const KEY_FILE: Schema = {
  type: 'object',
  properties: {
    keys: { type: 'array', items: { type: 'object', properties: KEY_PROPS, required: ['id', 'sha256'] } },
  },
  required: ['keys'],
}

export const HEADER_NAME: Schema = {
  type: 'string',
  pattern: /^[A-Za-z0-9-]{1,64}$/,
  expect: 'an HTTP header name',
}

const CONFIG: Schema = {
  type: 'object',
  properties: {
    sources: { type: 'map', keyPattern: NAME_PATTERN, expect: 'a name like the datasets’', values: SOURCE },
    datasets: { type: 'array', items: DATASET, minItems: 1 },
    apiKeys: {
      type: 'object',
      properties: {
        header: HEADER_NAME,
        file: str,
        keys: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              ...KEY_PROPS,
              key: { type: 'string', pattern: /^[\x21-\x7e]{16,256}$/, expect: '16 to 256 printable ASCII characters' },
            },
            required: ['id'],
          },
        },
      },
    },
    cors: strings,
    trustProxy: strings,
  },
  required: ['datasets'],
}

/** a mistake in a configuration or key file (`serve` reports it as a usage error: status 2) */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

/** parse JSON text; a syntax error names the line and column */
export function parseJsonFile(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (e) {
    const msg = (e as Error).message
    const m = /position (\d+)/.exec(msg)
    if (m) {
      const pos = Number(m[1])
      const before = text.slice(0, pos).split('\n')
      throw new ConfigError(
        `${file}:${before.length}:${before[before.length - 1].length + 1}: not valid JSON (${msg.replace(/ in JSON at position \d+.*$/, '')})`,
      )
    }
    throw new ConfigError(`${file}: not valid JSON (${msg})`)
  }
}

/** a file's JSON checked against a schema (errors name the file and the path of the wrong key) */
export function readJsonFile<T>(file: string, schema: Schema): T {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    throw new ConfigError(
      `${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
    )
  }
  const v = parseJsonFile(text, file)
  try {
    check(schema, v)
  } catch (e) {
    if (e instanceof SchemaError) throw new ConfigError(`${file}: ${e.message}`)
    throw e
  }
  return v as T
}

/** the dataset's source (a reference resolved) and the name it is shared under */
export function sourceOf(cfg: PortalConfig, i: number): { id: string; spec: SourceSpec } {
  const s = cfg.datasets[i].source
  return typeof s === 'string'
    ? { id: `sources.${s}`, spec: cfg.sources![s] }
    : { id: `datasets[${i}].source`, spec: s }
}

/**
 * Reads and checks a configuration file: the schema, then what a schema cannot say (names used
 * twice, sources and datasets that do not exist, paths that do not exist). Relative paths are
 * resolved against the file's directory.
 */
export function loadConfig(file: string): PortalConfig {
  const cfg = readJsonFile<PortalConfig>(file, CONFIG)
  const fail = (path: string, reason: string): never => {
    throw new ConfigError(`${file}: ${path}: ${reason}`)
  }
  const base = dirname(resolve(file))
  const abs = (p: string) => (p.startsWith('s3://') || isAbsolute(p) ? p : resolve(base, p))
  const exists = (path: string, p: string, dir = false) => {
    if (!existsSync(p)) fail(path, `${p}: no such file or directory`)
    if (dir && !statSync(p).isDirectory()) fail(path, `${p}: not a directory`)
  }
  for (const [id, s] of Object.entries(cfg.sources ?? {})) resolvePaths(s, `sources.${id}`)
  const seen = new Map<string, string>()
  cfg.datasets.forEach((d, i) => {
    const path = `datasets[${i}]`
    if (typeof d.source === 'string') {
      if (!cfg.sources?.[d.source])
        fail(
          `${path}.source`,
          `no source named '${d.source}' under "sources" (${Object.keys(cfg.sources ?? {}).join(', ') || 'none declared'})`,
        )
    } else resolvePaths(d.source, `${path}.source`)
    for (const n of [d.name, ...(d.aliases ?? [])]) {
      const other = seen.get(n)
      if (other) fail(path, `the name or alias '${n}' is already used by ${other}`)
      seen.set(n, `${path} (${d.name})`)
    }
  })
  const rpcDirs = new Map<string, string>()
  cfg.datasets.forEach((_, i) => {
    const { id, spec } = sourceOf(cfg, i)
    const dir = spec.kind === 'rpc' || spec.kind === 'demo' ? spec.dataDir : undefined
    if (dir && rpcDirs.has(dir) && rpcDirs.get(dir) !== id)
      fail(`${id}.dataDir`, `${dir} is also the data directory of ${rpcDirs.get(dir)}`)
    if (dir) rpcDirs.set(dir, id)
  })
  const keys = cfg.apiKeys
  if (keys?.file) keys.file = abs(keys.file)
  return cfg

  function resolvePaths(s: SourceSpec, path: string): void {
    if (s.kind === 'archive') s.paths = s.paths.map((p, j) => (exists(`${path}.paths[${j}]`, abs(p)), abs(p)))
    if (s.kind === 'dataset-dir') {
      s.path = abs(s.path)
      if (!s.path.startsWith('s3://')) exists(`${path}.path`, s.path, true)
      else if (!/^s3:\/\/[^/]+/.test(s.path)) fail(`${path}.path`, `must be s3://BUCKET/PREFIX, got '${s.path}'`)
      if (s.cacheDir) s.cacheDir = abs(s.cacheDir)
      if (!s.path.startsWith('s3://') && (s.cacheDir || s.cacheDiskMb || s.pollMs))
        fail(path, 'cacheDir, cacheDiskMb and pollMs apply only to a path s3://...')
    }
    if ((s.kind === 'rpc' || s.kind === 'demo') && s.dataDir) s.dataDir = abs(s.dataDir)
  }
}
