/**
 * Following a Solana node over HTTP JSON-RPC.
 *
 * `RpcClient` does single calls with transport-level retries (exponential backoff with full
 * jitter): dropped connections, timeouts, stalls (no byte received for `stallTimeoutMs`), HTTP 429
 * (honouring `Retry-After`), HTTP 5xx and "node unhealthy" (-32005). JSON-RPC errors are otherwise
 * returned to the caller as `RpcError`. Answers are read as a stream and abandoned as soon as they
 * exceed `maxResponseBytes` (`ResponseTooLargeError`, not retried by the client): an answer is
 * never held whole in memory beyond the cap.
 *
 * `RpcSource` turns the node into a stream of produced blocks in slot order: it lists produced
 * slots with `getBlocks` (skipped slots are not blocks), fetches them with `getBlock` with a
 * configurable number of requests in flight, and delivers them in order; once caught up, it asks
 * for the next slot's block directly and lists only when the node has none there (yet). The node's answers for
 * a slot that is not a block:
 *   -32007 SLOT_SKIPPED                      the slot was skipped (or lost to a ledger jump) → no block
 *   -32009 LONG_TERM_STORAGE_SLOT_SKIPPED    the same, answered from long-term storage → no block
 *   -32004 BLOCK_NOT_AVAILABLE               the node has no block for the slot (yet) at this
 *                                            commitment → retry with backoff
 *   -32014 BLOCK_STATUS_NOT_AVAILABLE_YET    the slot's status is not known yet → retry with backoff
 *   -32001 BLOCK_CLEANED_UP                  below the node's first available block → error
 *   -32015 UNSUPPORTED_TRANSACTION_VERSION   the block holds a transaction of a version above the
 *                                            request's `maxSupportedTransactionVersion` (1) →
 *                                            `UnsupportedTransactionVersionError` naming the slot
 *                                            and the version: never taken for a skipped slot
 * A `null` result (older nodes, "not confirmed yet") is retried like -32004. An answer over the size
 * cap is delivered as a `malformed` event (the ingester refetches it, then gives up).
 * `checkBlockShape` is the structural check of a full `getBlock` answer that the ingester applies
 * before normalizing (a damaged answer must be refetched, never stored with fewer transactions).
 *
 * Responses are parsed with `parseJsonExact`: u64 values above 2^53 arrive as decimal strings.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { createGunzip, gzipSync } from 'node:zlib'
import type { RequestLimiter } from './rpc-provider.ts'
import { parseJsonExact } from '../rpc/json.ts'
import { NodeHeadTracker } from './lag.ts'
import { SharedBodies } from './shared-bodies.ts'
import type { Block, NormalizationWarning } from '../model.ts'
import { isAddress } from '../util/base58.ts'
import { safeJson } from '../util/safe-json.ts'
import type { RpcBlock } from '../rpc/types.ts'
import type { PackedBlock } from '../store/packed-block.ts'
import type { DecodedBlock, DecodedEnvelope, DecodeMarks } from './block-decode.ts'

export type Commitment = 'processed' | 'confirmed' | 'finalized'

export const RPC_BLOCK_CLEANED_UP = -32001
export const RPC_BLOCK_NOT_AVAILABLE = -32004
export const RPC_NODE_UNHEALTHY = -32005
export const RPC_SLOT_SKIPPED = -32007
export const RPC_LONG_TERM_STORAGE_SLOT_SKIPPED = -32009
export const RPC_BLOCK_STATUS_NOT_AVAILABLE_YET = -32014
export const RPC_UNSUPPORTED_TRANSACTION_VERSION = -32015

/** A JSON-RPC error object returned by the node. */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
    readonly data?: unknown,
  ) {
    super(`${method}: JSON-RPC error ${code}: ${rpcMessage}`)
    this.name = 'RpcError'
  }
}

/**
 * The version of transaction this client asks for (`maxSupportedTransactionVersion`): legacy, v0
 * and v1 (SIMD-0385, on mainnet since epoch 1035).
 */
