/**
 * `RpcSource`: the node as a stream of produced blocks in slot order (see src/ingest/rpc/ for
 * how it lists, fetches and classifies the node's answers).
 */
import { parseJsonExact } from '../../rpc/json.ts'
import { NodeHeadTracker } from '../lag.ts'
import type { Block, NormalizationWarning } from '../../model.ts'
import type { RpcBlock } from '../../rpc/types.ts'
import type { PackedBlock } from '../../store/packed-block.ts'
import type { DecodedBlock, DecodedEnvelope, DecodeMarks } from '../block-decode.ts'
import { fullBlockParams, RpcClient, type BodyDecoder, type RpcClientOptions } from './client.ts'
import {
  ResponseTooLargeError,
  RPC_BLOCK_NOT_AVAILABLE,
  RPC_BLOCK_STATUS_NOT_AVAILABLE_YET,
  RPC_LONG_TERM_STORAGE_SLOT_SKIPPED,
  RPC_SLOT_SKIPPED,
  RPC_UNSUPPORTED_TRANSACTION_VERSION,
  RpcError,
  sleep,
  UnsupportedTransactionVersionError,
  type Commitment,
} from './errors.ts'
import { checkBlockShape } from './shape.ts'

/** decodes `getBlock` answers (block-workers.ts: in worker threads) */
export interface BlockDecoder {
  /**
   * the envelope of a `getBlock` answer's bytes; settles only once nothing reads `bytes` any more
   * and keeps none of them (they are then used again for another answer: `RpcClient.releaseBody`)
   */
  decode(bytes: Buffer, slot: number, signal?: AbortSignal): Promise<DecodedEnvelope>
}

/** A fetched block: the archive line shape of docs/query.md §1. */
export interface RpcBlockLine {
  slot: number
  block: RpcBlock
}

export type SourceEvent =
  | { kind: 'block'; slot: number; block: RpcBlock; answeredAt: number }
  /** with a `decoder`: the block normalized and found intact */
  | {
      kind: 'normalized'
      slot: number
      block: Block | PackedBlock
      warnings: NormalizationWarning[]
      answeredAt: number
      marks?: DecodeMarks
    }
  /** the node's answer for a listed slot failed the shape check or the size cap: refetch it */
  | { kind: 'malformed'; slot: number; problem: string }
  /** the source has delivered everything up to the node's head at its commitment */
  | { kind: 'tip'; head: number }
  /** the slot is dead (Geyser): a block stored there is on no chain */
  | { kind: 'dead'; slot: number }

export interface RpcSourceOptions {
  /** a client, or the options to build one */
  client: RpcClient | RpcClientOptions
  /** commitment of the followed chain (default `confirmed`) */
  commitment?: Commitment
  /** getBlock requests in flight (default 4); blocks are still delivered in slot order */
  concurrency?: number
  /**
   * where full getBlock answers are parsed, shape-checked and normalized (block-workers.ts);
   * then blocks are delivered as `normalized` events. Default: parsed here, delivered as `block`.
   */
  decoder?: BlockDecoder
  /** slots listed per getBlocks call (default 1 000; the node allows up to 500 000) */
  maxRange?: number
  /** pause between polls of the node's head once caught up, ms (default 250) */
  pollIntervalMs?: number
  /**
   * how many times a listed slot answered "not available yet" (-32004, -32014, null) is retried
   * before the session fails (default 30); backoff as the client's
   */
  notAvailableRetries?: number
  /** retries of "not available yet" answers are reported here (with the slot) */
  log?: (msg: string) => void
}

/** `answeredAt`: when the answer's last byte was read (`performance.now()`) */
export type SlotOutcome =
  | { kind: 'block'; block: RpcBlock; answeredAt: number }
  | {
      kind: 'normalized'
      block: Block | PackedBlock
      warnings: NormalizationWarning[]
      answeredAt: number
      marks?: DecodeMarks
    }
  | { kind: 'skipped' }
  | { kind: 'malformed'; problem: string }

/** where `RpcSource.blocks` is: the next slot to list, the slots listed and not fetched, the node's head */
interface FollowState {
  next: number
  listed: number[]
  head: number
  /** everything up to the node's head was delivered when it was last read */
  atTip: boolean
}

