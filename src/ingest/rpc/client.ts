/**
 * `RpcClient`: single JSON-RPC calls with transport-level retries (exponential backoff with full
 * jitter): dropped connections, timeouts, stalls (no byte received for `stallTimeoutMs`), HTTP 429
 * (honouring `Retry-After`), HTTP 5xx and "node unhealthy" (-32005). JSON-RPC errors are otherwise
 * returned to the caller as `RpcError`. Answers are read as a stream (http.ts) and abandoned as
 * soon as they exceed `maxResponseBytes` (`ResponseTooLargeError`, not retried by the client).
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import type { RequestLimiter } from '../rpc-provider.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import { SharedBodies } from './shared-bodies.ts'
import type { RpcBlock } from '../../rpc/types.ts'
import {
  abortError,
  MAX_SUPPORTED_TRANSACTION_VERSION,
  ResponseTooLargeError,
  RPC_NODE_UNHEALTHY,
  RpcError,
  sleep,
  TransientRpcError,
  type Commitment,
} from './errors.ts'
import { exchange, Failure, type Answer, type ExchangeConfig } from './http.ts'
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_TIMEOUT_MS } from './defaults.ts'

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

/** turns the bytes of a 200 answer into the JSON-RPC envelope; throws when they are not JSON */
export type BodyDecoder = (bytes: Buffer, signal?: AbortSignal) => Promise<unknown>

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
  /** what each HTTP exchange reads of this client (http.ts) */
  private readonly http: ExchangeConfig
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
    this.http = {
      target: this.target,
      request: this.request,
      agent: this.agent,
      timeoutMs: this.timeoutMs,
      stallTimeoutMs: this.stallTimeoutMs,
      maxResponseBytes: this.maxResponseBytes,
      gzipAnswers: this.gzipAnswers,
      headers: this.headers,
      bodies: this.bodies,
      stats: this.stats,
    }
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
  private exchange(method: string, payload: string, signal?: AbortSignal, zipped = false): Promise<Answer> {
    return exchange(this.http, method, payload, signal, zipped)
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
