/**
 * Live ingest: a Solana node followed into the real-time dataset (src/store/realtime-store.ts: a
 * finalized ColdStore below a fork-aware HotStore).
 *
 *  - `RealtimeIngester`: RpcSource → normalize → HotStore (EXTEND/REPLACE, fork resolution against
 *    the node) → finalization (hot → cold, in order) with start()/stop().
 *  - `createRealtimeDataset(...)`: everything wired, for the server's `--rpc URL`;
 *    `createDemoDataset(...)`: the same over an in-process fake node, for `--demo`.
 *
 * Decisions where the specs are silent: forks are resolved by walking the node's parent links
 * (getBlock headers) down to a block we store, then re-fetching above it, so a fork is one atomic
 * REPLACE (the old branch stays readable until the new one attaches); a fork reaching at or below
 * the finalized block is refused and retried (logged), never applied; finality reports are
 * verified by fetching the finalized header at the stored block's slot; finalized blocks live only
 * in the cold store, so `finalizedHead()` is the cold store's last block.
 */
import { isStorageError } from '../store/write-all.ts'
import { join } from 'node:path'
import { defaultLogger } from '../log.ts'
import type { Block, NormalizationWarning } from '../model.ts'
import { normalizeIntact, type DecodeMarks, type NormalizeFn } from './block-decode.ts'
import { BlockWorkerPool } from './block-workers.ts'
import {
  describeCall,
  RpcSource,
  sleep,
  type Commitment,
  type RpcClientOptions,
  type SlotOutcome,
  type SourceEvent,
  UnsupportedTransactionVersionError,
} from './rpc.ts'
import { EventSummary, providerClientOptions, type ProviderSettings } from './rpc-provider.ts'
import { MemoryColdStore } from '../store/cold-memory.ts'
import { HotStore, type PushMarks } from '../store/hot.ts'
import type { PackedBlock } from '../store/packed-block.ts'
import type { RpcBlock } from '../rpc/types.ts'
import type { NodeHeadTracker } from './lag.ts'
import { RealtimeStore } from '../store/realtime-store.ts'
import type { ColdStore } from '../store/types.ts'
import { tuneIncrementalMarking } from '../util/gc-tuning.ts'

// --- the ingester ------------------------------------------------------------------------------

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

/** Why a session ended and where the next one starts. */
class Restart {
  constructor(
    readonly from: number,
    readonly reason: string,
  ) {}
}

export class RealtimeIngester {
  readonly source: BlockSource
  readonly hot: HotStore
  readonly cold: ColdStore
  private readonly normalize: NormalizeFn
  private readonly startSlot?: number
  private readonly finalizeIntervalMs: number
  private readonly retryDelayMs: number
  private readonly orphanStrikes: number
  private readonly finalizeMinBlocks: number
  private readonly finalizeMaxDelayMs: number
  private readonly malformedAttempts: number
  private readonly malformedBackoffMs: number
  private readonly onFatal?: (err: Error) => void
  private readonly onStored?: (e: StoredBlock) => void
  /** consecutive failed sessions (reset by every stored block and every caught-up tip) */
  private failures = 0
  /** when finalized blocks were first seen waiting in the hot store (batching) */
  private finalWaitingSince: number | null = null
  private readonly tipCheckIntervalMs: number
  private lastTipCheck = { key: '', at: 0 }
  private readonly log: RealtimeLogger
  private ctl: AbortController | null = null
  private loop: Promise<void> | null = null
  private lastFinalize = 0
  private strikes = 0
  /** consecutive session restarts without a stored block */
  private idleRestarts = 0
  private restartFrom: number | null = null
  /** the move of finalized blocks to the cold store in progress (finalizeStep) */
  private finalizeRun: Promise<void> | null = null
  readonly stats = {
    blocks: 0,
    forks: 0,
    replaced: 0,
    finalized: 0,
    warnings: 0,
    sessions: 0,
    failures: 0,
    refetches: 0,
    /** times ingestion paused at the hot store's bound */
    hotPauses: 0,
  }
  /** the hot store's bound (RealtimeIngesterOptions.hotMaxBytes), null: none */
  readonly hotMaxBytes: number | null
  private readonly hotPauseCheckMs: number
  /** the near-the-bound warning was logged (again once the hot store went well below it) */
  private hotWarned = false
  /** the last session error (for status reporting) */
  lastError: Error | null = null
  /** set when ingestion stopped for good */
  fatalError: FatalIngestError | null = null