export const MAX_SUPPORTED_TRANSACTION_VERSION = 1

/**
 * The node answered -32015 for a block: it holds a transaction of a version this client does not
 * ask for. The block cannot be read whole, so the source stops (a block lost quietly is worse
 * than a visible stop); `version` is the one the node reported (null when its message names none).
 */
export class UnsupportedTransactionVersionError extends Error {
  constructor(
    readonly slot: number,
    readonly version: number | null,
    readonly rpcMessage: string,
  ) {
    super(
      `slot ${slot}: the node holds a transaction of version ${version ?? '(not named)'}, above the ` +
        `maxSupportedTransactionVersion ${MAX_SUPPORTED_TRANSACTION_VERSION} this version of solportal reads ` +
        `(JSON-RPC error ${RPC_UNSUPPORTED_TRANSACTION_VERSION}: ${rpcMessage}); stopped rather than skip the block`,
    )
    this.name = 'UnsupportedTransactionVersionError'
  }

  /** from the node's -32015 error for `slot` ("Transaction version (N) is not supported ...") */
  static of(slot: number, e: RpcError): UnsupportedTransactionVersionError {
    const m = /version \((\d+)\)/.exec(e.rpcMessage)
    return new UnsupportedTransactionVersionError(slot, m ? Number(m[1]) : null, e.rpcMessage)
  }
}

/** An answer larger than the client's `maxResponseBytes`: abandoned while reading, not retried. */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly method: string,
    readonly limit: number,
  ) {
    super(`${method}: answer larger than the ${Math.round(limit / 1024 / 1024)} MiB cap (abandoned while reading)`)
    this.name = 'ResponseTooLargeError'
  }
}

/** A transport failure that is worth retrying (connection, timeout, 429, 5xx). */
export class TransientRpcError extends Error {
  constructor(
    message: string,
    /** server-requested delay (Retry-After), ms */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'TransientRpcError'
  }
}

export interface RpcClientOptions {
  /** node URL, e.g. http://127.0.0.1:8899 */
  url: string
  /** per-request timeout, ms (default 30 000) */
  timeoutMs?: number
  /** a request that receives no byte for this long is abandoned and retried, ms (default 10 000) */
  stallTimeoutMs?: number
  /** answers above this size are abandoned while reading (default 128 MiB) */
  maxResponseBytes?: number
  /** retries of transient failures per call before giving up (default 8) */
  maxRetries?: number
  /** first backoff delay, ms (default 50); doubles per attempt, full jitter */
  minBackoffMs?: number
  /** backoff ceiling, ms (default 5 000); also caps Retry-After */
  maxBackoffMs?: number
  /** extra HTTP headers */
  headers?: Record<string, string>
  /**
   * gzip on the wire (default false): answers asked for with `Accept-Encoding: gzip` (the node
   * decides); once the node has answered compressed, request bodies are sent gzip-compressed too,
   * until it refuses one (HTTP 400 / 415 or a JSON-RPC parse error), then plain for good
   */
  gzip?: boolean
  /** every request (retries included) waits for its turn here: a request-rate cap, paused by 429s */
  limiter?: RequestLimiter
  /** HTTP 429 answers retried per call before giving up (default `maxRetries`); each waits as told */
  max429Retries?: number
  /** longest Retry-After honoured, ms (default 120 000) */
  maxRetryAfterMs?: number
  /** every retry, for logs and tests (`params` as sent: a getBlock's slot is `params[0]`) */
  onRetry?: (method: string, err: Error, attempt: number, delayMs: number, params: unknown[]) => void
}

export const DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024
/** answers at least this large are read into shared memory (`SharedArrayBuffer`): see `RpcClient` */
export const SHARED_BODY_MIN_BYTES = 1 << 20

/** an HTTP answer as read: status, body, and a 429's Retry-After */
interface Answer {
  status: number
  bytes: Buffer
  retryAfter?: string
  /** the answer came gzip-compressed */
  gzip?: boolean
}

