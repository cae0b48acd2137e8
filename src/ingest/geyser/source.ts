/**
 * `GeyserSource`: the blocks of a Geyser stream, in chain order, with every gap filled from the
 * node over JSON-RPC — a `BlockSource` of the same `RealtimeIngester` that follows a node over
 * RPC alone (src/ingest/realtime/), which stores, resolves forks and finalizes as it does there.
 *
 * Block updates are taken in arrival order. Before a streamed block is delivered, its ancestors
 * are: walking its parent links down to a block the stores hold, each parent at or above the next
 * slot to deliver comes from the recent streamed blocks when one has that slot and hash, and
 * otherwise every produced slot from the next slot to deliver up to the parent is fetched from the
 * node (`getBlocks` + `getBlock`, once the node's head has reached it). After every (re)connect,
 * every slot between the next slot to deliver and the first streamed block is fetched from the
 * node, whether or not the server's replay (`from_slot`) sent it. A streamed block with fewer
 * transactions than its `executed_transaction_count`, or one that cannot be read, is fetched from
 * the node instead. When the node cannot give a needed slot either (its head does not reach it
 * within `gapTimeoutMs`, or it answers with an error), the session fails at the gap and is retried
 * by the ingester with backoff: `gap` says which slots are missing (metrics), nothing above them is
 * delivered, and no slot is ever left out silently.
 *
 * Slot statuses of the same stream drive finality (`finalizedSlot`: the highest slot the stream
 * reported finalized) and dead slots (`dead` events: the ingester drops a stored block there and
 * the blocks above it). Blocks that arrive on another fork replace the stored ones through the
 * hot store (REPLACE, or fork resolution against the node when their parent is unknown).
 */
import type { RpcBlock } from '../../rpc/types.ts'
import { NodeHeadTracker } from '../lag.ts'
import { sleep, type Commitment } from '../rpc/errors.ts'
import { type RpcSource, type SlotOutcome, type SourceEvent } from '../rpc/source.ts'
import { type BlockSource } from '../realtime/types.ts'
import { GeyserFeed, type GeyserFeedOptions } from './client.ts'
import type { DecodedBlock } from '../block-decode.ts'
import { isPackedBlock, storedSize } from '../../store/packed-block.ts'
import type { BlockFrame, SubscribeUpdate } from './messages.ts'

/** a streamed block as kept by the source */
interface StreamBlock {
  slot: number
  hash: string
  parentSlot: number
  parentHash: string
  /** its update, read for the header only (its message goes to `decode` when first delivered) */
  frame: BlockFrame
  /** the block decoded (kept: the message's memory may have gone to another thread with it) */
  decoded: Promise<StreamedBlock> | null
  bytes: number
  /** when its message was read (`performance.now()`) */
  receivedAt: number
}

/**
 * a streamed block decoded: normalized and checked intact (`DecodedBlock`: by a block decoding
 * thread, src/ingest/geyser/block-decode.ts), or as the node's `getBlock` answer for the
 * ingester's normalizer (`block`)
 */
export type StreamedBlock = { kind: 'block'; block: RpcBlock } | DecodedBlock

const NO_BYTES = new Uint8Array(0)

type Arrival = { kind: 'block'; b: StreamBlock; afterConnect: boolean } | { kind: 'dead'; slot: number }

export interface GeyserSourceOptions extends Omit<
  GeyserFeedOptions,
  'onUpdate' | 'onConnect' | 'onDisconnect' | 'fromSlot'
