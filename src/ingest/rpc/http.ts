/**
 * The HTTP side of the JSON-RPC client (client.ts `RpcClient`): one request sent and its answer
 * read, with the call's time limit, the stall limit, the size cap, gzip both ways, and large
 * answers read into shared memory.
 */
import type { Agent as HttpAgent, IncomingMessage, ClientRequest, request as httpRequest } from 'node:http'
import { createGunzip, gzipSync } from 'node:zlib'
import { SharedBodies } from './shared-bodies.ts'
import { abortError, ResponseTooLargeError } from './errors.ts'

/** answers at least this large are read into shared memory (`SharedArrayBuffer`): see `RpcClient` */
export const SHARED_BODY_MIN_BYTES = 1 << 20

/** an HTTP answer as read: status, body, and a 429's Retry-After */
export interface Answer {
  status: number
  bytes: Buffer
  retryAfter?: string
  /** the answer came gzip-compressed */
  gzip?: boolean
}

/** the request's time limit or its stall limit was reached */
export class Failure extends Error {
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

/** what an exchange needs of the client: its node, limits, headers and counters */
export interface ExchangeConfig {
  readonly target: URL
  readonly request: typeof httpRequest
  readonly agent: HttpAgent
  readonly timeoutMs: number
  readonly stallTimeoutMs: number
  readonly maxResponseBytes: number
  /** ask for gzip-compressed answers */
  readonly gzipAnswers: boolean
  readonly headers: Record<string, string>
  /** the shared memory large answers are read into */
  readonly bodies: SharedBodies
  readonly stats: { tooLarge: number; gzipAnswers: number }
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
export function exchange(
  c: ExchangeConfig,
  method: string,
  payload: string,
  signal?: AbortSignal,
  zipped = false,
): Promise<Answer> {
  const body = zipped ? gzipSync(payload) : payload
  return new Promise<Answer>((resolve, reject) => {
    const x = new Exchange(c, method, signal, resolve, reject)
    const req = c.request(c.target, {
      method: 'POST',
      agent: c.agent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...(zipped ? { 'content-encoding': 'gzip' } : {}),
        ...(c.gzipAnswers ? { 'accept-encoding': 'gzip' } : {}),
        ...c.headers,
      },
    })
    x.req = req
    req.on('error', (e) => x.finish(e))
    req.on('response', (res) => x.onResponse(res))
    req.end(body)
  })
}

/** one exchange under way: its timers, its end (once), and the reading of its answer */
class Exchange {
  req: ClientRequest | null = null
  settled = false
  private stallTimer: NodeJS.Timeout | undefined
  private readonly timer: NodeJS.Timeout
  private readonly onAbort = () => this.finish(abortError(this.signal!))

  constructor(
    private readonly c: ExchangeConfig,
    private readonly method: string,
    private readonly signal: AbortSignal | undefined,
    private readonly resolve: (a: Answer) => void,
    private readonly reject: (e: Error) => void,
  ) {
    this.timer = setTimeout(() => this.finish(new Failure('timeout')), c.timeoutMs)
    signal?.addEventListener('abort', this.onAbort, { once: true })
    this.armStall()
  }

  finish(err: Error | null, answer?: Answer): void {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.timer)
    clearTimeout(this.stallTimer)
    this.signal?.removeEventListener('abort', this.onAbort)
    if (err) {
      this.req?.destroy()
      this.reject(err)
    } else this.resolve(answer!)
  }

  /** (re)start the stall limit: no byte for `stallTimeoutMs` fails the exchange */
  armStall(): void {
    clearTimeout(this.stallTimer)
    this.stallTimer = setTimeout(() => this.finish(new Failure('stall')), this.c.stallTimeoutMs)
  }

  private tooLarge(): void {
    this.c.stats.tooLarge++
    this.finish(new ResponseTooLargeError(this.method, this.c.maxResponseBytes))
  }

  onResponse(res: IncomingMessage): void {
    this.armStall()
    const status = res.statusCode ?? 0
    res.on('error', (e) => this.finish(e))
    if (status === 429) {
      res.resume()
      this.finish(null, { status, bytes: Buffer.alloc(0), retryAfter: headerValue(res.headers['retry-after']) })
      return
    }
    const declared = Number(res.headers['content-length'])
    if (Number.isFinite(declared) && declared > this.c.maxResponseBytes) return this.tooLarge()
    this.readBody(res, status)
  }

  /** the answer's body, decompressed when it came gzip-compressed (the size cap applies to the decompressed bytes) */
  private readBody(res: IncomingMessage, status: number): void {
    const parts: Buffer[] = []
    let size = 0
    const gz = /^\s*(x-)?gzip\s*$/i.test(headerValue(res.headers['content-encoding']) ?? '')
    const input = gz ? res.pipe(createGunzip()) : res
    if (gz) {
      this.c.stats.gzipAnswers++
      input.on('error', (e) => this.finish(e))
      res.on('data', () => this.armStall())
    }
    input.on('data', (chunk: Buffer) => {
      if (this.settled) return
      this.armStall()
      size += chunk.byteLength
      if (size > this.c.maxResponseBytes) {
        parts.length = 0
        return this.tooLarge()
      }
      parts.push(chunk)
    })
    input.on('end', () => {
      if (!res.complete) return this.finish(new Error('the connection closed before the answer ended'))
      this.finish(null, { status, bytes: joinBody(parts, size, this.c.bodies), gzip: gz })
    })
    res.on('close', () => {
      if (!res.complete) this.finish(new Error('the connection closed before the answer ended'))
    })
  }
}
