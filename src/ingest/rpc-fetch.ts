/**
 * Fetching a range of slots from a node, in slot order, as the text of each `getBlock` result:
 * what `solportal dump` writes and `solportal import --rpc` feeds its workers (their exact-integer
 * text path reads it; no number goes through `JSON.parse` here).
 *
 * Produced slots are listed with `getBlocks` (at `finalized` by default) and fetched with a
 * bounded number of `getBlock` calls in flight, declaring `maxSupportedTransactionVersion: 1`.
 * The node's answers for a listed slot (docs/operations.md lists them):
 *   -32007 / -32009  skipped slot                 → a `skipped` item (`onSkipped`), never asked again
 *   -32004 / -32014  not available (yet)          → retried with backoff, then an error naming the slot
 *   null result                                   → as -32004
 *   -32001           below the node's first block → `BelowFirstAvailableError` with the slot range
 *   -32015           newer transaction version    → `UnsupportedVersionError` naming slot and version
 * Transport failures (429 with Retry-After, 5xx, drops, timeouts) are the client's (rpc.ts).
 */
import { parseJsonExact } from '../rpc/json.ts'
import {
  RPC_BLOCK_CLEANED_UP,
  RPC_BLOCK_NOT_AVAILABLE,
  RPC_BLOCK_STATUS_NOT_AVAILABLE_YET,
  RPC_LONG_TERM_STORAGE_SLOT_SKIPPED,
  RPC_SLOT_SKIPPED,
  RPC_UNSUPPORTED_TRANSACTION_VERSION,
  RpcError,
  sleep,
  type Commitment,
} from './rpc/errors.ts'
import { RpcClient, type BodyDecoder } from './rpc/client.ts'

/** the newest transaction version this solportal reads (`maxSupportedTransactionVersion`) */
export const MAX_TRANSACTION_VERSION = 1

/** `getBlock`'s parameters for a full block (json, full transactions, rewards, up to version 1) */
export function blockParams(slot: number, commitment: Commitment): unknown[] {
  return [
    slot,
    {
      encoding: 'json',
      transactionDetails: 'full',
      rewards: true,
      maxSupportedTransactionVersion: MAX_TRANSACTION_VERSION,
      commitment,
    },
  ]
}

/** -32015: the block holds a transaction of a version newer than requested; never taken for a skipped slot */
export class UnsupportedVersionError extends Error {
  constructor(
    readonly slot: number,
    /** the version the node reported (null when its message names none) */
    readonly version: number | null,
    rpcMessage: string,
  ) {
    super(
      `slot ${slot}: the node refuses the block (-32015): it holds a transaction of version ${version ?? '?'}, ` +
        `newer than the version ${MAX_TRANSACTION_VERSION} this solportal reads; the block is not skipped, ` +
        `ingestion stops here (node: ${rpcMessage})`,
    )
    this.name = 'UnsupportedVersionError'
  }
}

/** classifies a -32015 error of `slot`; other errors as they are */
export function versionError(e: unknown, slot: number): unknown {
  if (!(e instanceof RpcError) || e.code !== RPC_UNSUPPORTED_TRANSACTION_VERSION) return e
  const m = /version \((\d+)\)/i.exec(e.rpcMessage)
  return new UnsupportedVersionError(slot, m ? Number(m[1]) : null, e.rpcMessage)
}

/** slots below the node's first available block (-32001, getFirstAvailableBlock) */
export class BelowFirstAvailableError extends Error {
  constructor(
    readonly from: number,
    readonly firstAvailable: number,
  ) {
    super(
      `slots ${from}..${firstAvailable - 1} are below the node's first available block ${firstAvailable} ` +
        `(getFirstAvailableBlock; -32001): this node no longer has them. Use a provider with the full ` +
        `history for them, or start at ${firstAvailable}`,
    )
    this.name = 'BelowFirstAvailableError'
  }
}

/** a fetched slot: the block's `getBlock` result as JSON text (bytes), or a skipped slot */
export type FetchedSlot =
  { kind: 'block'; slot: number; result: Buffer } | { kind: 'skipped'; slot: number; code: number }