> {
  /** the node: gaps, damaged or incomplete streamed blocks, fork resolution */
  rpc: RpcSource
  /**
   * a streamed block's SubscribeUpdateBlock message decoded (dataset.ts: by the block decoding
   * threads when there are some); rejects when the message cannot be read. Called once per block,
   * when it is first delivered or decoded ahead (`decodeAhead`); `frame.message` is not read after
   * the call.
   */
  decode: (frame: BlockFrame) => Promise<StreamedBlock>
  /** whether the stores hold this block (or its slot is finalized): such blocks are not delivered */
  stored: (slot: number, hash: string) => boolean
  /**
   * streamed blocks decoded ahead of their delivery, the oldest waiting first (default 0: each
   * when delivered); with decoding threads, blocks that arrive close together decode at once
   */
  decodeAhead?: number
  /** streamed blocks waiting to be delivered before the stream is paused (default 32) */
  maxQueued?: number
  /** streamed blocks kept after delivery for re-delivery after a fork or restart (default 64) */
  recentBlocks?: number
  /** ... and at most this many bytes of them (default 256 MiB) */
  recentBytes?: number
  /** how long the node's head may stay below a slot the stream needs filled, ms (default 30 000) */
  gapTimeoutMs?: number
  /** getBlock requests in flight while filling a gap (default 4) */
  concurrency?: number
  /** with nothing streamed, a `tip` event this often (finalization goes on), ms (default 1 000) */
  idleTipMs?: number
  /** logs (reconnects, gaps) */
  log?: (msg: string) => void
  /** a block delivered from the stream: its slot and when its message was read */
  onStreamBlock?: (slot: number, receivedAt: number) => void
}

/** Slots the stream needs and the node cannot give (yet). */
export class GapError extends Error {
  constructor(
    readonly from: number,
    readonly to: number,
    message: string,
  ) {
    super(message)
    this.name = 'GapError'
  }
}

export class GeyserSource implements BlockSource {
  readonly commitment: Commitment
  readonly nodeHead = new NodeHeadTracker()
  readonly reportsDeadSlots = true
  readonly rpc: RpcSource
  readonly feed: GeyserFeed
  private readonly opts: GeyserSourceOptions
  private readonly queue: Arrival[] = []
  private readonly recent = new Map<number, StreamBlock>()
  private recentSize = 0
  private readonly deadSlots = new Set<number>()
  private latest: StreamBlock | null = null
  /** the streamed blocks' links, by slot (the last streamed there): finality checks */
  private readonly links = new Map<number, { hash: string; parentSlot: number; parentHash: string }>()
  private afterConnect = false
  private wake: (() => void) | null = null
  private finalized = -1
  /** the slot after the last one delivered (the next `from_slot`) */
  private next = -1
  private started = false
  /** slots the stream needs and the node could not give, while that lasts */
  gap: { from: number; to: number; since: number } | null = null
  readonly stats = {
    /** blocks delivered from the stream */
    streamed: 0,
    /** blocks delivered from the node */
    filled: 0,
    /** streamed blocks with fewer transactions than executed (fetched from the node) */
    incomplete: 0,
    /** streamed blocks that could not be read (fetched from the node) */
    unreadable: 0,
    /** streamed blocks already stored (replays) */
    replayed: 0,
    dead: 0,
    gaps: 0,
  }

  constructor(opts: GeyserSourceOptions) {
    this.opts = opts
    this.rpc = opts.rpc
    this.commitment = opts.commitment ?? 'confirmed'
    this.feed = new GeyserFeed({
      ...opts,
      commitment: this.commitment,
      fromSlot: () => (this.next >= 0 ? this.next : undefined),
      blockFrames: true,
      onUpdate: (u) => this.onUpdate(u),
      onConnect: (n) => {
        this.afterConnect = true
        if (n > 1) opts.log?.(`geyser: reconnected (${n - 1} reconnect(s)), replay from slot ${this.next}`)
      },
      onDisconnect: (err) => opts.log?.(`geyser: subscription ended: ${err.message}; reconnecting`),
    })
  }