/** the request's time limit or its stall limit was reached */
class Failure extends Error {
  constructor(readonly kind: 'timeout' | 'stall') {
    super(kind === 'timeout' ? 'timeout' : 'stalled')
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/**
 * the body's chunks as one buffer: in shared memory (`SharedArrayBuffer`, which worker threads
 * read without a copy) from `SHARED_BODY_MIN_BYTES` on
 */
function joinBody(parts: readonly Buffer[], size: number, shared: SharedBodies): Buffer {
  if (size < SHARED_BODY_MIN_BYTES) return parts.length === 1 ? parts[0] : Buffer.concat(parts, size)
  const out = shared.take(size)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.byteLength
  }
  return out
}
export const DEFAULT_STALL_TIMEOUT_MS = 10_000

/** what a call is about, for logs: `getBlock slot 123`, `getBlocks 10..20`, `getSlot` */
export function describeCall(method: string, params: unknown[]): string {
  if (method === 'getBlock' && typeof params[0] === 'number') return `getBlock slot ${params[0]}`
  if (method === 'getBlocks' && typeof params[0] === 'number') return `getBlocks ${params[0]}..${params[1]}`
  return method
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal))
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      reject(abortError(signal!))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function abortError(signal: AbortSignal): Error {
  const r = signal.reason
  if (r instanceof Error) return r
  const e = new Error('aborted')
  e.name = 'AbortError'
  return e
}

export function isAbortError(e: unknown): boolean {
  return e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError')
}

/** Parses Retry-After (seconds or an HTTP date) into ms. */
function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined
  const s = Number(v)
  if (Number.isFinite(s)) return Math.max(0, s * 1000)
  const d = Date.parse(v)
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : undefined
}

export class RpcClient {
  readonly url: string
  private readonly timeoutMs: number
  private readonly stallTimeoutMs: number
  readonly maxResponseBytes: number
  private readonly maxRetries: number
  private readonly minBackoffMs: number
  private readonly maxBackoffMs: number
  private readonly headers: Record<string, string>
  private readonly onRetry?: RpcClientOptions['onRetry']
  private readonly gzipAnswers: boolean
  /** request bodies gzip-compressed: null until the node answers compressed, false once it refused one */
  private gzipRequests: boolean | null = null
  private readonly limiter?: RequestLimiter
  private readonly max429Retries: number
  private readonly maxRetryAfterMs: number
  private readonly target: URL
  private readonly request: typeof httpRequest
  private readonly agent: HttpAgent
  private nextId = 1
  /** the shared memory large answers are read into, kept for later answers (`releaseBody`) */
  readonly bodies = new SharedBodies()
  /** statistics: transient failures seen, by kind */
  readonly stats = {
    calls: 0,
    retries: 0,
    http429: 0,
    dropped: 0,
    timeouts: 0,
    stalls: 0,
    tooLarge: 0,
    /** answers received gzip-compressed */
    gzipAnswers: 0,
  }

