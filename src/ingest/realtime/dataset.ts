/**
 * The real-time dataset wired for the server's `--rpc URL`: the hot store over a cold store, the
 * node's RPC source (optionally behind another source, a Geyser stream), the worker threads that
 * normalize its answers, and the ingester (ingester.ts) between them.
 */
import { join } from 'node:path'
import type { NormalizeFn } from '../block-decode.ts'
import { BlockWorkerPool } from '../block-workers.ts'
import { describeCall, type Commitment } from '../rpc/errors.ts'
import { RpcSource } from '../rpc/source.ts'
import { type RpcClientOptions } from '../rpc/client.ts'
import { EventSummary, providerClientOptions, type ProviderSettings } from '../rpc-provider.ts'
import { MemoryColdStore } from '../../store/cold-memory.ts'
import { HotStore } from '../../store/hot.ts'
import { RealtimeStore } from '../../store/realtime-store.ts'
import type { ColdStore } from '../../store/types.ts'
import { tuneIncrementalMarking } from '../../util/gc-tuning.ts'
import { RealtimeIngester } from './ingester.ts'
import { consoleLogger, type BlockSource, type RealtimeLogger, type StoredBlock } from './types.ts'

export interface RealtimeDatasetOptions {
  /** the Solana node to follow (HTTP JSON-RPC) */
  rpcUrl: string
  /** the hot store's LMDB environment goes to `${dataDir}/hot` */
  dataDir: string
  /** finalized storage (default: a new MemoryColdStore — not durable) */
  cold?: ColdStore
  /** commitment of the followed chain (default `confirmed`) */
  commitment?: Exclude<Commitment, 'processed'>
  /** getBlock requests in flight (default 4) */
  concurrency?: number
  /** first slot when both stores are empty (default: the node's finalized slot) */
  startSlot?: number
  /** head poll interval once caught up, ms (default 250) */
  pollIntervalMs?: number
  /** see RealtimeIngesterOptions */
  finalizeIntervalMs?: number
  finalizeMinBlocks?: number
  finalizeMaxDelayMs?: number
  finalizeBacklogMaxBytes?: number
  orphanStrikes?: number
  tipCheckIntervalMs?: number
  retryDelayMs?: number
  malformedAttempts?: number
  malformedBackoffMs?: number
  onFatal?: (err: Error) => void
  onStored?: (e: StoredBlock) => void
  /** RPC client tuning (timeouts, stalls, size cap, retries, backoff); retries are logged */
  rpc?: Omit<RpcClientOptions, 'url'>
  /**
   * a provider's needs (headers, request-rate cap, gzip): 429s are then retried as long as the
   * node asks, and summarized in one log line a minute with the other retries
   */
  provider?: ProviderSettings
  /** normalizer (default: normalizeBlock of src/normalize/normalize.ts with `normalizeOptions`) */
  normalize?: NormalizeFn
  normalizeOptions?: { includeVotes?: boolean }
  /**
   * worker threads that parse and normalize the node's block answers (default 0 here: in the
   * calling thread, between the streams; `serve` defaults to the cores less one). With
   * mainnet-sized blocks one worker gives the same latency as the main thread and leaves the main
   * thread a third to a half as busy (bench/results/tail.md). A custom `normalize` always runs in
   * the main thread.
   */
  normalizeThreads?: number
  /** see RealtimeIngesterOptions */
  hotMaxBytes?: number
  hotPauseCheckMs?: number
  /** skip fsync in the hot store (tests only) */
  noSync?: boolean
  logger?: RealtimeLogger
  /**
   * another block source in front of the node (a Geyser stream: src/ingest/geyser/dataset.ts),
   * given the node's source, the hot and cold stores and the block decoding threads (null: none);
   * closed on stop
   */
  source?: (rpc: RpcSource, stores: { hot: HotStore; cold: ColdStore; decoders: BlockWorkerPool | null }) => BlockSource
}

export interface RealtimeDataset {
  store: RealtimeStore
  hot: HotStore
  cold: ColdStore
  ingester: RealtimeIngester
  /** the worker threads that parse and normalize the node's answers (null: the main thread does) */
  decoders: BlockWorkerPool | null
  /** start following the node */
  start(): void
  /** stop following and close the hot store (the cold store is the caller's, unless defaulted) */
  stop(): Promise<void>
}