  constructor(opts: RealtimeIngesterOptions) {
    this.source = opts.source
    this.hot = opts.hot
    this.cold = opts.cold
    this.normalize = opts.normalize
    this.startSlot = opts.startSlot
    this.finalizeIntervalMs = opts.finalizeIntervalMs ?? 1000
    this.retryDelayMs = opts.retryDelayMs ?? 200
    this.orphanStrikes = opts.orphanStrikes ?? 20
    this.tipCheckIntervalMs = opts.tipCheckIntervalMs ?? 1000
    this.finalizeMinBlocks = Math.max(1, opts.finalizeMinBlocks ?? 1)
    this.finalizeMaxDelayMs = opts.finalizeMaxDelayMs ?? 10_000
    this.malformedAttempts = Math.max(1, opts.malformedAttempts ?? 5)
    this.malformedBackoffMs = opts.malformedBackoffMs ?? 1000
    this.hotMaxBytes = opts.hotMaxBytes ?? null
    this.hotPauseCheckMs = opts.hotPauseCheckMs ?? 500
    this.onFatal = opts.onFatal
    this.onStored = opts.onStored
    this.log = opts.logger ?? consoleLogger
  }

  get running(): boolean {
    return this.loop !== null
  }

  start(): void {
    if (this.loop) return
    const ctl = new AbortController()
    this.ctl = ctl
    this.loop = this.run(ctl.signal)
  }

  /** stop ingesting; resolves once the loop has left (no write in progress) */
  async stop(): Promise<void> {
    const loop = this.loop
    if (!loop) return
    this.ctl?.abort()
    await loop
    await this.finalizeRun
    this.loop = null
    this.ctl = null
  }

  private async run(signal: AbortSignal): Promise<void> {
    this.failures = 0
    while (!signal.aborted) {
      try {
        await this.session(signal)
        this.failures = 0
      } catch (err) {
        if (signal.aborted) break
        // a block the node will not serve whole to this client: asking again cannot help
        const e = err instanceof UnsupportedTransactionVersionError ? new FatalIngestError(err.message) : err
        if (isStorageError(e)) {
          this.stopForStorage(e as Error)
          break
        }
        if (e instanceof FatalIngestError) {
          this.fatalError = e
          this.lastError = e
          this.log.error(`ingestion stopped: ${e.message}`)
          queueMicrotask(() => this.onFatal?.(e))
          break
        }
        if (e instanceof Restart) {
          this.failures = 0
          this.restartFrom = e.from
          if (e.reason) this.log.info(`${e.reason}; resuming from slot ${e.from}`)
          // restarts that store nothing in between (a node whose answers keep moving) back off
          if (++this.idleRestarts > 3) {
            try {
              await sleep(Math.min(5_000, this.retryDelayMs * 2 ** (this.idleRestarts - 4)), signal)
            } catch {
              break
            }
          }
          continue
        }
        this.failures++
        this.stats.failures++
        this.lastError = e as Error
        const delay = Math.min(10_000, this.retryDelayMs * 2 ** Math.min(this.failures - 1, 16))
        this.log.warn(
          `ingest session failed (${this.failures} in a row): ${(e as Error).message}; retrying in ${delay} ms`,
        )
        try {
          await sleep(delay, signal)
        } catch {
          break
        }
      }
    }
  }

  private async position(signal: AbortSignal): Promise<number> {
    if (this.restartFrom !== null) {
      const r = this.restartFrom
      this.restartFrom = null
      return r
    }
    const tip = this.hot.tip() ?? this.hot.anchor ?? this.cold.lastBlock()
    if (tip) return tip.number + 1
    if (this.startSlot !== undefined) return this.startSlot
    return this.source.finalizedSlot(signal)
  }

