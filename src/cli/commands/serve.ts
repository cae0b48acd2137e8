/**
 * `solportal serve` (what `npm start` runs): the bundled sample by default, archive files with
 * `--archive`, an imported dataset directory with `--dataset-dir`, a live node with `--rpc`, or an
 * in-process fake chain with `--demo`. This module checks the flags (every misuse is refused before
 * anything starts) and runs the serving application (src/server/app.ts), which loads the sources
 * (src/server/sources.ts); the flags themselves are declared in serve-flags.ts. The application,
 * the stores and the ingestion load once the flags are checked.
 */
import type { Command } from 'commander'
import { defaultDecodeThreads } from '../../ingest/decode-threads.ts'
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_TIMEOUT_MS } from '../../ingest/rpc/defaults.ts'
import type { Logger } from '../../log.ts'
import { bodyLimitFor, FILTER_VALUE_BYTES } from '../../server/body.ts'
import type { PortalServer } from '../../server/http.ts'
import { DEFAULT_LIMITS } from '../../server/limits.ts'
import type { PortalConfig } from '../../server/config.ts'
import type { Metrics } from '../../server/metrics.ts'
import { cacheShares, defaultRenderThreads } from '../../server/render-threads.ts'
import type { ArchiveOpener, SourceOptions, SourceSettings } from '../../server/sources.ts'
import { DEFAULT_MEMORY_LIMIT_MB } from '../../server/memory-gate.ts'
import { errorMessage } from '../../util/errors.ts'
import { boundHeapGrowth, SERVE_HEAP_GROWING_PERCENT } from '../../util/gc-tuning.ts'
import {
  addRpcProviderOptions,
  choiceOption,
  exclusive,
  existingPath,
  httpUrlOption,
  intOption,
  listenError,
  portOption,
  rpcProviderSettings,
  UsageError,
} from '../options.ts'
import { inSource, servePlan, type SourcePlan } from './serve-config.ts'
import { SERVE_FLAGS } from './serve-flags.ts'

/** the flags (the ones naming the source: SourceOptions) */
export interface ServeOptions extends SourceOptions {
  port: string
  host: string
  commitment: string
  rpcConcurrency: string
  rpcMaxBodyMb?: string
  rpcStallMs?: string
  rpcPollMs?: string
  rpcDamagedAttempts?: string
  hotMaxMb?: string
  ingestThreads?: string
  responseTimeMs: string
  responseBytes: string
  headWaitMs: string
  maxStreams: string
  maxStreamsPerClient?: string
  maxBodyBytes?: string
  maxFilterValues?: string
  bodyTimeoutMs?: string
  writeTimeoutMs?: string
  streamBufferMb?: string
  memoryLimitMb?: string
  rateLimit: string
  cacheMb?: string
  /** --dataset-dir s3://...: the disk budget of its cache, the pointer's poll interval */
  cacheDiskMb?: string
  s3PollMs?: string
  /** --dataset-dir s3://...: an object-store request making no progress this long fails (and is retried) */
  s3TimeoutMs?: string
  renderThreads?: string
  renderSplit?: boolean
  /** V8's heap growing factor, percent over the live heap (src/util/gc-tuning.ts); 0: V8's own */
  heapGrowingPercent?: string
  quiet?: boolean
  /** a configuration file (src/server/config.ts): its datasets instead of the source flags */
  config?: string
  /** files of SHA-256-hashed API keys (src/server/access.ts) */
  apiKeys?: string[]
  /** the header holding the API key (default Authorization: Bearer) */
  apiKeyHeader?: string
  /** origins allowed to call from a browser (`*`: any) */
  cors?: string[]
  /** proxies (addresses, CIDR ranges) whose X-Forwarded-For / Forwarded name the client */
  trustProxy?: string[]
  fromSlot?: string
  rpcHeader?: string[]
  rpcRps?: string
  rpcGzip?: boolean
}

