/**
 * Observability of the HTTP server: request ids, one access log line per request, request metrics,
 * and the operational endpoints
 *
 *   GET /health   200 while the process runs (liveness)
 *   GET /ready    200 once the datasets are loaded and every one has a head; 503 before, and while
 *                 a dataset's object store is unreachable (readiness)
 *   GET /metrics  Prometheus metrics (src/server/metrics.ts)
 *
 * The server calls `onRequest` first for every request and `route` before its own routes.
 */
import { randomUUID } from 'node:crypto'
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from '../log.ts'
import type { DatasetRegistry } from './datasets.ts'
import type { Metrics } from './metrics.ts'
import { answerClientError, clientErrorAnswer } from './strict-http.ts'

/** bytes as ASCII text, every byte outside 0x20..0x7e written as \\xHH (no control or C1 characters) */
function printable(b: Uint8Array): string {
  let out = ''
  for (const c of b)
    out += c >= 0x20 && c <= 0x7e && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`
  return out
}

/** what the observer reads from the server */
export interface ObservedServer {
  /** null while the datasets are still loading */
  readonly datasets: DatasetRegistry | null
  readonly activeStreamCount: number
  /** the client's address (behind a trusted proxy, the forwarded one); default the peer's */
  clientAddress?(req: http.IncomingMessage): string
  /** the id of the request's API key, if it was authenticated with one */
  keyIdOf?(req: http.IncomingMessage): string | undefined
  /** a header other than Authorization whose value is secret (the API key header) */
  readonly secretHeader?: string
}

/** the bytes with the values of Authorization (and `secret`) headers replaced: keys are never logged */
function redacted(b: Uint8Array, secret?: string): Uint8Array {
  const text = Buffer.from(b).toString('latin1')
  const names = ['authorization', ...(secret ? [secret.toLowerCase()] : [])]
  const out = text.replace(/(^|\n)([^:\r\n]*)(:[^\r\n]*)/g, (m, nl: string, name: string) =>
    names.includes(name.trim().toLowerCase()) ? `${nl}${name}: [redacted]` : m,
  )
  return Buffer.from(out, 'latin1')
}

export interface ObserverOptions {
  /** access lines go here */
  logger: Logger
  /** record request metrics and serve /metrics (default: no metrics, /metrics is 404) */
  metrics?: Metrics | null
}

/** an incoming X-Request-Id is reused when it is a plain token of up to 128 characters */
const SANE_REQUEST_ID = /^[A-Za-z0-9._~:+/=@-]{1,128}$/

const DATASET_ENDPOINTS = new Set(['metadata', 'head', 'finalized-head', 'stream', 'finalized-stream'])
const OWN_ENDPOINTS = new Set(['health', 'ready', 'metrics'])

/** The route of a path (a bounded set of names, for metrics labels) and the dataset it names. */
export function classify(pathname: string): { endpoint: string; dataset: string | null } {
  let parts: string[]
  try {
    parts = pathname
      .split('/')
      .filter((p) => p.length > 0)
      .map(decodeURIComponent)
  } catch {
    return { endpoint: 'other', dataset: null }
  }
  if (parts.length === 0) return { endpoint: 'index', dataset: null }
  if (parts[0] !== 'datasets') {
    if (parts.length === 1 && parts[0] === 'openapi.json') return { endpoint: 'openapi', dataset: null }
    return { endpoint: parts.length === 1 && OWN_ENDPOINTS.has(parts[0]) ? parts[0] : 'other', dataset: null }
  }
  if (parts.length === 1) return { endpoint: 'datasets', dataset: null }
  const rest = parts.slice(2)
  let endpoint = 'other'
  if (rest.length === 0) endpoint = 'metadata'
  else if (rest.length === 1 && DATASET_ENDPOINTS.has(rest[0])) endpoint = rest[0]
  else if (rest.length === 3 && rest[0] === 'timestamps' && rest[2] === 'block') endpoint = 'timestamp'
  return { endpoint, dataset: parts[1] }
}

export class Observer {
  readonly logger: Logger
  readonly metrics: Metrics | null
  private server: ObservedServer | null = null

  constructor(opts: ObserverOptions) {
    this.logger = opts.logger
    this.metrics = opts.metrics ?? null
  }

  /** called by the server it observes */
  attach(server: ObservedServer): void {
    this.server = server
    this.metrics?.watchStreams(() => server.activeStreamCount)
    this.metrics?.watchDatasets(() => server.datasets?.all ?? [])
  }

  /** readiness: the datasets are loaded and each has a head */
  readiness(): { ready: boolean; reason?: string; status?: string } {
    const reg = this.server?.datasets
    if (!reg) return { ready: false, reason: 'datasets are loading' }
    const empty = reg.all.filter((d) => d.store.head() === null).map((d) => d.name)
    if (empty.length) return { ready: false, reason: `no head yet: ${empty.join(', ')}` }
    for (const d of reg.all) {
      const why = d.unavailable?.()
      if (why) return { ready: false, reason: `${d.name}: ${why}`, status: 'unavailable' }
    }
    return { ready: true }
  }

  /** request id, access line and metrics of one request; call before anything is written */
  onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const t0 = process.hrtime.bigint()
    const incoming = req.headers['x-request-id']
    const id = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID()
    res.setHeader('X-Request-Id', id)

    // body bytes as written to the socket (after gzip)
    let bytes = 0
    const count = (chunk: unknown, encoding: unknown) => {
      if (typeof chunk === 'string') {
        bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
      } else if (chunk instanceof Uint8Array) bytes += chunk.byteLength
    }
    const write = res.write
    const end = res.end
    res.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
      count(chunk, rest[0])
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest)
    } as typeof res.write
    res.end = function (this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      if (typeof chunk !== 'function') count(chunk, rest[0])
      return (end as (...a: unknown[]) => http.ServerResponse).call(this, chunk, ...rest)
    } as typeof res.end

    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9
      const path = (req.url ?? '/').slice(0, 1000)
      const { endpoint, dataset: asked } = classify(path.split('?')[0])
      const dataset = asked === null ? '' : (this.server?.datasets?.get(asked)?.name ?? '')
      const status = res.statusCode
      const key = this.server?.keyIdOf?.(req)
      this.metrics?.observeRequest({ endpoint, dataset, status, bytes, seconds, key })
      const line = {
        reqId: id,
        method: req.method,
        path,
        endpoint,
        dataset: dataset || undefined,
        status,
        bytes,
        durationMs: Math.round(seconds * 1e4) / 10,
        client: this.server?.clientAddress?.(req) ?? req.socket.remoteAddress,
        // the key's id, never the key
        key,
        // the client went away before the response was complete
        aborted: res.writableFinished ? undefined : true,
      }
      if (status >= 500) this.logger.warn(line, 'request')
      else this.logger.info(line, 'request')
    })
  }

  /**
   * A request Node's HTTP parser refused before the server saw it (malformed request line or
   * header, bytes not allowed in a target, headers too large, headers or body not received in
   * time): answered as Node would (431, 408 or 400, then the connection is closed; with a
   * text/plain reason, src/server/strict-http.ts) and logged as
   * one access line and counted, so refused requests do not go unseen.
   */
  onClientError(err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): void {
    const code = err.code ?? 'unknown'
    const written = answerClientError(err, socket)
    const status = written ?? clientErrorAnswer(err).status
    if (code === 'ECONNRESET') return
    this.metrics?.observeRequest({ endpoint: 'unparsed', dataset: '', status, bytes: 0, seconds: 0 })
    this.logger.info(
      {
        status: written ?? undefined,
        error: code,
        // the first bytes the parser refused, as printable ASCII (other bytes as \\xHH)
        raw: err.rawPacket ? printable(redacted(err.rawPacket.subarray(0, 200), this.server?.secretHeader)) : undefined,
        client: (socket as { remoteAddress?: string }).remoteAddress,
      },
      'request refused by the HTTP parser',
    )
  }

  /** answers /health, /ready and /metrics; false for every other path */
  async route(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<boolean> {
    const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname
    if (path !== '/health' && path !== '/ready' && (path !== '/metrics' || !this.metrics)) return false
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET' })
      res.end(`Method ${req.method} not allowed, use GET`)
      return true
    }
    if (path === '/health') {
      send(res, 200, { status: 'ok' })
    } else if (path === '/ready') {
      const r = this.readiness()
      if (r.ready) send(res, 200, { status: 'ready' })
      else send(res, 503, { status: r.status ?? 'starting', reason: r.reason }, { 'Retry-After': '1' })
    } else {
      const body = await this.metrics!.text()
      res.writeHead(200, { 'Content-Type': this.metrics!.contentType, 'Content-Length': Buffer.byteLength(body) })
      res.end(req.method === 'HEAD' ? undefined : body)
    }
    return true
  }
}

function send(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value)
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    ...headers,
  })
  res.end(body)
}