export class RpcSource {
  readonly client: RpcClient
  readonly commitment: Commitment
  private readonly concurrency: number
  private readonly maxRange: number
  private readonly pollIntervalMs: number
  private readonly notAvailableRetries: number
  private readonly log: (msg: string) => void
  private readonly decoder?: BlockDecoder
  /** `probed`: blocks fetched at the tip without listing them first (see `blocks`) */
  readonly stats = { blocks: 0, skipped: 0, notAvailable: 0, malformed: 0, probed: 0 }
  /** the node's head slots as this source reads them (ingest lag) */
  readonly nodeHead = new NodeHeadTracker()

  constructor(opts: RpcSourceOptions) {
    this.client = opts.client instanceof RpcClient ? opts.client : new RpcClient(opts.client)
    this.commitment = opts.commitment ?? 'confirmed'
    this.concurrency = Math.max(1, opts.concurrency ?? 4)
    this.maxRange = Math.max(1, opts.maxRange ?? 1000)
    this.pollIntervalMs = opts.pollIntervalMs ?? 250
    this.notAvailableRetries = opts.notAvailableRetries ?? 30
    this.log = opts.log ?? (() => {})
    this.decoder = opts.decoder
  }

  /** fetch one listed slot, classifying the node's answer (shape-checked) */
  async fetchSlot(slot: number, signal?: AbortSignal, commitment = this.commitment): Promise<SlotOutcome> {
    for (let attempt = 0; ; attempt++) {
      const r = await this.fetchOnce(slot, signal, commitment)
      if (r !== null) return r
      this.stats.notAvailable++
      if (attempt >= this.notAvailableRetries) {
        throw new Error(`getBlock(${slot}): block still not available after ${attempt + 1} attempts`)
      }
      const delay = this.client.backoff(Math.min(attempt, 6))
      this.log(
        `getBlock slot ${slot}: not available yet; retry ${attempt + 1}/${this.notAvailableRetries} in ${Math.round(delay)} ms`,
      )
      await sleep(delay, signal)
    }
  }

  /** one `getBlock` of a slot, classified; null when the node has no block there yet (-32004, -32014, null) */
  private async fetchOnce(
    slot: number,
    signal?: AbortSignal,
    commitment = this.commitment,
  ): Promise<SlotOutcome | null> {
    let block: RpcBlock | DecodedBlock | null
    let answeredAt = 0
    const decoder = this.decoder
    const decode: BodyDecoder = (bytes, sig) => {
      answeredAt = performance.now()
      if (!decoder) return Promise.resolve(parseJsonExact(bytes.toString('utf8')))
      // the decoder settles once no thread reads the bytes (block-workers.ts) and its result holds
      // none of them: the answer's memory serves the next answers
      const settled = () => this.client.releaseBody(bytes)
      return decoder.decode(bytes, slot, sig).finally(settled)
    }
    try {
      block = await this.client.call<RpcBlock | DecodedBlock | null>(
        'getBlock',
        fullBlockParams(slot, commitment),
        signal,
        decode,
      )
    } catch (e) {
      if (e instanceof ResponseTooLargeError) {
        this.stats.malformed++
        return { kind: 'malformed', problem: e.message }
      }
      if (e instanceof RpcError) {
        if (e.code === RPC_SLOT_SKIPPED || e.code === RPC_LONG_TERM_STORAGE_SLOT_SKIPPED) {
          this.stats.skipped++
          return { kind: 'skipped' }
        }
        if (e.code === RPC_UNSUPPORTED_TRANSACTION_VERSION) throw UnsupportedTransactionVersionError.of(slot, e)
        if (e.code !== RPC_BLOCK_NOT_AVAILABLE && e.code !== RPC_BLOCK_STATUS_NOT_AVAILABLE_YET) throw e
        return null
      }
      throw e
    }
    if (block && decoder) {
      const d = block as DecodedBlock
      if (d.kind === 'normalized') return { ...d, answeredAt }
      this.stats.malformed++
      return d
    }
    if (block) {
      const problem = checkBlockShape(block)
      if (problem === null) return { kind: 'block', block: block as RpcBlock, answeredAt }
      this.stats.malformed++
      return { kind: 'malformed', problem }
    }
    return null
  }

  /** the node's finalized slot */
  finalizedSlot(signal?: AbortSignal): Promise<number> {
    return this.client.getSlot('finalized', signal)
  }