  private async session(signal: AbortSignal): Promise<void> {
    this.stats.sessions++
    const from = await this.position(signal)
    for await (const ev of this.source.blocks(from, signal)) {
      if (signal.aborted) return
      if (ev.kind === 'tip') {
        this.failures = 0
        if (Date.now() - this.lastFinalize >= this.finalizeIntervalMs) await this.finalizeStep(signal)
        if (!this.source.reportsDeadSlots) await this.verifyTip(ev.head, signal)
        continue
      }
      if (ev.kind === 'dead') {
        await this.deadSlot(ev.slot)
        continue
      }
      const { block, warnings, answeredAt, marks } = await this.intactBlock(ev, signal)
      for (const w of warnings) {
        this.stats.warnings++
        this.log.warn(
          `slot ${w.slot}${w.transactionIndex !== undefined ? ` tx ${w.transactionIndex}` : ''}${w.signature ? ` ${w.signature}` : ''}: ${w.message}`,
        )
      }
      await this.roomInHot(signal)
      if (signal.aborted) return
      const pushMarks: PushMarks | undefined = this.onStored ? {} : undefined
      const r = await this.hot.push(block, pushMarks)
      if (r.status === 'extended' || r.status === 'replaced') {
        this.failures = 0
        const storedAt = performance.now()
        this.onStored?.({ number: block.header.number, answeredAt, storedAt, marks: { ...marks, ...pushMarks } })
      }
      switch (r.status) {
        case 'extended':
          this.stats.blocks++
          this.strikes = 0
          this.idleRestarts = 0
          break
        case 'replaced':
          this.idleRestarts = 0
          this.stats.blocks++
          this.stats.forks++
          this.stats.replaced += r.removed.length
          this.strikes = 0
          this.log.info(
            `fork at slot ${block.header.parentNumber}: replaced ${r.removed.length} block(s) ${r.removed[0].number}..${r.removed[r.removed.length - 1].number}`,
          )
          break
        case 'duplicate':
        case 'stale':
          break
        case 'unlinked': {
          const ancestor = await this.findAncestor(block.header.parentNumber, block.header.parentHash, signal)
          throw new Restart(ancestor + 1, `block ${block.header.number} does not link to the stored chain (fork)`)
        }
      }
      if (Date.now() - this.lastFinalize >= this.finalizeIntervalMs) await this.finalizeStep(signal)
    }
  }

  /**
   * The normalized block of a delivered slot, only if the node's answer is intact: it passed the
   * shape check and the size cap (else the source delivers `malformed`), normalizing did not throw,
   * and every transaction of the answer is in the result (only vote transactions may be left out).
   * A damaged answer is fetched again with backoff, each attempt logged with the slot; after
   * `malformedAttempts` answers in all, ingestion stops (FatalIngestError): a block is never stored
   * with fewer transactions than the node has, and a damaged header never reaches fork resolution.
   */
  private async intactBlock(
    ev: Exclude<SourceEvent, { kind: 'tip' } | { kind: 'dead' }>,
    signal: AbortSignal,
  ): Promise<{
    block: Block | PackedBlock
    warnings: NormalizationWarning[]
    answeredAt: number
    marks?: DecodeMarks
  }> {
    const slot = ev.slot
    let answer: Exclude<SlotOutcome, { kind: 'skipped' }> = ev
    for (let attempt = 1; ; attempt++) {
      // a source with a decoder delivers blocks normalized and checked intact (block-decode.ts)
      const r = answer.kind === 'block' ? normalizeIntact(slot, answer.block, this.normalize) : answer
      if (r.kind === 'normalized')
        return {
          block: r.block,
          warnings: r.warnings,
          answeredAt: answer.kind === 'malformed' ? 0 : answer.answeredAt,
          marks: answer.kind === 'normalized' ? answer.marks : undefined,
        }
      const problem = r.problem
      if (attempt >= this.malformedAttempts) {
        throw new FatalIngestError(
          `slot ${slot}: the node's getBlock answer is still damaged after ${attempt} attempts (${problem}); the block was not stored`,
        )
      }
      const delay = this.malformedBackoffMs * 2 ** (attempt - 1)
      this.stats.refetches++
      this.log.warn(
        `slot ${slot}: damaged getBlock answer (${problem}); fetching it again in ${delay} ms (attempt ${attempt + 1}/${this.malformedAttempts})`,
      )
      await sleep(delay, signal)
      const o = await this.source.fetchSlot(slot, signal)
      if (o.kind === 'skipped') throw new Restart(slot, `slot ${slot} is no longer a block on the node`)
      answer = o
    }
  }