  constructor(opts: RpcClientOptions) {
    this.url = opts.url
    this.timeoutMs = opts.timeoutMs ?? 30_000
    this.stallTimeoutMs = opts.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    this.maxRetries = opts.maxRetries ?? 8
    this.minBackoffMs = opts.minBackoffMs ?? 50
    this.maxBackoffMs = opts.maxBackoffMs ?? 5_000
    this.headers = opts.headers ?? {}
    this.onRetry = opts.onRetry
    this.gzipAnswers = opts.gzip ?? false
    if (!this.gzipAnswers) this.gzipRequests = false
    this.limiter = opts.limiter
    this.max429Retries = opts.max429Retries ?? this.maxRetries
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 120_000
    this.target = new URL(opts.url)
    const secure = this.target.protocol === 'https:'
    this.request = secure ? httpsRequest : httpRequest
    // idle keep-alive sockets are unref'd by the agent: they do not hold the process open
    this.agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true })
  }

  /**
   * the bytes a `decode` was given are read no more (its promise settled and nothing keeps them):
   * a large answer's shared memory is used again for a later answer
   */
  releaseBody(bytes: Buffer): void {
    this.bodies.release(bytes)
  }

  /** close the idle connections to the node (in-flight calls go on) */
  close(): void {
    this.agent.destroy()
  }

  backoff(attempt: number): number {
    const cap = Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** attempt)
    return Math.random() * cap
  }

  /**
   * one JSON-RPC call; transient failures are retried, JSON-RPC errors thrown as RpcError.
   * `decode` turns the bytes of a 200 answer into the envelope (default: parsed here with exact
   * u64 values); bytes it cannot read (it throws) are taken for a truncated answer.
   */
  async call<T>(method: string, params: unknown[], signal?: AbortSignal, decode?: BodyDecoder): Promise<T> {
    let refusals = 0
    for (let attempt = 0, tries = 0; ; tries++) {
      try {
        return await this.callOnce<T>(method, params, signal, decode)
      } catch (e) {
        const err = e as Error
        const transient =
          err instanceof TransientRpcError || (err instanceof RpcError && err.code === RPC_NODE_UNHEALTHY)
        if (!transient || signal?.aborted) throw err
        // a 429 is the node saying when: it does not use up the retries of failures
        const is429 = err instanceof TransientRpcError && err.retryAfterMs !== undefined
        if (is429 ? ++refusals > this.max429Retries : attempt >= this.maxRetries) throw err
        let delay = this.backoff(is429 ? Math.min(refusals, 8) : attempt++)
        if (is429) {
          delay = Math.min(this.maxRetryAfterMs, Math.max(delay, (err as TransientRpcError).retryAfterMs!))
          // every request waits, not only this one
          this.limiter?.pauseFor(delay)
        }
        this.stats.retries++
        this.onRetry?.(method, err, tries, delay, params)
        await sleep(delay, signal)
      }
    }
  }

  private async callOnce<T>(method: string, params: unknown[], signal?: AbortSignal, decode?: BodyDecoder): Promise<T> {
    if (this.limiter) await this.limiter.take(signal)
    this.stats.calls++
    const id = this.nextId++
    if (signal?.aborted) throw abortError(signal)
    let answer: Answer
    const payload = JSON.stringify({ jsonrpc: '2.0', id, method, params })
    try {
      const zipped = this.gzipRequests === true
      answer = await this.exchange(method, payload, signal, zipped)
      if (answer.gzip && this.gzipRequests === null) this.gzipRequests = true
      if (zipped && refusesGzip(answer)) {
        // the node does not read compressed requests: plain from now on
        this.gzipRequests = false
        answer = await this.exchange(method, payload, signal, false)
      }
    } catch (e) {
      if (e instanceof ResponseTooLargeError) throw e
      if (signal?.aborted) throw abortError(signal)
      if (e instanceof Failure) {
        if (e.kind === 'timeout') {
          this.stats.timeouts++
          throw new TransientRpcError(`${method}: timeout after ${this.timeoutMs} ms`, undefined, { cause: e })
        }
        this.stats.stalls++
        throw new TransientRpcError(`${method}: stalled (no data for ${this.stallTimeoutMs} ms)`, undefined, {
          cause: e,
        })
      }
      // dropped connection, refused, reset, truncated body
      this.stats.dropped++
      throw new TransientRpcError(`${method}: ${(e as Error).message}`, undefined, { cause: e })
    }
    const { status, bytes } = answer
    if (status === 429) {
      this.stats.http429++
      // (a 429 always carries a delay, 0 without Retry-After: the retry loop tells it by that)
      throw new TransientRpcError(`${method}: HTTP 429`, parseRetryAfter(answer.retryAfter ?? null) ?? 0)
    }
    const text = () => bytes.toString('utf8', 0, Math.min(bytes.length, 800)).slice(0, 200)
    if (status >= 500 || status === 408) {
      throw new TransientRpcError(`${method}: HTTP ${status}: ${text()}`)
    }
    let body: { result?: unknown; error?: { code: number; message: string; data?: unknown } }
    try {
      body = (
        decode && status === 200 ? await decode(bytes, signal) : parseJsonExact(bytes.toString('utf8'))
      ) as typeof body
    } catch (e) {
      if (signal?.aborted) throw abortError(signal)
      if (status !== 200) throw new Error(`${method}: HTTP ${status}: ${text()}`)
      // a truncated body is a dropped connection
      this.stats.dropped++
      throw new TransientRpcError(`${method}: malformed response: ${(e as Error).message}`, undefined, { cause: e })
    }
    if (body && typeof body === 'object' && body.error) {
      throw new RpcError(method, Number(body.error.code), String(body.error.message), body.error.data)
    }
    if (status !== 200) throw new Error(`${method}: HTTP ${status}: ${text()}`)
    if (!body || typeof body !== 'object' || !('result' in body)) {
      throw new TransientRpcError(`${method}: response without result`)
    }
    return body.result as T
  }

  /**
   * One HTTP exchange: the request sent, the answer's status and body read (the body of a 429 is
   * discarded). Rejects with a `Failure` on the timeout or a stall (no byte for `stallTimeoutMs`,
   * re-armed by every byte received), `ResponseTooLargeError` past `maxResponseBytes` (declared or
   * read so far: the request is abandoned then), the abort reason when `signal` aborts, or the
   * transport's error (refused, reset, truncated body).
   *
   * `node:http` with a keep-alive agent: a poll of the node's head costs a fraction of what
   * `fetch` (undici) costs, and a large body is read as the socket's chunks and copied once into
   * memory of its own, shared (`SharedArrayBuffer`) from `SHARED_BODY_MIN_BYTES` on, so that
   * the threads that decode it all read it without a copy each (src/ingest/block-workers.ts).
   */
  private exchange(method: string, payload: string, signal?: AbortSignal, zipped = false): Promise<Answer> {
    const body = zipped ? gzipSync(payload) : payload
    return new Promise<Answer>((resolve, reject) => {
      let settled = false
      let stallTimer: NodeJS.Timeout | undefined
      const finish = (err: Error | null, answer?: Answer) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        clearTimeout(stallTimer)
        signal?.removeEventListener('abort', onAbort)
        if (err) {
          req.destroy()
          reject(err)
        } else resolve(answer!)
      }
      const timer = setTimeout(() => finish(new Failure('timeout')), this.timeoutMs)
      const armStall = () => {
        clearTimeout(stallTimer)
        stallTimer = setTimeout(() => finish(new Failure('stall')), this.stallTimeoutMs)
      }
      const onAbort = () => finish(abortError(signal!))
      signal?.addEventListener('abort', onAbort, { once: true })
      armStall()
      const tooLarge = () => {
        this.stats.tooLarge++
        finish(new ResponseTooLargeError(method, this.maxResponseBytes))
      }
      const req = this.request(this.target, {
        method: 'POST',
        agent: this.agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(zipped ? { 'content-encoding': 'gzip' } : {}),
          ...(this.gzipAnswers ? { 'accept-encoding': 'gzip' } : {}),
          ...this.headers,
        },
      })
      req.on('error', (e) => finish(e))
      req.on('response', (res) => {
        armStall()
        const status = res.statusCode ?? 0
        res.on('error', (e) => finish(e))
        if (status === 429) {
          res.resume()
          finish(null, { status, bytes: Buffer.alloc(0), retryAfter: headerValue(res.headers['retry-after']) })
          return
        }
        const declared = Number(res.headers['content-length'])
        if (Number.isFinite(declared) && declared > this.maxResponseBytes) return tooLarge()
        const parts: Buffer[] = []
        let size = 0
        // a compressed answer is read as its decompressed bytes (the size cap applies to them)
        const gz = /^\s*(x-)?gzip\s*$/i.test(headerValue(res.headers['content-encoding']) ?? '')
        const input = gz ? res.pipe(createGunzip()) : res
        if (gz) {
          this.stats.gzipAnswers++
          input.on('error', (e) => finish(e))
          res.on('data', armStall)
        }
        input.on('data', (chunk: Buffer) => {
          if (settled) return
          armStall()
          size += chunk.byteLength
          if (size > this.maxResponseBytes) {
            parts.length = 0
            return tooLarge()
          }
          parts.push(chunk)
        })
        input.on('end', () => {
          if (!res.complete) return finish(new Error('the connection closed before the answer ended'))
          finish(null, { status, bytes: joinBody(parts, size, this.bodies), gzip: gz })
        })
        res.on('close', () => {
          if (!res.complete) finish(new Error('the connection closed before the answer ended'))
        })
      })
      req.end(body)
    })
  }

  async getSlot(commitment: Commitment, signal?: AbortSignal): Promise<number> {
    return Number(await this.call<number>('getSlot', [{ commitment }], signal))
  }

  /** produced slots in [start, end] (inclusive) at the commitment, ascending */
  async getBlocks(start: number, end: number, commitment: Commitment, signal?: AbortSignal): Promise<number[]> {
    const r = await this.call<number[]>('getBlocks', [start, end, { commitment }], signal)
    return r.map(Number)
  }

  /**
   * The full block (json encoding, full transaction details, rewards, v0 and v1 transactions).
   * Throws RpcError for JSON-RPC errors; resolves null when the node answers `null`.
   */
  async getBlock(slot: number, commitment: Commitment, signal?: AbortSignal): Promise<RpcBlock | null> {
    return this.call<RpcBlock | null>('getBlock', fullBlockParams(slot, commitment), signal)
  }

  /** only the header fields of a block (no transactions, no rewards) */
  async getBlockHeader(slot: number, commitment: Commitment, signal?: AbortSignal): Promise<RpcBlock | null> {
    return this.call<RpcBlock | null>(
      'getBlock',
      [
        slot,
        {
          encoding: 'json',
          transactionDetails: 'none',
          rewards: false,
          maxSupportedTransactionVersion: MAX_SUPPORTED_TRANSACTION_VERSION,
          commitment,
        },
      ],
      signal,
    )
  }
}