/**
 * the checked numbers and choices of the options (every misuse is refused before anything starts);
 * `threadCacheBytes`: --cache-mb is the total over the main thread and the render threads (each
 * opens the store and keeps a cache of its own; see `cacheShares`)
 */
interface ServeSettings extends SourceSettings {
  port: number
  responseTimeMs: number
  responseBytes: number
  headWaitMs: number
  maxStreams: number
  maxStreamsPerClient: number
  maxBodyBytes: number
  maxFilterValues: number
  bodyTimeoutMs: number
  writeTimeoutMs: number
  streamBufferBytes: number
  /** resident memory the stream responses keep the process under (0 = no limit) */
  memoryLimitBytes: number
  rateLimit: number
  cacheBytes: number
  /** the cache of each render thread's cold stores */
  workerCacheBytes: number
  renderThreads: number
  renderSplit: boolean
}

/**
 * The query body limit and the filter value limit, kept consistent: without --max-body-bytes the
 * body limit is what --max-filter-values addresses need (8 MiB at least); a --max-body-bytes too
 * small for them is a usage error.
 */
function bodyLimits(opts: ServeOptions): { maxBodyBytes: number; maxFilterValues: number } {
  const maxFilterValues = intOption(
    'max-filter-values',
    opts.maxFilterValues ?? String(DEFAULT_LIMITS.maxFilterValues),
    1,
    100_000_000,
  )
  if (opts.maxBodyBytes === undefined) return { maxBodyBytes: bodyLimitFor(maxFilterValues), maxFilterValues }
  const maxBodyBytes = intOption('max-body-bytes', opts.maxBodyBytes, 1024, 2 ** 31)
  if (maxBodyBytes < maxFilterValues * FILTER_VALUE_BYTES && opts.maxFilterValues !== undefined) {
    throw new UsageError(
      `--max-body-bytes ${maxBodyBytes} cannot hold --max-filter-values ${maxFilterValues} addresses (~${FILTER_VALUE_BYTES} bytes each): raise it to ${maxFilterValues * FILTER_VALUE_BYTES} or more`,
    )
  }
  return { maxBodyBytes, maxFilterValues }
}

/** --hot-max-mb (default 4096; 0 = no bound) in bytes */
function hotMaxBytes(v: string | undefined): number | null {
  const mb = intOption('hot-max-mb', v ?? '4096', 0, 1 << 24)
  return mb === 0 ? null : mb * 1024 * 1024
}

