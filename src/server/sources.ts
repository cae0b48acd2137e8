/**
 * Loading one source into served datasets (what `serve` runs per source): the bundled sample, an
 * archive (imported into a temporary dataset directory), a dataset directory (local, or an S3
 * read replica), a live node over JSON-RPC (optionally through a Geyser stream), or the in-process
 * demo chain. A source is served under one or more names (views); its cold store's caches and its
 * ingester are registered with the metrics.
 */
import type { NodeHeadTracker } from '../ingest/lag.ts'
import { type RealtimeDataset } from '../ingest/realtime/dataset.ts'
import type { ProviderSettings } from '../ingest/rpc-provider.ts'
import { sampleLines } from '../ingest/sample.ts'
import { messageLogger, type Logger } from '../log.ts'
import type { DatasetConfig } from './datasets.ts'
import { startSlotOf } from './from-slot.ts'
import { loadStaticStore } from './load.ts'
import type { Metrics } from './metrics.ts'
import { DEFAULT_VIEWS, type NamedView } from './named-views.ts'
import type { DatasetDirStore } from '../store/dataset-dir.ts'
import type { BlockStore } from '../store/types.ts'

/** what names a source (as `serve`'s flags give it; at most one of archive, datasetDir, rpc, demo) */
export interface SourceOptions {
  archive?: string[]
  demo?: boolean
  rpc?: string
  /** `--geyser URL` (with rpc), or `--geyser` alone (with demo) */
  geyser?: string | boolean
  geyserToken?: string
  dataDir?: string
  datasetDir?: string
  /** s3:// dataset directories: the local cache directory */
  cacheDir?: string
  bigintsAsNumbers?: boolean
  includeVotes?: boolean
}

/** the checked numbers and choices a source is loaded with */
export interface SourceSettings {
  commitment: 'processed' | 'confirmed' | 'finalized'
  rpcConcurrency: number
  rpcMaxBodyBytes: number
  rpcStallMs: number
  rpcPollMs: number
  rpcDamagedAttempts: number
  /** bytes of unfinalized blocks the hot store may hold (null: no bound) */
  hotMaxBytes: number | null
  ingestThreads: number
  /** the cache of the main thread's cold stores */
  threadCacheBytes: number
  cacheDiskBytes: number
  s3PollMs: number
  s3TimeoutMs: number
  fromSlot?: number
  provider: ProviderSettings
}

/** an archive imported into a temporary dataset directory (closing it removes the directory) */
export type ArchiveOpener = (
  paths: readonly string[],
  opts: { includeVotes?: boolean; cacheBytes?: number; signal?: AbortSignal; log: Logger },
) => Promise<{ store: DatasetDirStore; close(): Promise<void> }>

export interface SourceContext {
  log: Logger
  metrics: Metrics
  /** live sources: ingestion stopped for good (the ingester has logged why) */
  onFatal?: (err: Error) => void
  /** aborted when the server stops while loading */
  signal?: AbortSignal
  /** imports the archives of an archive source */
  openArchive: ArchiveOpener
}

/** a source the options name that cannot be opened (a misuse of them, not a failure) */
export class SourceOptionError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SourceOptionError'
  }
}

export interface LoadedSource {
  datasets: DatasetConfig[]
  /** closes the source (stops its ingestion) */
  stop?: () => Promise<void>
}

/** what a kind of source gives: its datasets, how it stops, the cold store render workers may open */
interface Opened extends LoadedSource {
  /** the cold store directory that render worker threads may open (not for S3 replicas: their
   * chunk files are fetched on demand by this process) */
  renderDir?: string
}

/** one source being loaded */
interface Job {
  opts: SourceOptions
  cfg: SourceSettings
  ctx: SourceContext
  views: readonly NamedView[]
  /** the metrics of the source are labelled with its first dataset's name */
  label: string
}