  /**
   * Walk the node's chain down from ⟨number, hash⟩ (a block the node reports) until a block we
   * store; returns its number. Throws when the walk would cross the finalized block.
   */
  private async findAncestor(number: number, hash: string, signal: AbortSignal): Promise<number> {
    let n = number
    let h = hash
    const floor = this.hot.anchor?.number ?? -1
    const first = this.hot.entries()[0]?.header.number
    for (;;) {
      if (this.hot.contains(n, h)) return n
      if (n <= floor) {
        throw new Error(
          `the node's chain diverges at or below the finalized block ${floor} (slot ${n} ${h}): not applied`,
        )
      }
      if (first === undefined || n < first) {
        // nothing finalized yet and the divergence is below the window: replace the whole window
        if (this.hot.anchor === null) {
          const removed = await this.hot.rollbackTo(n)
          this.log.warn(`fork below the hot window (no finalized block yet): dropped ${removed.length} block(s)`)
          return n
        }
      }
      const hdr = await this.source.fetchHeader(n, this.source.commitment, signal)
      if (!hdr) throw new Error(`fork resolution: slot ${n} is no longer a block on the node`)
      if (hdr.blockhash !== h) throw new Error(`fork resolution: the node changed block ${n} while resolving`)
      n = Number(hdr.parentSlot)
      h = hdr.previousBlockhash
    }
  }

  /**
   * A full or failing disk (a write of the hot or the cold store failed: ENOSPC, EIO): ingestion
   * stops, once, with one error line, and `onFatal` is called (serve exits with status 1). What
   * was stored is intact (each store's writes are all or nothing); started again once there is
   * room, the follower goes on from there.
   */
  private stopForStorage(err: Error): void {
    if (this.fatalError) return
    const e = new FatalIngestError(`the disk is full or failing: ${err.message}`)
    this.fatalError = e
    this.lastError = e
    this.log.error(`ingestion stopped: ${e.message}`)
    this.ctl?.abort()
    queueMicrotask(() => this.onFatal?.(e))
  }