export function checkServeOptions(opts: ServeOptions): ServeSettings {
  exclusive({ archive: !!opts.archive, 'dataset-dir': !!opts.datasetDir, rpc: !!opts.rpc, demo: !!opts.demo })
  if (opts.rpc) {
    httpUrlOption('rpc', opts.rpc)
    if (!opts.dataDir) throw new UsageError('--rpc needs --data-dir DIR (hot and cold storage of the followed chain)')
  } else if (opts.dataDir && !opts.demo) {
    throw new UsageError('--data-dir applies only to --rpc or --demo')
  }
  if (opts.geyser !== undefined) {
    if (opts.rpc) {
      if (typeof opts.geyser !== 'string')
        throw new UsageError('--geyser needs the URL of the Geyser (Yellowstone gRPC) endpoint')
      httpUrlOption('geyser', opts.geyser)
    } else if (!opts.demo) {
      throw new UsageError('--geyser applies only to --rpc (which fills its gaps) or --demo')
    } else if (opts.geyser !== true) throw new UsageError('--demo --geyser takes no URL (the demo runs its own)')
  }
  for (const a of opts.archive ?? []) existingPath('archive', a)
  const s3 = !!opts.datasetDir?.startsWith('s3://')
  if (opts.datasetDir && !s3) existingPath('dataset-dir', opts.datasetDir, 'dir')
  if (!s3 && (opts.cacheDir || opts.cacheDiskMb || opts.s3PollMs || opts.s3TimeoutMs))
    throw new UsageError(
      '--cache-dir, --cache-disk-mb, --s3-poll-ms and --s3-timeout-ms apply only to --dataset-dir s3://...',
    )
  const cfg = {
    port: portOption('port', opts.port),
    commitment: choiceOption(
      'commitment',
      opts.commitment,
      opts.geyser ? (['processed', 'confirmed', 'finalized'] as const) : (['confirmed', 'finalized'] as const),
    ),
    rpcConcurrency: intOption('rpc-concurrency', opts.rpcConcurrency, 1, 256),
    rpcMaxBodyBytes:
      intOption('rpc-max-body-mb', opts.rpcMaxBodyMb ?? String(DEFAULT_MAX_RESPONSE_BYTES >> 20), 1, 1 << 16) *
      1024 *
      1024,
    rpcStallMs: intOption('rpc-stall-ms', opts.rpcStallMs ?? String(DEFAULT_STALL_TIMEOUT_MS), 1),
    rpcPollMs: intOption('rpc-poll-ms', opts.rpcPollMs ?? '250', 1, 60_000),
    rpcDamagedAttempts: intOption('rpc-damaged-attempts', opts.rpcDamagedAttempts ?? '5', 1, 1000),
    hotMaxBytes: hotMaxBytes(opts.hotMaxMb),
    ingestThreads: intOption('ingest-threads', opts.ingestThreads ?? String(defaultDecodeThreads()), 0, 64),
    responseTimeMs: intOption('response-time-ms', opts.responseTimeMs, 1),
    responseBytes: intOption('response-bytes', opts.responseBytes, 1),
    headWaitMs: intOption('head-wait-ms', opts.headWaitMs),
    maxStreams: intOption('max-streams', opts.maxStreams, 1),
    maxStreamsPerClient: intOption(
      'max-streams-per-client',
      opts.maxStreamsPerClient ?? String(DEFAULT_LIMITS.maxStreamsPerClient),
      1,
    ),
    ...bodyLimits(opts),
    bodyTimeoutMs: intOption('body-timeout-ms', opts.bodyTimeoutMs ?? String(DEFAULT_LIMITS.bodyTimeoutMs), 100),
    writeTimeoutMs: intOption('write-timeout-ms', opts.writeTimeoutMs ?? String(DEFAULT_LIMITS.writeTimeoutMs)),
    streamBufferBytes:
      intOption('stream-buffer-mb', opts.streamBufferMb ?? String(DEFAULT_LIMITS.streamBufferBytes >> 20), 1, 1 << 20) *
      1024 *
      1024,
    rateLimit: intOption('rate-limit', opts.rateLimit),
    cacheBytes: intOption('cache-mb', opts.cacheMb ?? '192', 1, 1 << 20) * 1024 * 1024,
    memoryLimitBytes: memoryLimitBytes(opts),
    cacheDiskBytes: intOption('cache-disk-mb', opts.cacheDiskMb ?? '10240', 1, 1 << 30) * 1024 * 1024,
    s3PollMs: intOption('s3-poll-ms', opts.s3PollMs ?? '5000', 100),
    s3TimeoutMs: intOption('s3-timeout-ms', opts.s3TimeoutMs ?? '10000', 100),
    renderThreads: intOption('render-threads', opts.renderThreads ?? String(defaultRenderThreads()), 0, 256),
    renderSplit: opts.renderSplit === true,
    fromSlot: opts.fromSlot === undefined ? undefined : intOption('from-slot', opts.fromSlot),
    provider: rpcProviderSettings(opts),
  }
  if (cfg.fromSlot !== undefined && !opts.rpc) throw new UsageError('--from-slot applies only to --rpc')
  const shares = cacheShares(cfg.cacheBytes, cfg.renderThreads, !cfg.renderSplit)
  return { ...cfg, threadCacheBytes: shares.main, workerCacheBytes: shares.worker }
}