  private onUpdate(u: SubscribeUpdate): void {
    const up = u.update
    if (!up) return
    if (up.kind === 'slot') {
      const s = up.slot
      if (s.status === 'finalized') this.finalized = Math.max(this.finalized, s.slot)
      if (s.status === this.commitment) this.nodeHead.observe(s.slot)
      if (s.status === 'dead') {
        this.deadSlots.add(s.slot)
        if (this.deadSlots.size > 4096) this.deadSlots.delete(this.deadSlots.values().next().value!)
        this.push({ kind: 'dead', slot: s.slot })
      }
      return
    }
    if (up.kind !== 'block-frame') return
    const m = up.frame
    if (m.blockhash === '' || m.parentBlockhash === '') {
      // not a block that can be placed in the chain: the node fills the slots it leaves out
      this.stats.unreadable++
      this.opts.log?.(`geyser: block update for slot ${m.slot} without its hashes: ignored`)
      return
    }
    const b: StreamBlock = {
      slot: m.slot,
      hash: m.blockhash,
      parentSlot: m.parentSlot,
      parentHash: m.parentBlockhash,
      frame: m,
      decoded: null,
      bytes: m.message.byteLength,
      receivedAt: performance.now(),
    }
    this.nodeHead.observe(m.slot)
    this.links.delete(m.slot)
    this.links.set(m.slot, { hash: m.blockhash, parentSlot: m.parentSlot, parentHash: m.parentBlockhash })
    if (this.links.size > 20_000) this.links.delete(this.links.keys().next().value!)
    this.remember(b)
    this.push({ kind: 'block', b, afterConnect: this.afterConnect })
    this.afterConnect = false
  }

  private push(a: Arrival): void {
    this.queue.push(a)
    if (this.queue.length >= (this.opts.maxQueued ?? 32)) this.feed.pause()
    this.decodeAhead()
    const w = this.wake
    this.wake = null
    w?.()
  }

  /**
   * a streamed block's decoding, started once: its message is the decoder's then (its memory may
   * have gone to another thread), and the block is kept decoded, its size counted as such
   */
  private decoded(b: StreamBlock): Promise<StreamedBlock> {
    if (!b.decoded) {
      b.decoded = this.opts.decode(b.frame)
      b.frame.message = NO_BYTES
      b.frame.rewards = null
      b.decoded.then(
        (r) => {
          if (r.kind !== 'normalized' || !isPackedBlock(r.block)) return
          const size = storedSize(r.block)
          if (this.recent.get(b.slot) === b) this.recentSize += size - b.bytes
          b.bytes = size
        },
        () => {},
      )
    }
    return b.decoded
  }

  /**
   * the first `decodeAhead` waiting blocks decoding (those to be delivered from the stream: not
   * dead, stored or short of transactions)
   */
  private decodeAhead(): void {
    let n = this.opts.decodeAhead ?? 0
    for (let i = 0; i < this.queue.length && n > 0; i++) {
      const a = this.queue[i]
      if (a.kind !== 'block') continue
      const b = a.b
      n--
      if (b.decoded || this.deadSlots.has(b.slot) || this.opts.stored(b.slot, b.hash)) continue
      if (b.frame.transactionCount < b.frame.executedTransactionCount) continue
      void this.decoded(b)
    }
  }

  private remember(b: StreamBlock): void {
    const old = this.recent.get(b.slot)
    if (old) this.recentSize -= old.bytes
    this.recent.set(b.slot, b)
    this.recentSize += b.bytes
    this.latest = b
    const maxN = this.opts.recentBlocks ?? 64
    const maxBytes = this.opts.recentBytes ?? 256 * 1024 * 1024
    while (this.recent.size > maxN || (this.recentSize > maxBytes && this.recent.size > 1)) {
      let low = Infinity
      for (const s of this.recent.keys()) low = Math.min(low, s)
      this.recentSize -= this.recent.get(low)!.bytes
      this.recent.delete(low)
    }
  }

  private take(): Arrival | undefined {
    const a = this.queue.shift()
    if (this.queue.length <= (this.opts.maxQueued ?? 32) >> 1) this.feed.resume()
    this.decodeAhead()
    return a
  }

  fetchSlot(slot: number, signal?: AbortSignal): Promise<SlotOutcome> {
    return this.rpc.fetchSlot(slot, signal)
  }