/** the hot store over `cold`, its repairs on opening logged */
async function openHot(opts: RealtimeDatasetOptions, cold: ColdStore, log: RealtimeLogger): Promise<HotStore> {
  const hot = await HotStore.open({ path: join(opts.dataDir, 'hot'), coldLast: cold.lastBlock(), noSync: opts.noSync })
  if (hot.droppedOnOpen.length)
    log.info(`hot store: dropped ${hot.droppedOnOpen.length} block(s) already in the cold store`)
  if (hot.coldBehind) {
    log.warn(
      `the cold store ends at ${hot.coldBehind.coldLast?.number ?? 'nothing'} but blocks up to ${hot.coldBehind.anchor.number} were finalized into it earlier (not durable?): the cold store has a gap`,
    )
  }
  return hot
}

/** the node's block source: its client (provider settings, logged retries) and decoder threads */
function nodeSource(
  opts: RealtimeDatasetOptions,
  pool: BlockWorkerPool | null,
  log: RealtimeLogger,
): { source: RpcSource; summary: EventSummary | null } {
  const userOnRetry = opts.rpc?.onRetry
  const summary = opts.provider ? new EventSummary((line) => log.warn(line)) : null
  const provider = opts.provider && summary ? providerClientOptions(opts.rpcUrl, opts.provider, summary) : null
  const source = new RpcSource({
    client: {
      url: opts.rpcUrl,
      ...provider,
      ...opts.rpc,
      onRetry: (method, err, attempt, delayMs, params) => {
        if (provider) provider.onRetry!(method, err, attempt, delayMs, params)
        else
          log.warn(`${describeCall(method, params)}: ${err.message}; retry ${attempt + 1} in ${Math.round(delayMs)} ms`)
        userOnRetry?.(method, err, attempt, delayMs, params)
      },
    },
    commitment: opts.commitment ?? 'confirmed',
    concurrency: opts.concurrency,
    decoder: pool ?? undefined,
    pollIntervalMs: opts.pollIntervalMs,
    log: (m) => log.info(m),
  })
  return { source, summary }
}

export async function createRealtimeDataset(opts: RealtimeDatasetOptions): Promise<RealtimeDataset> {
  // the main thread applies every block and serves the streams: keep V8 from marking it
  // continuously (src/util/gc-tuning.ts)
  tuneIncrementalMarking()
  const ownCold = !opts.cold
  const cold = opts.cold ?? new MemoryColdStore()
  let normalize = opts.normalize
  if (!normalize) {
    const mod = await import('../../normalize/normalize.ts')
    const nopts = opts.normalizeOptions
    normalize = (line) => mod.normalizeBlock(line, nopts)
  }
  const log = opts.logger ?? consoleLogger
  const hot = await openHot(opts, cold, log)
  const threads = opts.normalize ? 0 : (opts.normalizeThreads ?? 0)
  const pool = threads > 0 ? new BlockWorkerPool({ threads, normalize: opts.normalizeOptions }) : null
  const { source, summary } = nodeSource(opts, pool, log)
  const store = new RealtimeStore({ hot, cold })
  const outer = opts.source?.(source, { hot, cold, decoders: pool })
  const ingester = new RealtimeIngester({
    source: outer ?? source,
    hot,
    cold,
    normalize,
    startSlot: opts.startSlot,
    finalizeIntervalMs: opts.finalizeIntervalMs,
    finalizeMinBlocks: opts.finalizeMinBlocks,
    finalizeMaxDelayMs: opts.finalizeMaxDelayMs,
    finalizeBacklogMaxBytes: opts.finalizeBacklogMaxBytes,
    orphanStrikes: opts.orphanStrikes,
    tipCheckIntervalMs: opts.tipCheckIntervalMs,
    retryDelayMs: opts.retryDelayMs,
    malformedAttempts: opts.malformedAttempts,
    malformedBackoffMs: opts.malformedBackoffMs,
    hotMaxBytes: opts.hotMaxBytes,
    hotPauseCheckMs: opts.hotPauseCheckMs,
    onFatal: opts.onFatal,
    onStored: opts.onStored,
    logger: opts.logger,
  })
  return {
    store,
    hot,
    cold,
    ingester,
    decoders: pool,
    start: () => ingester.start(),
    stop: async () => {
      await ingester.stop()
      outer?.close?.()
      // the kept-alive connections to the node
      source.client.close()
      summary?.close()
      await pool?.close()
      await hot.close()
      if (ownCold) await (cold as ColdStore).close?.()
    },
  }
}
