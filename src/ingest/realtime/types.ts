/**
 * The live ingester's shapes: its logger, the block source it follows (a node over JSON-RPC, or a
 * Geyser stream), its options, what it reports for each stored block, and its fatal error.
 */
import { defaultLogger } from '../../log.ts'
import type { DecodeMarks, NormalizeFn } from '../block-decode.ts'
import { type Commitment } from '../rpc/errors.ts'
import { type SlotOutcome, type SourceEvent } from '../rpc/source.ts'
import type { RpcBlock } from '../../rpc/types.ts'
import type { HotStore, PushMarks } from '../../store/hot.ts'
import type { NodeHeadTracker } from '../lag.ts'
import type { ColdStore } from '../../store/types.ts'

export type { NormalizeFn }

export interface RealtimeLogger {
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}

/** the default: JSON lines on stderr (src/log.ts), level LOG_LEVEL */
export const consoleLogger: RealtimeLogger = {
  info: (m) => defaultLogger().info({ component: 'ingest' }, m),
  warn: (m) => defaultLogger().warn({ component: 'ingest' }, m),
  error: (m) => defaultLogger().error({ component: 'ingest' }, m),
}

export const silentLogger: RealtimeLogger = { info() {}, warn() {}, error() {} }

/**
 * Where the ingester's blocks come from: a node followed over JSON-RPC (`RpcSource`), or a Geyser
 * stream with the node filling its gaps (src/ingest/geyser/source.ts).
 */
export interface BlockSource {
  readonly commitment: Commitment
  /** the node's head slots as this source reads them (ingest lag) */
  readonly nodeHead: NodeHeadTracker
  /** see `RpcSource.blocks` */
  blocks(from: number, signal?: AbortSignal): AsyncGenerator<SourceEvent>
  /** one slot fetched again (a damaged block) */
  fetchSlot(slot: number, signal?: AbortSignal): Promise<SlotOutcome>
  /** the node's header of a slot, or null when it is not a block there (fork resolution) */
  fetchHeader(slot: number, commitment: Commitment, signal?: AbortSignal): Promise<RpcBlock | null>
  /** the highest finalized slot */
  finalizedSlot(signal?: AbortSignal): Promise<number>
  /**
   * whether the block ⟨number, hash⟩ is on the chain of the finalized slot, as far as the source
   * knows without asking the node (null: it does not know; the node's finalized header decides)
   */
  finalizedChainHas?(number: number, hash: string): boolean | null
  /** the source reports dead slots itself (`dead` events): the stored tip is not checked against the node */
  readonly reportsDeadSlots?: boolean
  /** release the source's connections */
  close?(): void
}

/** share of the hot store's bound (`hotMaxBytes`) at which a warning is logged */
export const HOT_WARN_SHARE = 0.8

export interface RealtimeIngesterOptions {
  source: BlockSource
  hot: HotStore
  cold: ColdStore
  normalize: NormalizeFn
  /** first slot to ingest when both stores are empty (default: the node's finalized slot) */
  startSlot?: number
  /** minimum pause between finalization checks (getSlot finalized + a header check), ms (default 1 000) */
  finalizeIntervalMs?: number
  /** pause after a failed session, doubled per consecutive failure up to 10 s (default 200 ms) */
  retryDelayMs?: number
  /**
   * once caught up, how often the stored tip is re-checked against the node (one getBlock header
   * request) while neither the node's head nor our tip changes, ms (default 1 000)
   */
  tipCheckIntervalMs?: number
  /**
   * consecutive tip checks in which the node's head stays below our tip, on our
   * chain, before our blocks above it are taken as orphaned and dropped (default 20; a lagging
   * load-balanced node must not make the head go back)
   */
  orphanStrikes?: number
  /**
   * finalization batching for cold stores that prefer bigger appends: move finalized blocks only
   * once at least `finalizeMinBlocks` are waiting (default 1) or the oldest has waited
   * `finalizeMaxDelayMs` (default 10 000)
   */
  finalizeMinBlocks?: number
  finalizeMaxDelayMs?: number
  /**
   * bound on the finalized blocks waiting in the hot store for the cold store (their stored bytes;
   * default none): past it, ingestion pauses until finalization has moved them. A follower far
   * behind the node (a restart after a stop) otherwise stores the node's blocks as fast as it can
   * fetch them while a slow cold store (a writer process starved of CPU on a busy machine) moves
   * them, and its hot store grows with the whole catch-up, which can fill the disk again.
   */
  finalizeBacklogMaxBytes?: number
  /**
   * a block whose getBlock answer is damaged (fails the shape check, is over the size cap, or has
   * transactions the normalizer skips) is fetched again up to this many times in all (default 5),
   * `malformedBackoffMs` (default 1 000) doubling between attempts; then ingestion stops
   * (`onFatal`) rather than store the block with fewer transactions
   */
  malformedAttempts?: number
  malformedBackoffMs?: number
  /**
   * bound on the hot store (`HotStore.bytes`, the unfinalized blocks LMDB holds; default none): a
   * warning is logged once it passes HOT_WARN_SHARE of it; at the bound, ingestion pauses (no new
   * block is stored) and finalization runs without waiting for its batch until it frees space.
   * Nothing is lost: the blocks not stored meanwhile are fetched when ingestion resumes.
   */
  hotMaxBytes?: number
  /** how often a paused ingestion checks the hot store again, ms (default 500) */
  hotPauseCheckMs?: number
  /** ingestion stopped for good (a block stayed damaged); the loop has ended when it is called */
  onFatal?: (err: Error) => void
  /**
   * every block stored (extended or replaced): when the node's answer was read and when the
   * hot store had it (`performance.now()`)
   */
  onStored?: (e: StoredBlock) => void
  logger?: RealtimeLogger
}

export interface StoredBlock {
  number: number
  answeredAt: number
  storedAt: number
  /**
   * wall-clock marks (`wallNow()`) of the steps between: decoding in a worker thread (absent when
   * the main thread decodes) and the hot store's apply (`locked`: its write lock taken,
   * `committed`: the LMDB transaction done, `emitted`: the waiting streams told)
   */
  marks?: DecodeMarks & PushMarks
}

/** Ingestion cannot go on without storing a damaged block: it stops. */
export class FatalIngestError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'FatalIngestError'
  }
}