/** the datasets of one source */
export async function loadSource(
  opts: SourceOptions,
  cfg: SourceSettings,
  ctx: SourceContext,
  views: readonly NamedView[] = DEFAULT_VIEWS,
): Promise<LoadedSource> {
  const job: Job = { opts, cfg, ctx, views, label: views[0].name }
  const opened =
    opts.demo || opts.rpc
      ? await loadLive(job)
      : opts.datasetDir
        ? await loadDatasetDir(opts.datasetDir, job)
        : opts.archive
          ? await loadArchive(opts.archive, job)
          : await loadSample(job)
  const { datasets, stop, renderDir } = opened
  if (renderDir !== undefined) for (const d of datasets) d.coldDir = renderDir
  return { datasets, stop }
}

/** --demo, --rpc: ingestion started, its progress logged every 30 s */
async function loadLive(job: Job): Promise<Opened> {
  const { opts, ctx, views, label } = job
  const { log, metrics } = ctx
  const { ds, fromSlot, renderDir } = opts.demo ? await openDemo(job) : await openFollower(job)
  metrics.addIngester({
    dataset: label,
    store: ds.store,
    nodeHead: ds.ingester.source.nodeHead,
    stats: ds.ingester.stats,
    gap: 'geyser' in ds ? () => (ds as { geyser: { gap: { from: number; to: number } | null } }).geyser.gap : undefined,
    hot: () => ({ bytes: ds.hot.bytes, maxBytes: ds.ingester.hotMaxBytes }),
  })
  ds.start()
  const progress = progressLog(ds, log.child({ component: 'ingest' }))
  const stop = async () => {
    clearInterval(progress)
    await ds.stop()
  }
  const src = { store: ds.store, realTime: true, completeStart: fromSlot, stableStart: fromSlot }
  return { datasets: namedDatasets(views, src, !!opts.bigintsAsNumbers), stop, renderDir }
}

interface OpenedLive {
  ds: RealtimeDataset
  /** the slot an empty data directory started at: the datasets' start_block */
  fromSlot?: number
  renderDir?: string
}

/** --demo (--geyser: through a fake Geyser server) */
async function openDemo({ opts, cfg, ctx }: Job): Promise<OpenedLive> {
  const { log, onFatal } = ctx
  const ingestLog = messageLogger(log.child({ component: 'ingest' }))
  const demoOpts = { logger: ingestLog, dataDir: opts.dataDir, onFatal, normalizeThreads: cfg.ingestThreads }
  if (opts.geyser) {
    const { createGeyserDemoDataset } = await import('../ingest/geyser/dataset.ts')
    const demo = await createGeyserDemoDataset(demoOpts)
    log.info(`demo: fake Solana node at ${demo.node.url}, fake Geyser server at ${demo.server.url}`)
    return { ds: demo }
  }
  const { createDemoDataset } = await import('../ingest/realtime/demo.ts')
  const demo = await createDemoDataset(demoOpts)
  log.info(`demo: fake Solana node at ${demo.node.url}`)
  return { ds: demo }
}