export function register(program: Command): void {
  const cmd = program.command('serve').description('serve datasets over the Portal HTTP interface')
  for (const [flags, help, value] of SERVE_FLAGS) cmd.option(flags, help, typeof value === 'function' ? value() : value)
  addRpcProviderOptions(cmd).action(runServe)
}

/** the command: serve until a signal (status 0) or a fatal ingestion or disk failure (status 1) */
async function runServe(opts: ServeOptions): Promise<void> {
  let s: Serving | undefined
  let stopping = false
  const shutdown = async (code: number) => {
    if (stopping) return
    stopping = true
    // closing the stores after a full disk may fail again: the status is the one decided
    const failed = await s?.stop().then(
      () => null,
      (e: unknown) => e,
    )
    if (failed && code === 0) process.stderr.write(`solportal: error: ${errorMessage(failed)}\n`)
    process.exit(failed ? 1 : code)
  }
  // ingestion stopped for good (a block stayed damaged, logged): the process ends with status
  // 1 so that a supervisor sees it, instead of serving a head that no longer moves
  // a full or failing disk: one line on stderr, once, and a clean stop with status 1
  const storageStop = (e: unknown) => {
    if (!stopping) process.stderr.write(`solportal: error: ${diskFullLine(e)}\n`)
    void shutdown(1)
  }
  const checked = checkServe(opts)
  const { isStorageError, isLmdbCommitFailure } = await import('../../store/write-all.ts')
  s = await startServing(checked, { onFatal: (e) => (isStorageError(e) ? storageStop(e) : void shutdown(1)) })
  // a full or failing disk seen by a write nobody awaits (LMDB's own; a failed LMDB commit's
  // batch promise duplicates what its transactions report to the ingester)
  process.on('unhandledRejection', (e) => {
    if (isLmdbCommitFailure(e)) return
    if (!isStorageError(e)) throw e
    storageStop(e)
  })
  process.once('SIGINT', () => void shutdown(0))
  process.once('SIGTERM', () => void shutdown(0))
  await s.ready
}

/** test and embedding hooks of `serve` */
export interface ServeHooks {
  /** the logger (default: JSON lines on stdout, level LOG_LEVEL, `--quiet` = errors only) */
  logger?: Logger
  /** awaited after the port opens and before the datasets load (tests: hold the loading) */
  beforeLoad?: () => Promise<void>
  /** `--rpc`/`--demo`: ingestion stopped for good (the ingester has logged why) */
  onFatal?: (err: Error) => void
}

export interface Serving {
  server: PortalServer
  url: string
  metrics: Metrics
  /** resolves once the datasets are loaded and served; rejects (server closed) when loading fails */
  ready: Promise<void>
  /** close the server and the stores */
  stop(): Promise<void>
}

/**
 * Opens the port at once (/health answers, /ready and the dataset routes answer 503 with
 * Retry-After), then loads the datasets and starts serving them.
 */
export async function serve(opts: ServeOptions, hooks: ServeHooks = {}): Promise<Serving> {
  return startServing(checkServe(opts), hooks)
}

/** the sources and the checked options of `serve` */
interface CheckedServe {
  opts: ServeOptions
  plans: SourcePlan[]
  config: PortalConfig | null
  /** each source's settings */
  cfgs: ServeSettings[]
  cfg: ServeSettings
  heapGrowingPercent: number
}

/** every source's options checked, before anything starts or loads */
function checkServe(opts: ServeOptions): CheckedServe {
  const { plans, config } = servePlan(opts)
  const cfgs = plans.map((p) => inSource(p, () => checkServeOptions(p.opts)))
  const cfg = checkServeOptions(opts)
  const heapGrowingPercent = intOption(
    'heap-growing-percent',
    opts.heapGrowingPercent ?? String(SERVE_HEAP_GROWING_PERCENT),
    0,
    1000,
  )
  return { opts, plans, config, cfgs, cfg, heapGrowingPercent }
}