const HEAD = /^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*(?:"id"\s*:\s*(?:\d+|"[^"\\]*")\s*,\s*)?"result"\s*:\s*/
const TAIL_ID = /\s*,\s*"id"\s*:\s*(?:\d+|"[^"\\]*")\s*\}\s*$/
const TAIL = /\s*\}\s*$/

/**
 * The text of a JSON-RPC answer's `result` as a view of its bytes, when the answer is
 * `{"jsonrpc":"2.0","result":R,"id":N}` or `{"jsonrpc":"2.0","id":N,"result":R}` (what nodes
 * write; whitespace allowed); null otherwise (an error, another member order: parse it).
 */
export function resultText(bytes: Buffer): Buffer | null {
  const head = HEAD.exec(bytes.toString('latin1', 0, Math.min(bytes.length, 96)))
  if (!head) return null
  const idFirst = head[0].includes('"id"')
  const tailAt = Math.max(head[0].length, bytes.length - 96)
  const tail = (idFirst ? TAIL : TAIL_ID).exec(bytes.toString('latin1', tailAt))
  if (!tail) return null
  const end = bytes.length - tail[0].length
  if (end <= head[0].length) return null
  return bytes.subarray(head[0].length, end)
}

const NULL_TEXT = Buffer.from('null')

export interface BlockFetcherOptions {
  client: RpcClient
  /** commitment of the listing and the blocks (default `finalized`) */
  commitment?: Commitment
  /** getBlock calls in flight (default 8); blocks are delivered in slot order */
  concurrency?: number
  /** slots listed per getBlocks call (default 1 000) */
  maxRange?: number
  /** "not available" answers (-32004, -32014, null) retried per slot before failing (default 30) */
  notAvailableRetries?: number
  /** first backoff of those retries, ms (default 100; doubles, full jitter, at most 5 s) */
  notAvailableBackoffMs?: number
  /** slots known to be skipped: not asked for */
  skipped?: ReadonlySet<number>
  /** a retry of a "not available" answer (for the summary) */
  onNotAvailable?: (slot: number, code: number) => void
}

export class BlockFetcher {
  readonly client: RpcClient
  readonly commitment: Commitment
  private readonly concurrency: number
  private readonly maxRange: number
  private readonly notAvailableRetries: number
  private readonly notAvailableBackoffMs: number
  private readonly skipped: ReadonlySet<number>
  private readonly onNotAvailable?: (slot: number, code: number) => void
  /** what the node answered, by kind (the client's transport failures are in `client.stats`) */
  readonly stats = { blocks: 0, skipped: 0, notAvailable: 0, statusNotYet: 0, nullResults: 0, listed: 0 }

  constructor(opts: BlockFetcherOptions) {
    this.client = opts.client
    this.commitment = opts.commitment ?? 'finalized'
    this.concurrency = Math.max(1, opts.concurrency ?? 8)
    this.maxRange = Math.max(1, opts.maxRange ?? 1000)
    this.notAvailableRetries = opts.notAvailableRetries ?? 30
    this.notAvailableBackoffMs = opts.notAvailableBackoffMs ?? 100
    this.skipped = opts.skipped ?? new Set()
    this.onNotAvailable = opts.onNotAvailable
  }

  /** the node's head at the fetcher's commitment */
  async head(signal?: AbortSignal): Promise<number> {
    return this.client.getSlot(this.commitment, signal)
  }

  /** throws `BelowFirstAvailableError` when `from` is below the node's first available block */
  async checkAvailable(from: number, signal?: AbortSignal): Promise<void> {
    const first = Number(await this.client.call<number>('getFirstAvailableBlock', [], signal))
    if (from < first) throw new BelowFirstAvailableError(from, first)
  }

  /** the summary of the node's errors by kind (`3 HTTP 429, 2 -32004 not available`), '' when none */
  errorSummary(): string {
    const c = this.client.stats
    const parts: [number, string][] = [
      [c.http429, 'HTTP 429'],
      [this.stats.notAvailable, '-32004 not available'],
      [this.stats.statusNotYet, '-32014 status not yet available'],
      [this.stats.nullResults, 'null results'],
      [this.stats.skipped, 'skipped (-32007/-32009)'],
      [c.dropped, 'dropped connections'],
      [c.timeouts, 'timeouts'],
      [c.stalls, 'stalls'],
    ]
    return parts
      .filter(([n]) => n > 0)
      .map(([n, k]) => `${n} ${k}`)
      .join(', ')
  }