/** --rpc (--geyser URL: the Geyser stream, the node filling its gaps) over --data-dir */
async function openFollower({ opts, cfg, ctx, label }: Job): Promise<OpenedLive> {
  const { log, metrics, onFatal } = ctx
  const rt = await import('../ingest/realtime/dataset.ts')
  const ingestLog = messageLogger(log.child({ component: 'ingest' }))
  const { ColdWriterProcess, FINALIZE_BATCHES } = await import('../ingest/cold-writer.ts')
  const { coldDir } = await import('../store/dataset-dir.ts')
  const dataDir = opts.dataDir! // checked: --rpc needs --data-dir
  // chunks are encoded and merged in a process of their own, never between the streams
  const cold = await ColdWriterProcess.open(coldDir(dataDir), { cacheBytes: cfg.threadCacheBytes })
  // the first slot asked for with an empty data directory is the datasets' start_block
  const fromSlot = startSlotOf(dataDir, cfg.fromSlot, cold.reader.lastBlock() !== null)
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
  let ds: RealtimeDataset
  if (typeof opts.geyser === 'string') {
    const { createGeyserDataset } = await import('../ingest/geyser/dataset.ts')
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
  return { ds, fromSlot, renderDir: cold.reader.dir }
}

/** --dataset-dir: a directory `solportal import` wrote, or s3://BUCKET/PREFIX (a read replica) */
async function loadDatasetDir(dir: string, { opts, cfg, ctx, views, label }: Job): Promise<Opened> {
  const { log, metrics } = ctx
  let store: DatasetDirStore
  let unavailable: (() => string | null) | undefined
  let stop: () => Promise<void>
  let renderDir: string | undefined
  if (dir.startsWith('s3://')) {
    const { openS3Replica } = await import('../store/s3.ts')
    const s3log = log.child({ component: 's3' })
    const replica = await openS3Replica(dir, {
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
    log.info(`--dataset-dir ${dir}: cache in ${replica.cacheDir}, head ${store.head()?.number ?? 'none'}`)
    stop = () => replica.close()
  } else {
    const { openDatasetDir } = await import('../store/dataset-dir.ts')
    store = await openDatasetDir(dir, { cacheBytes: cfg.threadCacheBytes }).catch((e: Error) => {
      throw new SourceOptionError(`--dataset-dir ${dir}: ${e.message}`)
    })
    stop = () => store.close()
    renderDir = store.cold.dir
  }
  metrics.addColdCache(label, () => store.cold.cacheStats())
  const datasets = namedDatasets(views, { store, realTime: false, unavailable }, !!opts.bigintsAsNumbers)
  return { datasets, stop, renderDir }
}

/** --archive: imported into a temporary dataset directory (bounded memory whatever the archive's size) */
async function loadArchive(paths: string[], { opts, cfg, ctx, views, label }: Job): Promise<Opened> {
  const { log, metrics, signal } = ctx
  const ds = await ctx.openArchive(paths, {
    includeVotes: opts.includeVotes,
    cacheBytes: cfg.threadCacheBytes,
    signal,
    log,
  })
  metrics.addColdCache(label, () => ds.store.cold.cacheStats())
  // both datasets start at the archive's first block
  const first = ds.store.firstBlock() ?? 0
  const src = { store: ds.store, realTime: false, completeStart: first }
  return {
    datasets: namedDatasets(views, src, !!opts.bigintsAsNumbers),
    stop: () => ds.close(),
    renderDir: ds.store.cold.dir,
  }
}

/** the bundled sample, in memory */
async function loadSample({ opts, ctx, views }: Job): Promise<Opened> {
  const log = ctx.log
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
  const src = { store, realTime: false, stableStart, completeStart: first }
  return { datasets: namedDatasets(views, src, !!opts.bigintsAsNumbers) }
}

/**
 * The datasets of a loaded source: the stable view starts at `stableStart` (the bundled sample's
 * whole mainnet block; else like the complete view), the complete one at `completeStart` (unset:
 * the store's first block, as it grows or is pruned); a dataset's own `startBlock` wins.
 */
export function namedDatasets(
  views: readonly NamedView[],
  src: {
    store: BlockStore
    realTime: boolean
    stableStart?: number
    completeStart?: number
    /** why the store cannot answer now (an unreachable object store), or null */
    unavailable?: () => string | null
  },
  bigintsAsNumbers: boolean,
): DatasetConfig[] {
  return views.map((v) => {
    const startBlock =
      v.startBlock ?? (v.view === 'stable' ? (src.stableStart ?? src.completeStart) : src.completeStart)
    const d: DatasetConfig = { name: v.name, aliases: v.aliases, store: src.store, realTime: src.realTime }
    if (src.unavailable) d.unavailable = src.unavailable
    if (startBlock !== undefined) d.startBlock = startBlock
    if (v.displayName !== undefined) d.displayName = v.displayName
    d.bigintsAsNumbers = v.bigintsAsNumbers ?? bigintsAsNumbers
    return d
  })
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