/** a node's answer to a gzip-compressed request that says it could not read it */
function refusesGzip(a: Answer): boolean {
  if (a.status === 415 || a.status === 400) return true
  // a parse error (-32700): the node read the compressed bytes as JSON
  return a.status === 200 && a.bytes.length < 512 && /"code"\s*:\s*-32700\b/.test(a.bytes.toString('latin1'))
}

export function fullBlockParams(slot: number, commitment: Commitment): unknown[] {
  return [
    slot,
    {
      encoding: 'json',
      transactionDetails: 'full',
      rewards: true,
      maxSupportedTransactionVersion: MAX_SUPPORTED_TRANSACTION_VERSION,
      commitment,
    },
  ]
}

/** turns the bytes of a 200 answer into the JSON-RPC envelope; throws when they are not JSON */
export type BodyDecoder = (bytes: Buffer, signal?: AbortSignal) => Promise<unknown>

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

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * The structural check of a full `getBlock` answer (json encoding, full transactions): the
 * header members, `transactions` a list, and each transaction an object with
 * `transaction.signatures` (a non-empty list), `transaction.message` with `accountKeys` and
 * `instructions` lists, and a `meta` member (an object, or null as nodes answer without status
 * metadata). Returns the first problem found, or null. The content of each transaction is left to
 * the normalizer (whose skipped transactions the ingester also counts as damage).
 */
