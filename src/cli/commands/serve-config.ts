/**
 * `serve --config FILE`: the datasets of a configuration file (src/server/config.ts) as what
 * `serve` loads, one source at a time. Each source becomes the options the flags would give for
 * it (`--archive`, `--dataset-dir`, `--rpc` ..., so one code path loads a source either way) and the
 * names it is served under; a source's options absent from the file take the flags' values.
 *
 * Without a file, `serve` loads one source (the sample, or what its flags name) under the default
 * names: `solana-mainnet` (alias `solana-beta`, the stable view) and `solana-mainnet-complete`
 * (alias `solana-complete`). Who may use the server (keys, CORS, proxies): serve-access.ts.
 */
import { ConfigError, loadConfig, sourceOf, type PortalConfig, type SourceSpec } from '../../server/config.ts'
import { DEFAULT_VIEWS, type NamedView } from '../../server/named-views.ts'
import { UsageError } from '../options.ts'
import type { ServeOptions } from './serve.ts'

/** one source to load: the options that name it and the datasets it serves */
export interface SourcePlan {
  /** where it is declared (`sources.main`, `datasets[2].source`), for errors; '' for the flags */
  where: string
  opts: ServeOptions
  views: readonly NamedView[]
}

/** the options of the flags that name a source (cleared for a source of the file) */
const SOURCE_FLAGS = ['archive', 'datasetDir', 'rpc', 'demo', 'dataDir', 'cacheDir', 'cacheDiskMb', 's3PollMs'] as const

/** with --config, the flags that name a source are refused (the file names them) */
export function checkConfigFlags(opts: ServeOptions): void {
  if (!opts.config) return
  const given = SOURCE_FLAGS.filter((k) => opts[k] !== undefined && opts[k] !== false)
  if (given.length) {
    const flag = (k: string) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
    throw new UsageError(
      `--config cannot be used with ${given.map(flag).join(', ')}: the file's datasets name their sources`,
    )
  }
}

const str = (n: number | undefined) => (n === undefined ? undefined : String(n))

/** the flags that would load this source */
function sourceOptions(s: SourceSpec): Partial<ServeOptions> {
  switch (s.kind) {
    case 'sample':
      return { includeVotes: s.includeVotes }
    case 'archive':
      return { archive: s.paths, includeVotes: s.includeVotes }
    case 'dataset-dir':
      return { datasetDir: s.path, cacheDir: s.cacheDir, cacheDiskMb: str(s.cacheDiskMb), s3PollMs: str(s.pollMs) }
    case 'demo':
      return { demo: true, dataDir: s.dataDir }
    case 'rpc':
      return {
        rpc: s.url,
        dataDir: s.dataDir,
        commitment: s.commitment,
        fromSlot: str(s.startSlot),
        rpcConcurrency: str(s.concurrency),
        rpcPollMs: str(s.pollMs),
        rpcMaxBodyMb: str(s.maxBodyMb),
        rpcStallMs: str(s.stallMs),
        rpcDamagedAttempts: str(s.damagedAttempts),
        includeVotes: s.includeVotes,
      }
  }
}

/** the sources of a configuration, each with the datasets it serves (in the file's order) */
export function planFromConfig(cfg: PortalConfig, flags: ServeOptions): SourcePlan[] {
  const plans = new Map<string, SourcePlan & { views: NamedView[] }>()
  const base: ServeOptions = { ...flags, config: undefined }
  for (const k of SOURCE_FLAGS) delete base[k]
  cfg.datasets.forEach((d, i) => {
    const { id, spec } = sourceOf(cfg, i)
    let p = plans.get(id)
    if (!p) {
      const own = Object.fromEntries(Object.entries(sourceOptions(spec)).filter(([, v]) => v !== undefined))
      p = { where: id, opts: { ...base, ...own }, views: [] }
      plans.set(id, p)
    }
    p.views.push({
      name: d.name,
      aliases: d.aliases ?? [],
      view: d.view ?? 'complete',
      startBlock: d.startBlock,
      displayName: d.displayName,
      bigintsAsNumbers: d.bigintsAsNumbers,
    })
  })
  return [...plans.values()]
}

/** a configuration or key file error as a usage error (status 2) */
export function usage<T>(prefix: string, f: () => T): T {
  try {
    return f()
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`${prefix}${e.message}`)
    throw e
  }
}

/** the sources `serve` loads: the configuration file's, or the one the flags name */
export function servePlan(opts: ServeOptions): { plans: SourcePlan[]; config: PortalConfig | null } {
  if (!opts.config) return { plans: [{ where: '', opts, views: DEFAULT_VIEWS }], config: null }
  checkConfigFlags(opts)
  const config = usage('--config ', () => loadConfig(opts.config!))
  return { plans: planFromConfig(config, opts), config }
}

/** an option error of a source of the file names where the source is declared */
export function inSource<T>(plan: SourcePlan, f: () => T): T {
  try {
    return f()
  } catch (e) {
    if (e instanceof UsageError && plan.where) throw new UsageError(`${plan.where}: ${e.message}`)
    throw e
  }
}
