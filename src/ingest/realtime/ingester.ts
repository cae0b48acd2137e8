/**
 * `RealtimeIngester`: a block source (src/ingest/rpc/ `RpcSource`, or a Geyser stream) followed
 * into the hot store (EXTEND/REPLACE, fork resolution against the node), with finalization (hot →
 * cold, in order); see src/ingest/realtime/ for the decisions it makes.
 */
import { isStorageError } from '../../store/write-all.ts'
import type { Block, NormalizationWarning } from '../../model.ts'
import { normalizeIntact, type DecodeMarks, type NormalizeFn } from '../block-decode.ts'
import { sleep, UnsupportedTransactionVersionError } from '../rpc/errors.ts'
import { type SlotOutcome, type SourceEvent } from '../rpc/source.ts'
import type { HotStore, PushMarks } from '../../store/hot.ts'
import type { PackedBlock } from '../../store/packed-block.ts'
import type { ColdStore } from '../../store/types.ts'
import {
  consoleLogger,
  FatalIngestError,
  HOT_WARN_SHARE,
  type BlockSource,
  type RealtimeIngesterOptions,
  type RealtimeLogger,
  type StoredBlock,
} from './types.ts'

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
  /** RealtimeIngesterOptions.finalizeBacklogMaxBytes, null: none */
  private readonly finalizeBacklogMaxBytes: number | null
  /** the node's finalized slot as last asked (finalizeStep) */
  private nodeFinalized = -1
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
    this.finalizeBacklogMaxBytes = opts.finalizeBacklogMaxBytes ?? null
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
      await this.finalizedBacklog(signal)
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
    if (await this.finalizeUntil(() => this.hot.bytes < max, signal))
      this.log.info(
        `hot store below its bound (${mib(this.hot.bytes)}): ingestion resumed after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      )
  }

  /**
   * The finalized backlog's bound (finalizeBacklogMaxBytes): while the blocks the node reports
   * finalized that wait in the hot store pass it, no new block is stored and finalization runs
   * without waiting for its batch, so that a follower far behind the node moves its catch-up to the
   * cold store as it goes instead of holding all of it in the hot store. Returns at once when aborted.
   */
  private async finalizedBacklog(signal: AbortSignal): Promise<void> {
    const max = this.finalizeBacklogMaxBytes
    const waiting = () => this.hot.bytesUpTo(this.nodeFinalized)
    if (max === null || waiting() < max) return
    const mib = (x: number) => `${(x / 1048576).toFixed(0)} MiB`
    const t0 = Date.now()
    this.log.info(
      `${mib(waiting())} of finalized blocks wait for the cold store: ingestion paused until they are moved`,
    )
    if (await this.finalizeUntil(() => waiting() < max, signal))
      this.log.info(
        `finalized blocks moved (${mib(waiting())} wait): ingestion resumed after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      )
  }

  /**
   * A pause of ingestion (the hot store's bound, the finalized backlog's): finalization runs at once,
   * step after step, until `done` holds; after a step that moved nothing it waits
   * `hotPauseCheckMs` for the node to finalize more (or the cold store to recover). Whether it
   * ended with `done` (false: aborted).
   */
  private async finalizeUntil(done: () => boolean, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted && !done()) {
      const moved = this.stats.finalized
      await this.finalizeStep(signal, true)
      await this.finalizeRun
      if (done() || this.stats.finalized > moved) continue
      try {
        await sleep(this.hotPauseCheckMs, signal)
      } catch {
        return false
      }
    }
    return !signal.aborted
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
    this.nodeFinalized = f
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