export function checkBlockShape(block: unknown): string | null {
  if (!isObject(block)) return 'the answer is not an object'
  // both hashes link the chain: a block stored with a hash the normalizer had to blank would be
  // taken for a fork by its successor, so an unusable one is damage, not a warning
  if (typeof block.blockhash !== 'string' || block.blockhash === '') return 'no blockhash'
  if (!isAddress(block.blockhash)) return `blockhash ${safeJson(block.blockhash)} is not a 32-byte base58 hash`
  if (typeof block.previousBlockhash !== 'string') return 'no previousBlockhash'
  if (!isAddress(block.previousBlockhash)) {
    return `previousBlockhash ${safeJson(block.previousBlockhash)} is not a 32-byte base58 hash`
  }
  if (typeof block.parentSlot !== 'number' || !Number.isSafeInteger(block.parentSlot) || block.parentSlot < 0) {
    return 'no valid parentSlot'
  }
  const txs = block.transactions
  if (!Array.isArray(txs)) return `transactions is ${txs === undefined ? 'missing' : 'not a list'}`
  if (block.rewards != null && !Array.isArray(block.rewards)) return 'rewards is not a list'
  for (let i = 0; i < txs.length; i++) {
    const problem = checkTransactionShape(txs[i], i)
    if (problem !== null) return problem
  }
  return null
}