  /**
   * The hot store's bound: a warning as it nears it; at it, wait (finalizing every finalized block
   * at once, not by batches) until finalization has freed space. Returns at once when aborted.
   */
  private async roomInHot(signal: AbortSignal): Promise<void> {
    const max = this.hotMaxBytes
    if (max === null) return
    const mib = (x: number) => `${(x / 1048576).toFixed(0)} MiB`
    const bytes = this.hot.bytes
    if (bytes < HOT_WARN_SHARE * max * 0.9) this.hotWarned = false
    else if (bytes >= HOT_WARN_SHARE * max && !this.hotWarned) {
      this.hotWarned = true
      this.log.warn(
        `hot store holds ${mib(bytes)} of unfinalized blocks, ${Math.round((100 * bytes) / max)}% of its bound ${mib(max)} (--hot-max-mb): finalization is behind`,
      )
    }
    if (bytes < max) return
    this.stats.hotPauses++
    const t0 = Date.now()
    this.log.warn(
      `hot store at its bound (${mib(bytes)} of ${mib(max)}): ingestion paused until finalization frees space`,
    )
    while (this.hot.bytes >= max && !signal.aborted) {
      await this.finalizeStep(signal, true)
      await this.finalizeRun
      if (this.hot.bytes < max) break
      try {
        await sleep(this.hotPauseCheckMs, signal)
      } catch {
        return
      }
    }
    if (!signal.aborted)
      this.log.info(
        `hot store below its bound (${mib(this.hot.bytes)}): ingestion resumed after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      )
  }

  /**
   * move blocks the node reports finalized from the hot store to the cold store (`force`: now,
   * however few are waiting)
   */
  private async finalizeStep(signal: AbortSignal, force = false): Promise<void> {
    this.lastFinalize = Date.now()
    if (this.finalizeRun) return // one move at a time
    const win = this.hot.entries()
    if (win.length === 0) return
    const f = await this.source.finalizedSlot(signal)
    let k = win.length - 1
    while (k >= 0 && win[k].header.number > f) k--
    if (k < 0) return
    if (k + 1 < this.finalizeMinBlocks && !force) {
      this.finalWaitingSince ??= Date.now()
      if (Date.now() - this.finalWaitingSince < this.finalizeMaxDelayMs) return
    }
    this.finalWaitingSince = null
    const e = win[k].header
    if (this.source.commitment !== 'finalized' && this.source.finalizedChainHas?.(e.number, e.hash) !== true) {
      // the finality report is checked against the block we store, not taken on trust
      const hdr = await this.source.fetchHeader(e.number, 'finalized', signal)
      if (!hdr) return // not answered as a finalized block (yet): try again later
      if (hdr.blockhash !== e.hash) {
        const fin = await this.source.fetchHeader(f, 'finalized', signal)
        if (!fin) return // the node's answers are moving; try again later
        const ancestor = await this.findAncestor(f, fin.blockhash, signal)
        throw new Restart(ancestor + 1, `stored block ${e.number} is not on the node's finalized chain (fork)`)
      }
    }
    // the move runs beside the loop: appending to a disk cold store takes seconds with
    // mainnet-sized blocks, and new blocks keep being stored meanwhile (HotStore.finalize)
    const run = this.hot.finalize(e.number, this.cold).then(
      (moved) => {
        this.stats.finalized += moved.length
      },
      (err: Error) => {
        this.lastError = err
        if (signal.aborted) return
        if (isStorageError(err)) this.stopForStorage(err)
        else this.log.warn(`finalizing up to slot ${e.number} failed: ${err.message}; retrying later`)
      },
    )
    this.finalizeRun = run.finally(() => {
      this.finalizeRun = null
    })
  }

  /** the source reports `slot` dead: a block stored there and the blocks above it are dropped */
  private async deadSlot(slot: number): Promise<void> {
    if (!this.hot.entries().some((e) => e.header.number === slot)) return
    const removed = await this.hot.rollbackTo(slot - 1)
    if (removed.length === 0) return
    this.stats.forks++
    this.stats.replaced += removed.length
    throw new Restart(slot, `slot ${slot} is dead: dropped ${removed.length} block(s) from ${slot}`)
  }

  /** at the tip: make sure the stored tip is still on the node's chain */
  private async verifyTip(nodeHead: number, signal: AbortSignal): Promise<void> {
    const tip = this.hot.tip()
    if (!tip || nodeHead > tip.number) {
      this.strikes = 0
      return
    }
    // one header request per tip check interval, unless the situation changed
    const key = `${nodeHead}:${tip.number}:${tip.hash}`
    if (key === this.lastTipCheck.key && Date.now() - this.lastTipCheck.at < this.tipCheckIntervalMs) return
    this.lastTipCheck = { key, at: Date.now() }
    const hdr = await this.source.fetchHeader(nodeHead, this.source.commitment, signal)
    if (!hdr) return
    if (!this.hot.contains(nodeHead, hdr.blockhash)) {
      const ancestor = await this.findAncestor(nodeHead, hdr.blockhash, signal)
      throw new Restart(ancestor + 1, `the node's head ${nodeHead} is not on the stored chain (fork)`)
    }
    if (nodeHead === tip.number) {
      this.strikes = 0
      return
    }
    // the node's head is a stored block below our tip: our blocks above it were dropped by the
    // node, or the node lags; act only when it persists
    if (++this.strikes < this.orphanStrikes) return
    this.strikes = 0
    const removed = await this.hot.rollbackTo(nodeHead)
    if (removed.length) {
      this.stats.forks++
      this.stats.replaced += removed.length
      throw new Restart(
        nodeHead + 1,
        `the node's chain ends at ${nodeHead}: dropped ${removed.length} orphaned block(s)`,
      )
    }
  }
}