/** `serve` of checked options: the access rules, the application, the logger and the sources load here */
async function startServing(checked: CheckedServe, hooks: ServeHooks): Promise<Serving> {
  const { opts, plans, config, cfgs, cfg } = checked
  boundHeapGrowth(checked.heapGrowingPercent)
  const access = (await import('./serve-access.ts')).serveAccess(plans, config, opts, cfg)
  const [{ PortalApp }, { createLogger, levelFromEnv }, { SourceOptionError }] = await Promise.all([
    import('../../server/app.ts'),
    import('../../log.ts'),
    import('../../server/sources.ts'),
  ])
  const log = hooks.logger ?? createLogger({ destination: 'stdout', level: opts.quiet ? 'error' : levelFromEnv() })
  // the address lines are printed even with --quiet: scripts wait for them
  const announce = opts.quiet && log.level !== 'silent' ? log.child({}, { level: 'info' }) : log
  const app = new PortalApp({
    render: { threads: cfg.renderThreads, cacheBytes: cfg.workerCacheBytes, streamed: !cfg.renderSplit },
    limits: {
      responseTimeMs: cfg.responseTimeMs,
      responseBytes: cfg.responseBytes,
      headWaitMs: cfg.headWaitMs,
      maxConcurrentStreams: cfg.maxStreams,
      maxStreamsPerClient: cfg.maxStreamsPerClient,
      maxBodyBytes: cfg.maxBodyBytes,
      maxFilterValues: cfg.maxFilterValues,
      bodyTimeoutMs: cfg.bodyTimeoutMs,
      writeTimeoutMs: cfg.writeTimeoutMs,
      streamBufferBytes: cfg.streamBufferBytes,
      memoryLimitBytes: cfg.memoryLimitBytes,
    },
    rateLimit: cfg.rateLimit > 0 ? { perSecond: cfg.rateLimit, burst: 2 * cfg.rateLimit } : null,
    access,
    log,
  })
  let url: string
  try {
    url = await app.server.listen(cfg.port, opts.host)
  } catch (e) {
    throw listenError(e, 'port', 'host', opts.host, cfg.port)
  }
  announce.info(`accepting connections on ${url} (/health, /ready, /metrics); loading the datasets`)
  const sources = plans.map((p, i) => ({ opts: p.opts, settings: cfgs[i], views: p.views }))
  const { beforeLoad, onFatal } = hooks
  const ready = app.load(url, sources, { announce, beforeLoad, onFatal, openArchive }).catch((e: unknown) => {
    // a source the options name that cannot be opened is a misuse of them (status 2)
    throw e instanceof SourceOptionError ? new UsageError(e.message) : e
  })
  // the caller awaits it (the command does); an embedder that does not must not crash the process
  ready.catch(() => {})
  return { server: app.server, url, metrics: app.metrics, ready, stop: () => app.stop() }
}

/** --archive: imported as `solportal import` does (src/cli/commands/serve-archive.ts) */
const openArchive: ArchiveOpener = async (paths, opts) =>
  (await import('./serve-archive.ts')).openArchiveDataset(paths, opts)

/** a full or failing disk's error, once, without repeating what the ingester's message says */
function diskFullLine(e: unknown): string {
  const m = errorMessage(e)
  return m.startsWith('the disk is full or failing') ? m : `the disk is full or failing: ${m}`
}

/** `--memory-limit-mb`, bytes: by default 1 GiB with the default cache, more with a larger one */
function memoryLimitBytes(opts: ServeOptions): number {
  const cacheMb = intOption('cache-mb', opts.cacheMb ?? '192', 1, 1 << 20)
  const fallback = String(DEFAULT_MEMORY_LIMIT_MB + Math.max(0, cacheMb - 192))
  return intOption('memory-limit-mb', opts.memoryLimitMb ?? fallback, 0, 1 << 24) * 1024 * 1024
}