  fetchHeader(slot: number, commitment: Commitment, signal?: AbortSignal): Promise<RpcBlock | null> {
    return this.rpc.fetchHeader(slot, commitment, signal)
  }

  /** the highest slot the stream reported finalized (the node's until it has reported one) */
  async finalizedSlot(signal?: AbortSignal): Promise<number> {
    if (this.finalized >= 0) return this.finalized
    return this.rpc.finalizedSlot(signal)
  }

  /**
   * whether ⟨number, hash⟩ is an ancestor of (or is) the block streamed at the finalized slot,
   * following the streamed blocks' parent links down; null when a link is missing
   */
  finalizedChainHas(number: number, hash: string): boolean | null {
    if (this.finalized < number) return null
    let slot = this.finalized
    let cur = this.links.get(slot)
    if (!cur) return null
    while (slot > number) {
      const p = this.links.get(cur.parentSlot)
      if (!p || p.hash !== cur.parentHash) return cur.parentSlot < number ? false : null
      slot = cur.parentSlot
      cur = p
    }
    return slot === number && cur.hash === hash
  }

  close(): void {
    this.feed.close()
  }

  /** wait for an arrival, at most `ms` */
  private waitArrival(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.queue.length > 0) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t)
        signal?.removeEventListener('abort', done)
        if (this.wake === done) this.wake = null
        resolve()
      }
      const t = setTimeout(done, ms)
      signal?.addEventListener('abort', done, { once: true })
      this.wake = done
    })
  }

  async *blocks(from: number, signal?: AbortSignal): AsyncGenerator<SourceEvent> {
    this.next = from
    if (!this.started) {
      this.started = true
      this.feed.start()
    }
    // after a restart (a fork, a dead slot), the newest streamed block brings back the chain
    // below it from the recent blocks
    const replay = this.latest && this.latest.slot >= from ? this.latest : null
    let pending: Arrival | undefined = replay ? { kind: 'block', b: replay, afterConnect: false } : undefined
    for (;;) {
      if (signal?.aborted) return
      const a = pending ?? this.take()
      pending = undefined
      if (!a) {
        const head = this.next - 1
        yield { kind: 'tip', head: Math.max(head, this.nodeHead.slot ?? head) }
        await this.waitArrival(this.opts.idleTipMs ?? 1000, signal)
        continue
      }
      if (a.kind === 'dead') {
        this.recent.delete(a.slot)
        this.stats.dead++
        yield { kind: 'dead', slot: a.slot }
        continue
      }
      yield* this.deliver(a.b, a.afterConnect, signal)
    }
  }

  /** a streamed block, after the blocks it needs below it */
  private async *deliver(b: StreamBlock, afterConnect: boolean, signal?: AbortSignal): AsyncGenerator<SourceEvent> {
    const stored = this.opts.stored
    if (this.deadSlots.has(b.slot)) return
    if (stored(b.slot, b.hash)) {
      this.stats.replayed++
      return
    }
    if (afterConnect && b.slot > this.next) {
      // a (re)connect: the slots below the first streamed block come from the node, whatever the
      // server replayed
      yield* this.fill(this.next, b.slot - 1, signal)
    }
    const chain: StreamBlock[] = [b]
    let p = b.parentSlot
    let ph = b.parentHash
    while (p >= this.next && !stored(p, ph)) {
      const r = this.recent.get(p)
      if (r && r.hash === ph && !this.deadSlots.has(p)) {
        chain.push(r)
        p = r.parentSlot
        ph = r.parentHash
        continue
      }
      yield* this.fill(this.next, p, signal)
      break
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const c = chain[i]
      if (i < chain.length - 1 || c === b || !stored(c.slot, c.hash)) yield* this.streamed(c, signal)
    }
  }

  /** one streamed block as a `block` (or `normalized`) event, or the node's answer when the message falls short */
  private async *streamed(b: StreamBlock, signal?: AbortSignal): AsyncGenerator<SourceEvent> {
    const m = b.frame
    let block: StreamedBlock | null = null
    let why = ''
    if (m.transactionCount < m.executedTransactionCount) {
      this.stats.incomplete++
      why = `${m.transactionCount} of ${m.executedTransactionCount} transactions`
    } else {
      try {
        block = await this.decoded(b)
      } catch (e) {
        if (signal?.aborted) return
        this.stats.unreadable++
        why = `unreadable: ${(e as Error).message}`
      }
    }
    this.next = b.slot + 1
    if (block) {
      this.stats.streamed++
      this.opts.onStreamBlock?.(b.slot, b.receivedAt)
      if (block.kind === 'normalized') yield { ...block, slot: b.slot, answeredAt: b.receivedAt }
      else if (block.kind === 'block')
        yield { kind: 'block', slot: b.slot, block: block.block, answeredAt: b.receivedAt }
      else yield { kind: 'malformed', slot: b.slot, problem: block.problem }
      return
    }
    this.opts.log?.(`geyser: streamed block ${b.slot} ${why}: fetched from the node`)
    const o = await this.rpc.fetchSlot(b.slot, signal)
    this.stats.filled++
    if (o.kind === 'skipped') return
    if (o.kind === 'malformed') yield { kind: 'malformed', slot: b.slot, problem: o.problem }
    else yield { ...o, slot: b.slot }
  }

  /**
   * every produced slot in [lo, hi] from the node, in order, once its head has reached `hi`
   * (`getBlocks` + `getBlock`, `concurrency` in flight); `next` moves past `hi`
   */
  private async *fill(lo: number, hi: number, signal?: AbortSignal): AsyncGenerator<SourceEvent> {
    if (hi < lo) return
    const started = Date.now()
    const timeout = this.opts.gapTimeoutMs ?? 30_000
    for (let attempt = 0; ; attempt++) {
      const head = await this.rpc.client.getSlot(
        this.commitment === 'processed' ? 'confirmed' : this.commitment,
        signal,
      )
      if (head >= hi) break
      if (Date.now() - started >= timeout) {
        this.gapOpen(lo, hi)
        throw new GapError(
          lo,
          hi,
          `slots ${lo}..${hi} are not in the stream and the node's head is ${head} after ${Math.round((Date.now() - started) / 1000)} s: stopped at the gap`,
        )
      }
      await sleep(Math.min(1000, 50 * 2 ** Math.min(attempt, 5)), signal)
    }
    const commitment = this.commitment === 'processed' ? 'confirmed' : this.commitment
    const concurrency = Math.max(1, this.opts.concurrency ?? 4)
    try {
      for (let start = lo; start <= hi; start += 1000) {
        const end = Math.min(hi, start + 999)
        const listed = (await this.rpc.client.getBlocks(start, end, commitment, signal)).filter(
          (s) => s >= start && s <= end,
        )
        const inFlight: { slot: number; p: Promise<SlotOutcome> }[] = []
        let i = 0
        while (i < listed.length || inFlight.length > 0) {
          while (inFlight.length < concurrency && i < listed.length) {
            const slot = listed[i++]
            const p = this.rpc.fetchSlot(slot, signal)
            p.catch(() => {})
            inFlight.push({ slot, p })
          }
          const { slot, p } = inFlight.shift()!
          const o = await p
          this.stats.filled++
          this.next = slot + 1
          if (o.kind === 'skipped') continue
          if (o.kind === 'malformed') yield { kind: 'malformed', slot, problem: o.problem }
          else yield { ...o, slot }
        }
      }
    } catch (e) {
      if (!signal?.aborted) this.gapOpen(lo, hi)
      throw e
    }
    this.next = Math.max(this.next, hi + 1)
    if (this.gap) {
      this.opts.log?.(`geyser: gap ${this.gap.from}..${this.gap.to} filled from the node`)
      this.gap = null
    }
  }

  private gapOpen(from: number, to: number): void {
    if (!this.gap || this.gap.from !== from) {
      this.stats.gaps++
      this.gap = { from, to, since: Date.now() }
    } else this.gap.to = Math.max(this.gap.to, to)
  }
}