  /**
   * One slot's block: its result's text, or `skipped`; "not available" answers retried. The
   * result is a view of the answer's bytes: `release` it once read.
   */
  async fetchSlot(slot: number, signal?: AbortSignal): Promise<FetchedSlot> {
    const decode: BodyDecoder = async (bytes) => {
      const r = resultText(bytes)
      return r ? { result: r } : parseJsonExact(bytes.toString('utf8'))
    }
    for (let attempt = 0; ; attempt++) {
      let code: number
      try {
        const r = await this.client.call<Buffer | null>('getBlock', blockParams(slot, this.commitment), signal, decode)
        if (Buffer.isBuffer(r) && !r.equals(NULL_TEXT)) {
          this.stats.blocks++
          return { kind: 'block', slot, result: r }
        }
        if (r !== null && !Buffer.isBuffer(r)) {
          throw new Error(`getBlock slot ${slot}: the node answered a ${typeof r}, not a block`)
        }
        this.stats.nullResults++
        code = 0
      } catch (e) {
        if (!(e instanceof RpcError)) throw e
        if (e.code === RPC_SLOT_SKIPPED || e.code === RPC_LONG_TERM_STORAGE_SLOT_SKIPPED) {
          this.stats.skipped++
          return { kind: 'skipped', slot, code: e.code }
        }
        if (e.code === RPC_BLOCK_CLEANED_UP) {
          const first = Number(await this.client.call<number>('getFirstAvailableBlock', [], signal))
          throw new BelowFirstAvailableError(slot, Math.max(first, slot + 1))
        }
        if (e.code !== RPC_BLOCK_NOT_AVAILABLE && e.code !== RPC_BLOCK_STATUS_NOT_AVAILABLE_YET) {
          throw versionError(e, slot)
        }
        if (e.code === RPC_BLOCK_NOT_AVAILABLE) this.stats.notAvailable++
        else this.stats.statusNotYet++
        code = e.code
      }
      if (attempt >= this.notAvailableRetries) {
        throw new Error(
          `getBlock slot ${slot}: still not available after ${attempt + 1} attempts (${code || 'null result'}); the node lists it as produced`,
        )
      }
      this.onNotAvailable?.(slot, code)
      const cap = Math.min(5_000, this.notAvailableBackoffMs * 2 ** Math.min(attempt, 10))
      await sleep(Math.random() * cap, signal)
    }
  }

  /** the answer memory of a fetched block's result, read no more, is used again */
  release(f: FetchedSlot): void {
    if (f.kind === 'block') this.client.releaseBody(f.result)
  }

  /**
   * The produced slots in [from, to] in slot order, each once: blocks and skipped slots. Each
   * item's bytes are valid until the next item is asked for. Ends early (without an error) when
   * `signal` aborts.
   */
  async *slots(from: number, to: number, signal?: AbortSignal): AsyncGenerator<FetchedSlot> {
    const ctl = new AbortController()
    const onAbort = () => ctl.abort(signal!.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    const sig = ctl.signal
    const queue: Promise<FetchedSlot>[] = []
    let listed: number[] = []
    let next = from
    try {
      for (;;) {
        while (queue.length < this.concurrency) {
          if (listed.length === 0) {
            if (next > to) break
            const end = Math.min(to, next + this.maxRange - 1)
            const got = await this.client.getBlocks(next, end, this.commitment, sig)
            listed = got.filter((s) => s >= next && s <= end && !this.skipped.has(s))
            this.stats.listed += listed.length
            next = end + 1
            continue
          }
          const p = this.fetchSlot(listed.shift()!, sig)
          p.catch(() => undefined) // awaited in order below
          queue.push(p)
        }
        if (queue.length === 0) return
        const item = await queue.shift()!
        yield item
        this.release(item)
      }
    } catch (e) {
      if (signal?.aborted) return
      throw e
    } finally {
      signal?.removeEventListener('abort', onAbort)
      ctl.abort(new Error('fetch closed'))
    }
  }
}