  /** the node's header (no transactions) of a slot, or null when it is not a block there */
  async fetchHeader(slot: number, commitment: Commitment, signal?: AbortSignal): Promise<RpcBlock | null> {
    try {
      return await this.client.getBlockHeader(slot, commitment, signal)
    } catch (e) {
      if (
        e instanceof RpcError &&
        [
          RPC_SLOT_SKIPPED,
          RPC_LONG_TERM_STORAGE_SLOT_SKIPPED,
          RPC_BLOCK_NOT_AVAILABLE,
          RPC_BLOCK_STATUS_NOT_AVAILABLE_YET,
        ].includes(e.code)
      ) {
        return null
      }
      throw e
    }
  }

  /**
   * With nothing listed and nothing in flight: the next slots to fetch (`st.listed`, then 'fetch'),
   * or an event to deliver first. Caught up (`st.atTip`), the next slot's block is asked for at
   * once (the node's head and the list of produced slots would cost two round trips before it);
   * when the node has no block there (yet, or the slot was skipped), its head and the list tell:
   * 'again' (a block delivered at the tip: the head is read again before the next one, and blocks
   * that came meanwhile are listed and fetched concurrently, as when catching up), 'wait' (at the
   * node's head: poll again later), 'none' (nothing produced in the range listed).
   */
  private async nextListing(
    st: FollowState,
    sig: AbortSignal,
  ): Promise<{ event?: SourceEvent; then: 'fetch' | 'again' | 'wait' | 'none' }> {
    if (st.atTip) {
      const r = await this.fetchOnce(st.next, sig)
      if (r !== null && r.kind !== 'skipped') {
        const slot = st.next++
        st.atTip = false
        st.head = Math.max(st.head, slot)
        this.nodeHead.observe(st.head)
        this.stats.probed++
        if (r.kind === 'malformed') return { event: { kind: 'malformed', slot, problem: r.problem }, then: 'again' }
        this.stats.blocks++
        return { event: { ...r, slot }, then: 'again' }
      }
    }
    st.head = await this.client.getSlot(this.commitment, sig)
    this.nodeHead.observe(st.head)
    st.atTip = st.head < st.next
    if (st.head < st.next) return { event: { kind: 'tip', head: st.head }, then: 'wait' }
    const next = st.next
    const end = Math.min(st.head, next + this.maxRange - 1)
    st.listed = (await this.client.getBlocks(next, end, this.commitment, sig)).filter((s) => s >= next && s <= end)
    st.next = end + 1
    return { then: st.listed.length === 0 ? 'none' : 'fetch' }
  }

  /**
   * Produced blocks from slot `from` on, in slot order, each exactly once per call; a `tip` event
   * whenever everything up to the node's current head has been delivered. Never ends by itself:
   * stop it with `signal` or by leaving the `for await` loop. Errors end the iteration (the caller
   * restarts from its own committed position).
   */
  async *blocks(from: number, signal?: AbortSignal): AsyncGenerator<SourceEvent> {
    const ctl = new AbortController()
    const onAbort = () => ctl.abort(signal!.reason)
    if (signal) {
      if (signal.aborted) return
      signal.addEventListener('abort', onAbort, { once: true })
    }
    const sig = ctl.signal
    // in-flight fetches, in slot order
    const queue: { slot: number; p: Promise<SlotOutcome> }[] = []
    const st: FollowState = { next: from, listed: [], head: -1, atTip: false }
    try {
      for (;;) {
        if (sig.aborted) return
        // refill the pipeline
        while (queue.length < this.concurrency) {
          if (st.listed.length === 0) {
            if (queue.length > 0) break
            const step = await this.nextListing(st, sig)
            if (step.event) yield step.event
            if (step.then === 'wait') await sleep(this.pollIntervalMs, sig)
            if (step.then === 'wait' || step.then === 'again') continue
            if (step.then === 'none') break
          }
          const slot = st.listed.shift()!
          const p = this.fetchSlot(slot, sig)
          p.catch(() => {}) // handled when awaited
          queue.push({ slot, p })
        }
        if (queue.length === 0) {
          // everything listed up to `head` is delivered
          if (st.next > st.head) {
            yield { kind: 'tip', head: st.head }
            await sleep(this.pollIntervalMs, sig)
          }
          continue
        }
        const { slot, p } = queue.shift()!
        const r = await p
        if (r.kind === 'block' || r.kind === 'normalized') {
          this.stats.blocks++
          yield { ...r, slot }
        } else if (r.kind === 'malformed') {
          yield { kind: 'malformed', slot, problem: r.problem }
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort)
      ctl.abort(new Error('source closed'))
    }
  }
}