/** `checkBlockShape`'s check of the transaction at position `i` (the first problem, or null) */
export function checkTransactionShape(tx: unknown, i: number): string | null {
  const bad = (what: string) => `transaction ${i}: ${what}`
  if (!isObject(tx)) return bad('not an object')
  const t = tx.transaction
  if (!isObject(t)) return bad('no transaction')
  if (!Array.isArray(t.signatures) || t.signatures.length === 0 || typeof t.signatures[0] !== 'string') {
    return bad('no transaction.signatures')
  }
  const m = t.message
  if (!isObject(m)) return bad('no transaction.message')
  if (!Array.isArray(m.accountKeys)) return bad('no transaction.message.accountKeys')
  if (!Array.isArray(m.instructions)) return bad('no transaction.message.instructions')
  if (!('meta' in tx) || (tx.meta !== null && !isObject(tx.meta))) return bad('no meta')
  return null
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
    try {
      let next = from
      let listed: number[] = []
      let head = -1
      /** everything up to the node's head was delivered when it was last read */
      let atTip = false
      for (;;) {
        if (sig.aborted) return
        // refill the pipeline
        while (queue.length < this.concurrency) {
          if (listed.length === 0) {
            if (queue.length > 0) break
            if (atTip) {
              // caught up: ask for the next slot's block at once (the node's head and the list of
              // produced slots would cost two round trips before it); when the node has no block
              // there (yet, or the slot was skipped), its head and the list tell as before
              const r = await this.fetchOnce(next, sig)
              if (r !== null && r.kind !== 'skipped') {
                const slot = next++
                // the head is read again before the next one (blocks that came meanwhile are listed
                // and fetched concurrently, as when catching up)
                atTip = false
                head = Math.max(head, slot)
                this.nodeHead.observe(head)
                this.stats.probed++
                if (r.kind === 'malformed') yield { kind: 'malformed', slot, problem: r.problem }
                else {
                  this.stats.blocks++
                  yield { ...r, slot }
                }
                continue
              }
            }
            head = await this.client.getSlot(this.commitment, sig)
            this.nodeHead.observe(head)
            atTip = head < next
            if (head < next) {
              yield { kind: 'tip', head }
              await sleep(this.pollIntervalMs, sig)
              continue
            }
            const end = Math.min(head, next + this.maxRange - 1)
            listed = (await this.client.getBlocks(next, end, this.commitment, sig)).filter((s) => s >= next && s <= end)
            next = end + 1
            if (listed.length === 0) break
          }
          const slot = listed.shift()!
          const p = this.fetchSlot(slot, sig)
          p.catch(() => {}) // handled when awaited
          queue.push({ slot, p })
        }
        if (queue.length === 0) {
          // everything listed up to `head` is delivered
          if (next > head) {
            yield { kind: 'tip', head }
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
