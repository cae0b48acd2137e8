/**
 * `solportal serve` (what `npm start` runs): the bundled sample by default, archive files with
 * `--archive`, an imported dataset directory with `--dataset-dir`, a live node with `--rpc`, or an
 * in-process fake chain with `--demo`.
 */
import type { Command } from 'commander'
import { addRpcProviderOptions } from '../options.ts'
import { defaultDecodeThreads } from '../../ingest/block-workers.ts'
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_TIMEOUT_MS } from '../../ingest/rpc.ts'
import { sampleLines } from '../../ingest/sample.ts'
import type { DatasetConfig } from '../../server/datasets.ts'
import { DatasetRegistry } from '../../server/datasets.ts'
import { bodyLimitFor, FILTER_VALUE_BYTES } from '../../server/body.ts'
import { DEFAULT_LIMITS, PortalServer } from '../../server/http.ts'
import { loadStaticStore } from '../../server/load.ts'
import { Metrics } from '../../server/metrics.ts'
import { Observer } from '../../server/observe.ts'
import { defaultRenderThreads, RenderPool, cacheShares } from '../../server/render-pool.ts'
import { createLogger, levelFromEnv, messageLogger, type Logger } from '../../log.ts'
import type { BlockStore } from '../../store/types.ts'
import type { NodeHeadTracker } from '../../ingest/lag.ts'
import {
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
import { startSlotOf } from './serve-from-slot.ts'
import { errorMessage } from '../../util/errors.ts'
import { boundHeapGrowth, SERVE_HEAP_GROWING_PERCENT } from '../../util/gc-tuning.ts'
import { DEFAULT_VIEWS, inSource, namedDatasets, serveAccess, servePlan, type NamedView } from './serve-config.ts'
import { isStorageError } from '../../store/write-all.ts'
import { DEFAULT_MEMORY_LIMIT_MB } from '../../server/memory-gate.ts'
import { isLmdbCommitFailure } from '../../store/hot.ts'

export interface ServeOptions {
  port: string
  host: string
  archive?: string[]
  demo?: boolean
  rpc?: string
  /** `--geyser URL` (with --rpc), or `--geyser` alone (with --demo) */
  geyser?: string | boolean
  geyserToken?: string
  dataDir?: string
  datasetDir?: string
  commitment: string
  rpcConcurrency: string
  rpcMaxBodyMb?: string
  rpcStallMs?: string
  rpcPollMs?: string
  rpcDamagedAttempts?: string
  hotMaxMb?: string
  ingestThreads?: string
  bigintsAsNumbers?: boolean
  includeVotes?: boolean
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
  /** --dataset-dir s3://...: local cache directory, its disk budget, the pointer's poll interval */
  cacheDir?: string
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

/** the checked numbers and choices of the options (every misuse is refused before anything starts) */
interface ServeSettings {
  port: number
  commitment: 'processed' | 'confirmed' | 'finalized'
  rpcConcurrency: number
  rpcMaxBodyBytes: number
  rpcStallMs: number
  rpcPollMs: number
  rpcDamagedAttempts: number
  /** --hot-max-mb in bytes (null: no bound) */
  hotMaxBytes: number | null
  ingestThreads: number
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
  /**
   * the cache of the main thread's cold stores: --cache-mb is the total over the main thread and
   * the render threads (each opens the store and keeps a cache of its own; see `cacheShares`)
   */
  threadCacheBytes: number
  /** the cache of each render thread's cold stores */
  workerCacheBytes: number
  cacheDiskBytes: number
  s3PollMs: number
  s3TimeoutMs: number
  renderThreads: number
  renderSplit: boolean
  fromSlot?: number
  provider: ReturnType<typeof rpcProviderSettings>
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
  const cmd = program
    .command('serve')
    .description('serve datasets over the Portal HTTP interface')
    .option('--port <port>', 'port to listen on (env PORT)', process.env.PORT ?? '3000')
    .option('--host <host>', 'address to listen on (env HOST)', process.env.HOST ?? '127.0.0.1')
    .option(
      '--archive <path...>',
      'serve archive files (.jsonl/.jsonl.gz, or a directory of them) instead of the sample, imported into a temporary dataset directory',
    )
    .option('--demo', 'run a live fake Solana chain in-process and serve it in real time')
    .option('--rpc <url>', 'follow a Solana node over JSON-RPC (needs --data-dir)')
    .option('--data-dir <dir>', 'storage of the followed chain (hot LMDB + cold chunks)')
    .option(
      '--commitment <level>',
      'commitment of the followed chain: confirmed or finalized (with --geyser, processed too)',
      'confirmed',
    )
    .option(
      '--geyser [url]',
      'with --rpc: take blocks and slot statuses from this Geyser (Yellowstone gRPC) endpoint, the RPC node filling every gap; with --demo: run the demo chain through a fake Geyser server',
    )
    .option('--geyser-token <token>', 'the x-token of the Geyser endpoint (env GEYSER_TOKEN)', process.env.GEYSER_TOKEN)
    .option('--rpc-concurrency <n>', 'getBlock requests in flight', '4')
    .option(
      '--rpc-poll-ms <ms>',
      "once caught up, the follower asks for the next slot's block directly; when the node has none yet, it reads the head (getSlot) and waits this long before asking again",
      '250',
    )
    .option(
      '--rpc-max-body-mb <n>',
      'largest node answer read, MiB (a bigger one is abandoned while reading and fetched again)',
      String(DEFAULT_MAX_RESPONSE_BYTES / 1024 / 1024),
    )
    .option(
      '--ingest-threads <n>',
      "--rpc, --demo: worker threads that parse and normalize the node's blocks (0: the main thread; default: the cores less one, 2 to 4; 1 on one core)",
    )
    .option(
      '--hot-max-mb <n>',
      '--rpc: bound on the unfinalized blocks the hot store (LMDB) holds; a warning at 80%, ingestion pauses at the bound until finalization frees space (default 4096; 0 = none)',
    )
    .option(
      '--rpc-damaged-attempts <n>',
      'answers fetched for a block whose answer is damaged before ingestion stops (exit status 1)',
      '5',
    )
    .option(
      '--rpc-stall-ms <ms>',
      'a node request that receives nothing for this long is abandoned and retried',
      String(DEFAULT_STALL_TIMEOUT_MS),
    )
    .option(
      '--dataset-dir <dir>',
      'serve a dataset directory written by `solportal import`, or s3://BUCKET/PREFIX (a read replica)',
    )
    .option('--bigints-as-numbers', 'render u64 amounts as bare JSON integers instead of decimal strings')
    .option('--include-votes', 'keep vote transactions')
    .option('--response-time-ms <ms>', 'end a stream response after this long', String(DEFAULT_LIMITS.responseTimeMs))
    .option('--response-bytes <n>', 'end a stream response after this many bytes', String(DEFAULT_LIMITS.responseBytes))
    .option(
      '--head-wait-ms <ms>',
      'wait this long for a block above the head before 204',
      String(DEFAULT_LIMITS.headWaitMs),
    )
    .option('--max-streams <n>', 'concurrent stream responses before 503', String(DEFAULT_LIMITS.maxConcurrentStreams))
    .option(
      '--max-streams-per-client <n>',
      'concurrent stream requests of one client address before 429',
      String(DEFAULT_LIMITS.maxStreamsPerClient),
    )
    .option(
      '--max-body-bytes <n>',
      `largest query body, decoded (default ${DEFAULT_LIMITS.maxBodyBytes}, or what --max-filter-values needs)`,
    )
    .option('--max-filter-values <n>', 'values per filter list', String(DEFAULT_LIMITS.maxFilterValues))
    .option(
      '--body-timeout-ms <ms>',
      'a request (headers and body) must arrive within this long, else 408',
      String(DEFAULT_LIMITS.bodyTimeoutMs),
    )
    .option(
      '--write-timeout-ms <ms>',
      'cut a response whose client takes no bytes for this long (0 = never)',
      String(DEFAULT_LIMITS.writeTimeoutMs),
    )
    .option(
      '--stream-buffer-mb <n>',
      'response bytes buffered across all streams before writers wait',
      String(DEFAULT_LIMITS.streamBufferBytes / (1024 * 1024)),
    )
    .option(
      '--memory-limit-mb <n>',
      'resident memory to stay under: above 3/4 of it, stream responses wait before decoding their next chunk and the heap is collected (0 = no limit; default 1024 plus what --cache-mb adds over 192)',
    )
    .option('--rate-limit <n>', 'requests per second per client address (0 = off)', '200')
    .option(
      '--cache-mb <n>',
      'memory for cold-store columns, pages, filters and chunk footers read from disk (--dataset-dir, --rpc), in all: with --render-threads, an eighth for the main thread and the rest split between the render threads (--render-split: evenly between all)',
      '192',
    )
    .option('--cache-dir <dir>', '--dataset-dir s3://...: local cache of the fetched objects (default a temporary one)')
    .option('--cache-disk-mb <n>', '--dataset-dir s3://...: disk budget of the cached chunk files (default 10240)')
    .option('--s3-poll-ms <ms>', '--dataset-dir s3://...: how often new chunks are looked for (default 5000)')
    .option(
      '--s3-timeout-ms <ms>',
      '--dataset-dir s3://...: an object-store request making no progress this long fails and is retried (default 10000)',
    )
    .option(
      '--render-threads <n>',
      'worker threads rendering finalized ranges of stream responses (default 0 = render in the main thread; opt-in: memory under many wide streams is not bounded yet)',
    )
    .option(
      '--render-split',
      "with --render-threads: split a stream's range into segments rendered by every thread, the main one included (default: one render thread streams the whole range while the main thread sends)",
    )
    .option(
      '--heap-growing-percent <n>',
      `how far the JavaScript heap may grow past its live size before a full collection, percent (0 = V8's own factor, 10-300 %, which grows on a loaded machine)`,
      String(SERVE_HEAP_GROWING_PERCENT),
    )
    .option('--quiet', 'log errors only')
    .option(
      '--config <file>',
      'serve the datasets of a JSON configuration file (names, aliases, sources, views, API keys, CORS, trusted proxies: docs/operations.md §10) instead of one source named by flags',
    )
    .option(
      '--api-keys <file...>',
      'require an API key on the dataset routes: JSON files {"keys": [{"id", "sha256", "rateLimit", "maxStreams", "datasets"}]} (sha256: printf %s KEY | sha256sum); per-key rate limit, stream cap and datasets',
    )
    .option(
      '--cors <origin...>',
      'let web pages of these origins (https://app.example.com, or * for any) call the API from a browser: preflights answered, X-Sqd-* headers exposed',
    )
    .option(
      '--trust-proxy <cidr...>',
      'proxies (addresses or CIDR ranges) trusted to name the client in X-Forwarded-For / Forwarded: rate limits, stream caps and logs then use the forwarded address',
    )
    .option('--api-key-header <name>', 'the header holding the API key (default: Authorization: Bearer KEY)')
    .option(
      '--from-slot <slot>',
      "--rpc with an empty --data-dir: start at this slot (backfilled up to the node's head, then followed) instead of the node's finalized slot",
    )
  addRpcProviderOptions(cmd).action(async (opts: ServeOptions) => {
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
    s = await serve(opts, { onFatal: (e) => (isStorageError(e) ? storageStop(e) : void shutdown(1)) })
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
  })
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
  const { plans, config } = servePlan(opts)
  // every source's options checked before anything starts
  const cfgs = plans.map((p) => inSource(p, () => checkServeOptions(p.opts)))
  const cfg = checkServeOptions(opts)
  boundHeapGrowth(
    intOption('heap-growing-percent', opts.heapGrowingPercent ?? String(SERVE_HEAP_GROWING_PERCENT), 0, 1000),
  )
  const access = serveAccess(plans, config, opts, cfg)
  const log = hooks.logger ?? createLogger({ destination: 'stdout', level: opts.quiet ? 'error' : levelFromEnv() })
  // the address lines are printed even with --quiet: scripts wait for them
  const announce = opts.quiet && log.level !== 'silent' ? log.child({}, { level: 'info' }) : log
  const metrics = new Metrics()
  // worker threads start with the first stream that uses them
  // each worker keeps its own cache of what it reads: --cache-mb split with the main thread's
  const renderPool =
    cfg.renderThreads > 0
      ? new RenderPool({ threads: cfg.renderThreads, cacheBytes: cfg.workerCacheBytes, streamed: !cfg.renderSplit })
      : null
  const server = new PortalServer({
    renderPool,
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
    ...access,
    log: (level, msg) => log[level](msg),
    observer: new Observer({ logger: log, metrics }),
  })
  let url: string
  try {
    url = await server.listen(cfg.port, opts.host)
  } catch (e) {
    throw listenError(e, 'port', 'host', opts.host, cfg.port)
  }
  announce.info(`accepting connections on ${url} (/health, /ready, /metrics); loading the datasets`)

  let onStop: (() => Promise<void>) | undefined
  const loading = new AbortController()
  const stop = async () => {
    log.info('shutting down')
    loading.abort()
    await server.close()
    await renderPool?.close()
    await onStop?.()
  }
  const ready = (async () => {
    try {
      await hooks.beforeLoad?.()
      const datasets: DatasetConfig[] = []
      const stops: (() => Promise<void>)[] = []
      onStop = async () => {
        for (const s of stops.reverse()) await s()
      }
      for (let i = 0; i < plans.length; i++) {
        const loaded = await loadDatasets(
          plans[i].opts,
          cfgs[i],
          log,
          metrics,
          hooks.onFatal,
          loading.signal,
          plans[i].views,
        )
        if (loaded.stop) stops.push(loaded.stop)
        datasets.push(...loaded.datasets)
      }
      server.setDatasets(new DatasetRegistry(datasets))
      announce.info(`solportal listening on ${url}: ${datasets.map((d) => `${url}/datasets/${d.name}`).join(', ')}`)
    } catch (e) {
      log.error(`loading the datasets failed: ${errorMessage(e)}`)
      await stop().catch(() => {})
      throw e
    }
  })()
  // the caller awaits it (the command does); an embedder that does not must not crash the process
  ready.catch(() => {})
  return { server, url, metrics, ready, stop }
}

async function loadDatasets(
  opts: ServeOptions,
  cfg: ServeSettings,
  log: Logger,
  metrics: Metrics,
  onFatal?: (err: Error) => void,
  signal?: AbortSignal,
  views: readonly NamedView[] = DEFAULT_VIEWS,
): Promise<{ datasets: DatasetConfig[]; stop?: () => Promise<void> }> {
  const datasets: DatasetConfig[] = []
  const bigints = !!opts.bigintsAsNumbers
  // the metrics of the source are labelled with its first dataset's name
  const label = views[0].name
  let onStop: (() => Promise<void>) | undefined
  // the cold store directory that render worker threads may open (not for S3 replicas: their
  // chunk files are fetched on demand by this process)
  let renderDir: string | undefined

  if (opts.demo || opts.rpc) {
    let fromSlot: number | undefined
    const rt = await import('../../ingest/realtime.ts')
    const ingestLog = messageLogger(log.child({ component: 'ingest' }))
    let ds: Awaited<ReturnType<typeof rt.createRealtimeDataset>>
    if (opts.demo && opts.geyser) {
      const { createGeyserDemoDataset } = await import('../../ingest/geyser/dataset.ts')
      const demo = await createGeyserDemoDataset({
        logger: ingestLog,
        dataDir: opts.dataDir,
        onFatal,
        normalizeThreads: cfg.ingestThreads,
      })
      ds = demo
      log.info(`demo: fake Solana node at ${demo.node.url}, fake Geyser server at ${demo.server.url}`)
    } else if (opts.demo) {
      ds = await rt.createDemoDataset({
        logger: ingestLog,
        dataDir: opts.dataDir,
        onFatal,
        normalizeThreads: cfg.ingestThreads,
      })
      log.info(`demo: fake Solana node at ${(ds as Awaited<ReturnType<typeof rt.createDemoDataset>>).node.url}`)
    } else {
      const { ColdWriterProcess, FINALIZE_BATCHES } = await import('../../ingest/cold-writer.ts')
      const { coldDir } = await import('../../store/dataset-dir.ts')
      const dataDir = opts.dataDir! // checked: --rpc needs --data-dir
      // chunks are encoded and merged in a process of their own, never between the streams
      const cold = await ColdWriterProcess.open(coldDir(dataDir), { cacheBytes: cfg.threadCacheBytes })
      // the first slot asked for with an empty data directory is the datasets' start_block
      fromSlot = startSlotOf(dataDir, cfg.fromSlot, cold.reader.lastBlock() !== null)
      renderDir = cold.reader.dir
      metrics.addColdCache(label, () => cold.reader.cacheStats())
      const rtOpts: Parameters<typeof rt.createRealtimeDataset>[0] = {
        rpcUrl: opts.rpc!,
        dataDir,
        cold,
        // getBlock knows no processed: the node fills the gaps of a processed stream at confirmed
        commitment: cfg.commitment === 'processed' ? 'confirmed' : cfg.commitment,
        concurrency: cfg.rpcConcurrency,
        pollIntervalMs: cfg.rpcPollMs,
        normalizeOptions: { includeVotes: opts.includeVotes },
        rpc: { maxResponseBytes: cfg.rpcMaxBodyBytes, stallTimeoutMs: cfg.rpcStallMs },
        provider: cfg.provider,
        startSlot: fromSlot,
        malformedAttempts: cfg.rpcDamagedAttempts,
        hotMaxBytes: cfg.hotMaxBytes ?? undefined,
        normalizeThreads: cfg.ingestThreads,
        ...FINALIZE_BATCHES,
        onFatal,
        logger: ingestLog,
      }
      if (typeof opts.geyser === 'string') {
        const { createGeyserDataset } = await import('../../ingest/geyser/dataset.ts')
        ds = await createGeyserDataset({
          ...rtOpts,
          geyser: { url: opts.geyser, token: opts.geyserToken, commitment: cfg.commitment },
        })
        log.info(`following the Geyser stream at ${opts.geyser} (${cfg.commitment}), gaps filled from ${opts.rpc}`)
      } else ds = await rt.createRealtimeDataset(rtOpts)
      const stopDs = ds.stop
      ds.stop = async () => {
        await stopDs()
        await cold.close()
      }
    }
    metrics.addIngester({
      dataset: label,
      store: ds.store,
      nodeHead: ds.ingester.source.nodeHead,
      stats: ds.ingester.stats,
      gap:
        'geyser' in ds ? () => (ds as { geyser: { gap: { from: number; to: number } | null } }).geyser.gap : undefined,
      hot: () => ({ bytes: ds.hot.bytes, maxBytes: ds.ingester.hotMaxBytes }),
    })
    ds.start()
    const progress = progressLog(ds, log.child({ component: 'ingest' }))
    onStop = async () => {
      clearInterval(progress)
      await ds.stop()
    }
    datasets.push(
      ...namedDatasets(
        views,
        { store: ds.store, realTime: true, completeStart: fromSlot, stableStart: fromSlot },
        bigints,
      ),
    )
  } else if (opts.datasetDir) {
    let store: import('../../store/dataset-dir.ts').DatasetDirStore
    let unavailable: (() => string | null) | undefined
    if (opts.datasetDir.startsWith('s3://')) {
      const { openS3Replica } = await import('../../store/s3.ts')
      const s3log = log.child({ component: 's3' })
      const replica = await openS3Replica(opts.datasetDir, {
        cacheDir: opts.cacheDir,
        cacheDiskBytes: cfg.cacheDiskBytes,
        pollMs: cfg.s3PollMs,
        cacheBytes: cfg.threadCacheBytes,
        retry: { timeoutMs: cfg.s3TimeoutMs },
        log: (m, level) => (level === 'debug' ? s3log.debug(m) : s3log.warn(m)),
      })
      unavailable = () => {
        const why = replica.unreachable()
        return why && `object store unreachable: ${why}`
      }
      store = replica.store
      log.info(`--dataset-dir ${opts.datasetDir}: cache in ${replica.cacheDir}, head ${store.head()?.number ?? 'none'}`)
      onStop = () => replica.close()
    } else {
      const { openDatasetDir } = await import('../../store/dataset-dir.ts')
      store = await openDatasetDir(opts.datasetDir, { cacheBytes: cfg.threadCacheBytes }).catch((e: Error) => {
        throw new UsageError(`--dataset-dir ${opts.datasetDir}: ${e.message}`)
      })
      onStop = () => store.close()
      renderDir = store.cold.dir
    }
    metrics.addColdCache(label, () => store.cold.cacheStats())
    datasets.push(...namedDatasets(views, { store, realTime: false, unavailable }, bigints))
  } else if (opts.archive) {
    // imported into a temporary dataset directory: bounded memory whatever the archive's size
    const { openArchiveDataset } = await import('./serve-archive.ts')
    const ds = await openArchiveDataset(opts.archive, {
      includeVotes: opts.includeVotes,
      cacheBytes: cfg.threadCacheBytes,
      signal,
      log,
    })
    metrics.addColdCache(label, () => ds.store.cold.cacheStats())
    onStop = () => ds.close()
    renderDir = ds.store.cold.dir
    // both datasets start at the archive's first block
    const first = ds.store.firstBlock() ?? 0
    datasets.push(...namedDatasets(views, { store: ds.store, realTime: false, completeStart: first }, bigints))
  } else {
    const t0 = Date.now()
    const { store, blocks, warnings } = await loadStaticStore(sampleLines(), {
      includeVotes: opts.includeVotes,
      // the bundled sample's warnings are known (one trimmed mainnet fixture lacks the invoke log
      // lines of its v0 transaction): counted in one line below instead of printed in full
    })
    log.info(
      `loaded the bundled sample: ${blocks} blocks in ${Date.now() - t0} ms` +
        (warnings
          ? ` (${warnings} expected normalization warning(s): a trimmed mainnet fixture lacks invoke log lines)`
          : ''),
    )
    const first = store.firstBlock() ?? 0
    // The stable dataset starts at the whole mainnet block of the sample (2024); the complete one
    // at the earliest sample block (2021).
    const stableStart = Math.max(first, 254170887)
    datasets.push(...namedDatasets(views, { store, realTime: false, stableStart, completeStart: first }, bigints))
  }
  if (renderDir !== undefined) for (const d of datasets) d.coldDir = renderDir
  return { datasets, stop: onStop }
}

/** every 30 s: where the follower stands (heads, the node's head, lag, blocks/s since the last line) */
function progressLog(
  ds: { store: BlockStore; ingester: { source: { nodeHead: NodeHeadTracker }; stats: { blocks: number } } },
  log: Logger,
  everyMs = 30_000,
): NodeJS.Timeout {
  let last = { blocks: ds.ingester.stats.blocks, at: Date.now() }
  const t = setInterval(() => {
    const now = Date.now()
    const head = ds.store.head()?.number ?? null
    const lag = ds.ingester.source.nodeHead.lag(head, now)
    const blocks = ds.ingester.stats.blocks
    log.info(
      {
        head,
        finalized: ds.store.finalizedHead()?.number ?? null,
        nodeHead: ds.ingester.source.nodeHead.slot,
        lagSlots: lag?.slots ?? null,
        lagSeconds: lag ? Math.round(lag.seconds * 10) / 10 : null,
        blocksPerSecond: Math.round(((blocks - last.blocks) / ((now - last.at) / 1000)) * 10) / 10,
      },
      'ingest progress',
    )
    last = { blocks, at: now }
  }, everyMs)
  t.unref()
  return t
}

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