// --- wiring ------------------------------------------------------------------------------------

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

export async function createRealtimeDataset(opts: RealtimeDatasetOptions): Promise<RealtimeDataset> {
  // the main thread applies every block and serves the streams: keep V8 from marking it
  // continuously (src/util/gc-tuning.ts)
  tuneIncrementalMarking()
  const ownCold = !opts.cold
  const cold = opts.cold ?? new MemoryColdStore()
  let normalize = opts.normalize
  if (!normalize) {
    const mod = await import('../normalize/normalize.ts')
    const nopts = opts.normalizeOptions
    normalize = (line) => mod.normalizeBlock(line, nopts)
  }
  const hot = await HotStore.open({ path: join(opts.dataDir, 'hot'), coldLast: cold.lastBlock(), noSync: opts.noSync })
  const log = opts.logger ?? consoleLogger
  if (hot.droppedOnOpen.length)
    log.info(`hot store: dropped ${hot.droppedOnOpen.length} block(s) already in the cold store`)
  if (hot.coldBehind) {
    log.warn(
      `the cold store ends at ${hot.coldBehind.coldLast?.number ?? 'nothing'} but blocks up to ${hot.coldBehind.anchor.number} were finalized into it earlier (not durable?): the cold store has a gap`,
    )
  }
  const threads = opts.normalize ? 0 : (opts.normalizeThreads ?? 0)
  const pool = threads > 0 ? new BlockWorkerPool({ threads, normalize: opts.normalizeOptions }) : null
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

/**
 * The `--demo` dataset: a fake Solana node in-process (recorded real blocks re-slotted into a live
 * chain, with forks and lagging finality) followed by a RealtimeIngester into a RealtimeStore.
 */
export interface DemoDatasetOptions {
  /** hot store directory (default: a temp dir, removed on stop) */
  dataDir?: string
  /** fake node settings (defaults: the bundled sample + the mainnet block as templates, ≤ 40
   *  transactions per block, a block every 400 ms, 150 blocks of history, finality lag 32 slots,
   *  a 2-block fork every 50 blocks) */
  node?: import('./fake-node.ts').FakeNodeOptions
  cold?: ColdStore
  logger?: RealtimeLogger
  onFatal?: (err: Error) => void
  /** see RealtimeDatasetOptions */
  normalizeThreads?: number
}

/** the demo's fake node, started, and the hot store's directory (a temp dir unless given) */
export async function startDemoChain(opts: DemoDatasetOptions): Promise<{
  node: import('./fake-node.ts').FakeSolanaNode
  dataDir: string
  /** stop the node and remove the temp dir */
  stop(): Promise<void>
}> {
  const { FakeSolanaNode, demoTemplates } = await import('./fake-node.ts')
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const node = await FakeSolanaNode.start({
    templates: demoTemplates(),
    txPerBlock: 40,
    intervalMs: 400,
    initialBlocks: 150,
    finalityLag: 32,
    forkEvery: 50,
    forkDepth: 2,
    ...opts.node,
  })
  const tmp = opts.dataDir ? null : mkdtempSync(join(tmpdir(), 'solportal-demo-'))
  return {
    node,
    dataDir: opts.dataDir ?? tmp!,
    stop: async () => {
      await node.stop()
      if (tmp) rmSync(tmp, { recursive: true, force: true })
    },
  }
}

export async function createDemoDataset(
  opts: DemoDatasetOptions = {},
): Promise<RealtimeDataset & { node: import('./fake-node.ts').FakeSolanaNode }> {
  const chain = await startDemoChain(opts)
  const node = chain.node
  const ds = await createRealtimeDataset({
    rpcUrl: node.url,
    dataDir: chain.dataDir,
    cold: opts.cold,
    startSlot: node.firstSlot,
    concurrency: 4,
    pollIntervalMs: 100,
    logger: opts.logger,
    onFatal: opts.onFatal,
    normalizeThreads: opts.normalizeThreads,
  })
  return {
    ...ds,
    node,
    stop: async () => {
      await ds.stop()
      await chain.stop()
    },
  }
}
