/**
 * The Portal HTTP interface (docs/query.md §4-§5) on node:http.
 *
 * Routes (per dataset, `{name}` being a dataset name or alias):
 *   POST /datasets/{name}/stream, /finalized-stream
 *   GET  /datasets, /datasets/{name}, /datasets/{name}/metadata, /head, /finalized-head,
 *        /datasets/{name}/timestamps/{seconds}/block
 *   GET  /openapi.json, / (the query page; src/server/pages.ts)
 *
 * Responses are streamed block by block (`line-writer.ts`): every write waits for the socket (or
 * gzip stream) to drain and for room in the global in-flight byte budget, so a slow client slows
 * its query down instead of filling memory.
 *
 * Hostile and slow clients: stream requests, timestamp lookups and malformed requests count
 * against the per-address rate limit; a stream
 * request first counts against its address's concurrent stream cap (429), and takes one of the
 * global stream slots (503) only once its body is read and valid; the body must arrive within
 * `bodyTimeoutMs` (408); a response whose socket takes no byte for `writeTimeoutMs` is destroyed.
 */
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseQuery, QueryError } from '../query/index.ts'
import type { ParsedQuery } from '../query/index.ts'
import { defaultLogger } from '../log.ts'
import { ByteBudget, RenderScheduler } from './budget.ts'
import type { Dataset, DatasetRegistry } from './datasets.ts'
import { metadataOf } from './datasets.ts'
import { LogLimiter, PerClientCap, RateLimiter, type RateLimit } from './guards.ts'
import { allows, type ApiKeys, type KeyClient } from './access.ts'
import { varyWith, type Cors } from './cors.ts'
import type { TrustedProxies } from './proxy.ts'
import { readRequestBody, RequestBodyError } from './body.ts'
import { answerClientError, transferEncodingError } from './strict-http.ts'
import { jsonShapeError, jsonShapeLimits, type JsonShapeLimits } from './json-shape.ts'
import { badRequest, HttpError, parseTarget } from './http-error.ts'
import { LineWriter } from './line-writer.ts'
import type { Observer } from './observe.ts'
import { Pages } from './pages.ts'
import type { PoolStream, RenderPool } from './render-pool.ts'
import { ResponseBlocks } from './stream-blocks.ts'
import { followHead, headHeaders, startingHead } from './stream-protocol.ts'
import { firstBlockAtOrAfter } from './timestamps.ts'
import { MemoryGate } from './memory-gate.ts'
import { DEFAULT_LIMITS, type ServerLimits } from './limits.ts'
import { errorDetail } from '../util/errors.ts'

export type { RateLimit } from './guards.ts'
export { DEFAULT_LIMITS, type ServerLimits } from './limits.ts'

export interface ServerOptions {
  /** absent while the datasets load (see setDatasets): dataset routes answer 503 + Retry-After */
  datasets?: DatasetRegistry | null
  limits?: Partial<ServerLimits>
  /** per-client rate limit of requests; null disables it */
  rateLimit?: RateLimit | null
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void
  /** request ids, access log, metrics, /health, /ready and /metrics (src/server/observe.ts) */
  observer?: Observer | null
  /**
   * worker threads rendering the finalized ranges of datasets with a `coldDir`
   * (src/server/render-pool.ts); the caller closes it after the server
   */
  renderPool?: RenderPool | null
  /** API keys (src/server/access.ts); null or absent: none needed */
  apiKeys?: ApiKeys | null
  /** origins allowed to call from a browser (src/server/cors.ts); null or absent: no CORS */
  cors?: Cors | null
  /** proxies whose X-Forwarded-For / Forwarded name the client (src/server/proxy.ts) */
  trustProxy?: TrustedProxies | null
}

export class PortalServer {
  readonly server: http.Server
  private readonly limits: ServerLimits
  private readonly limiter: RateLimiter | null
  private readonly perClient: PerClientCap
  private readonly budget: ByteBudget
  private readonly scheduler: RenderScheduler
  private readonly memoryGate: MemoryGate
  private readonly log: NonNullable<ServerOptions['log']>
  /** failures that are not the client's fault, at most a few lines per window */
  private readonly errorLog: LogLimiter
  private activeStreams = 0
  private readonly pages: Pages
  /** what a request body may hold before JSON.parse (src/server/json-shape.ts) */
  private readonly jsonShape: JsonShapeLimits
  private registry: DatasetRegistry | null
  /** aborted on close(): waiting/tailing responses end promptly, on a complete line */
  private readonly closing = new AbortController()
  /** the API key of each authenticated request */
  private readonly keyOfRequest = new WeakMap<http.IncomingMessage, KeyClient>()

  constructor(private readonly opts: ServerOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits }
    // every open stream listens on it
    setMaxListeners(0, this.closing.signal)
    this.limiter = opts.rateLimit ? new RateLimiter(opts.rateLimit) : null
    this.perClient = new PerClientCap(this.limits.maxStreamsPerClient)
    this.budget = new ByteBudget(this.limits.streamBufferBytes)
    this.scheduler = new RenderScheduler(
      this.limits.renderConcurrency,
      this.budget,
      this.limits.smallResponseBytes,
      undefined,
      this.limits.shortResponseBlocks,
    )
    this.memoryGate = new MemoryGate(this.limits.memoryLimitBytes)
    const { maxItemRequests, maxFilterValues, maxBodyBytes } = this.limits
    // the OpenAPI document tells of API keys and CORS when the server has them
    const access = { apiKeyHeader: opts.apiKeys?.header, cors: opts.cors != null }
    this.pages = new Pages({ limits: { maxItemRequests, maxFilterValues }, maxBodyBytes, ...access })
    this.jsonShape = jsonShapeLimits({ maxItemRequests, maxFilterValues })
    this.log = opts.log ?? ((level, msg) => defaultLogger()[level](msg))
    this.registry = opts.datasets ?? null
    const observer = opts.observer ?? null
    observer?.attach(this)
    this.errorLog = new LogLimiter((msg) => this.log('error', msg))
    const bodyTimeout = this.limits.bodyTimeoutMs
    this.server = http.createServer(
      {
        keepAliveTimeout: 30_000,
        requestTimeout: bodyTimeout,
        headersTimeout: bodyTimeout,
        connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(bodyTimeout / 4))),
      },
      (req, res) => {
        observer?.onRequest(req, res)
        const te = transferEncodingError(req)
        if (te) return this.fail(res, te)
        this.handle(req, res).catch((err) => this.fail(res, err))
      },
    )
    this.server.on('clientError', (err: Error, socket) =>
      observer ? observer.onClientError(err, socket) : answerClientError(err, socket),
    )
  }

  /** the served datasets; null while they load */
  get datasets(): DatasetRegistry | null {
    return this.registry
  }

  /** start serving the datasets (the server may listen before they are loaded) */
  setDatasets(registry: DatasetRegistry): void {
    this.registry = registry
  }

  /** bytes of responses in flight across streams (see `streamBufferBytes`) */
  get bufferedBytes(): number {
    return this.budget.inFlight
  }

  /** open stream responses */
  get activeStreamCount(): number {
    return this.activeStreams
  }

  /** stream requests (uploading or answered) open from one client address */
  streamsOf(address: string): number {
    return this.perClient.count(address)
  }

  /** the client address of a request (limits, access log) */
  clientAddress(req: http.IncomingMessage): string {
    const peer = req.socket.remoteAddress ?? ''
    const proxies = this.opts.trustProxy
    return proxies ? proxies.clientOf(peer, req.headers.forwarded, req.headers['x-forwarded-for']) : peer
  }

  /** the header holding API keys, when it is not Authorization (never logged) */
  get secretHeader(): string | undefined {
    return this.opts.apiKeys?.header
  }

  /** the id of the API key a request was authenticated with (never the key) */
  keyIdOf(req: http.IncomingMessage): string | undefined {
    return this.keyOfRequest.get(req)?.id
  }

  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, host, () => {
        this.server.off('error', reject)
        resolve()
      })
    })
    const a = this.server.address() as AddressInfo
    const h = a.family === 'IPv6' ? `[${a.address}]` : a.address
    return `http://${h}:${a.port}`
  }

  /**
   * Stop accepting connections; open streams end on a complete line with a closed gzip stream;
   * connections still open after `shutdownGraceMs` (clients that do not read) are cut.
   */
  async close(): Promise<void> {
    this.closing.abort()
    const cut = setTimeout(() => this.server.closeAllConnections(), this.limits.shutdownGraceMs)
    cut.unref()
    try {
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve())
        this.server.closeIdleConnections()
      })
    } finally {
      clearTimeout(cut)
    }
  }

  private fail(res: http.ServerResponse, err: unknown): void {
    if (err instanceof HttpError) {
      if (!res.headersSent) {
        res.writeHead(err.status, {
          'Content-Type': 'text/plain; charset=utf-8',
          'Content-Length': Buffer.byteLength(err.message),
          ...err.headers,
        })
        res.end(err.message)
      } else res.end()
      return
    }
    this.errorLog.log(`request failed: ${errorDetail(err)}`)
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' })
      res.end('Internal server error')
    } else {
      // the body may be incomplete: cut the connection rather than end it cleanly
      res.destroy()
    }
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // CORS headers on every answer (errors included); a preflight is answered here
    if (this.opts.cors?.handle(req, res)) return
    let target: ReturnType<typeof parseTarget>
    try {
      target = parseTarget(req.url)
    } catch (e) {
      this.rateLimit(req) // malformed requests count too
      throw e
    }
    const { pathname, parts, search } = target
    // /health, /ready, /metrics: never limited (probes)
    if (this.opts.observer && (await this.opts.observer.route(req, res, pathname))) return
    if (parts[0] !== 'datasets') {
      // the OpenAPI document and the query page
      if (this.pages.handle(req, res, pathname)) return
      throw new HttpError(404, 'Not found')
    }
    const key = this.authenticate(req)
    const expand = search.getAll('expand[]').includes('metadata')
    const datasets = this.registry
    if (!datasets) throw new HttpError(503, 'Starting: the datasets are loading, retry later', { 'Retry-After': '1' })

    if (parts.length === 1) {
      this.allow(req, 'GET')
      return sendJson(
        res,
        datasets.all.filter((d) => !key || allows(key, d)).map((d) => metadataOf(d, expand)),
      )
    }
    const ds = datasets.get(parts[1])
    // the name comes from the request: quoted and escaped, cut at 100 characters
    if (!ds) throw new HttpError(404, `Dataset ${JSON.stringify(parts[1].slice(0, 100))} not found`)
    if (key) this.opts.apiKeys!.authorize(key, ds)
    const rest = parts.slice(2).join('/')

    switch (rest) {
      case '':
      case 'metadata':
        this.allow(req, 'GET')
        return sendJson(res, metadataOf(ds, expand))
      case 'head':
        this.allow(req, 'GET')
        return sendJson(res, ds.store.head())
      case 'finalized-head':
        this.allow(req, 'GET')
        return sendJson(res, ds.store.finalizedHead())
      case 'stream':
        this.allow(req, 'POST')
        return this.stream(req, res, ds, false)
      case 'finalized-stream':
        this.allow(req, 'POST')
        return this.stream(req, res, ds, true)
    }
    if (parts.length === 5 && parts[2] === 'timestamps' && parts[4] === 'block') {
      this.allow(req, 'GET')
      this.rateLimit(req)
      return this.timestampToBlock(res, ds, parts[3])
    }
    throw new HttpError(404, 'Not found')
  }

  /**
   * With API keys: the request's key (a request without a valid one is refused with 401, and takes
   * a token of its address's rate limit: keys cannot be guessed at full speed); null without keys.
   */
  private authenticate(req: http.IncomingMessage): KeyClient | null {
    const keys = this.opts.apiKeys
    if (!keys) return null
    let key: KeyClient
    try {
      key = keys.authenticate(req)
    } catch (e) {
      this.rateLimit(req)
      throw e
    }
    this.keyOfRequest.set(req, key)
    return key
  }

  /**
   * stream requests, timestamp lookups and malformed requests of a client address (or of an API
   * key, with its own rate) take a token
   */
  private rateLimit(req: http.IncomingMessage): void {
    const key = this.keyOfRequest.get(req)
    const limiter = key ? key.limiter : this.limiter
    if (!limiter) return
    const wait = limiter.take(key ? '' : this.clientAddress(req))
    if (wait > 0) throw new HttpError(429, 'Too many requests', { 'Retry-After': String(wait) })
  }

  private allow(req: http.IncomingMessage, method: string): void {
    if (req.method !== method) {
      throw new HttpError(405, `Method ${req.method} not allowed, use ${method}`, { Allow: method })
    }
  }

  private async timestampToBlock(res: http.ServerResponse, ds: Dataset, arg: string): Promise<void> {
    if (!/^\d{1,15}$/.test(arg)) throw badRequest(`timestamp must be a non-negative integer of seconds, got '${arg}'`)
    const ts = Number(arg)
    const head = ds.store.head()
    if (head) {
      const n = await firstBlockAtOrAfter(ds.store, ds.start(), head.number, ts)
      if (n != null) return sendJson(res, { block_number: n })
    }
    res.writeHead(404, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify({ message: `no block with a timestamp at or after ${ts}` }))
  }

  private async stream(req: http.IncomingMessage, res: http.ServerResponse, ds: Dataset, finalizedOnly: boolean) {
    this.rateLimit(req)
    const key = this.keyOfRequest.get(req)
    // an API key's streams count against its own cap, others against their address's
    const cap = key ? key.cap : this.perClient
    const client = key ? '' : this.clientAddress(req)
    if (!cap.enter(client)) {
      const whose = key ? 'with this API key' : 'from this address'
      throw new HttpError(429, `Too many concurrent streams ${whose}, retry later`, { 'Retry-After': '1' })
    }
    try {
      const { q, body } = await this.readQuery(req, ds)
      // the slot is taken only now: a client uploading slowly holds none
      if (this.activeStreams >= this.limits.maxConcurrentStreams) {
        throw new HttpError(503, 'Too many concurrent streams, retry later', { 'Retry-After': '1' })
      }
      this.activeStreams++
      try {
        await this.streamQuery(req, res, ds, q, body, finalizedOnly)
      } finally {
        this.activeStreams--
      }
    } finally {
      cap.leave(client)
    }
  }

  private async readQuery(req: http.IncomingMessage, ds: Dataset): Promise<{ q: ParsedQuery; body: unknown }> {
    const contentType = req.headers['content-type'] ?? ''
    if (!/^application\/(.+\+)?json\b/i.test(contentType)) {
      throw badRequest(`Content-Type must be application/json, got '${contentType}'`)
    }
    let body: string
    try {
      body = await readRequestBody(req, this.limits.maxBodyBytes)
    } catch (e) {
      if (!(e instanceof RequestBodyError)) throw e
      // the rest of the body is not read: the connection closes after the 400
      throw new HttpError(400, `Bad request: ${e.message}`, { Connection: 'close' })
    }
    // before JSON.parse: a deeply nested or container-packed body costs seconds of parsing
    const shape = jsonShapeError(body, this.jsonShape)
    if (shape) throw badRequest(shape)
    let json: unknown
    try {
      json = JSON.parse(body)
    } catch (e) {
      throw badRequest(`request body is not valid JSON: ${(e as Error).message}`)
    }
    let q: ParsedQuery
    try {
      q = parseQuery(json, {
        maxItemRequests: this.limits.maxItemRequests,
        maxFilterValues: this.limits.maxFilterValues,
      })
    } catch (e) {
      if (e instanceof QueryError) throw badRequest(e.message)
      throw e
    }
    const start = ds.start()
    if (q.fromBlock < start) throw badRequest(`dataset starts from block ${start}`)
    return { q, body: json }
  }

  private async streamQuery(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    ds: Dataset,
    q: ParsedQuery,
    body: unknown,
    finalizedOnly: boolean,
  ) {
    // `gone`: the client went away (or its response was destroyed); `stop`: that, or the server
    // is closing (waits end at once, the response ends cleanly on a complete line)
    const gone = new AbortController()
    const onClose = () => gone.abort()
    res.on('close', onClose)
    const stop = AbortSignal.any([gone.signal, this.closing.signal])
    // the finalized part of the range rendered by worker threads (when the dataset allows it)
    const pool = this.opts.renderPool
    const pooled =
      pool?.enabled && ds.coldDir != null
        ? pool.stream(
            ds.coldDir,
            body,
            { maxItemRequests: this.limits.maxItemRequests, maxFilterValues: this.limits.maxFilterValues },
            ds.bigintsAsNumbers ?? false,
            this.budget,
          )
        : null
    try {
      await this.respond(req, res, ds, q, finalizedOnly, gone.signal, stop, pooled)
    } finally {
      pooled?.close()
      res.off('close', onClose)
    }
  }

  /**
   * A stream's answer: 204 or 409 before it starts (src/server/stream-protocol.ts), else the
   * blocks of its first range and of each head it follows while it may (src/server/stream-blocks.ts).
   */
  private async respond(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    ds: Dataset,
    q: ParsedQuery,
    finalizedOnly: boolean,
    gone: AbortSignal,
    stop: AbortSignal,
    pooled: PoolStream | null,
  ): Promise<void> {
    let head = await startingHead(res, ds, q, finalizedOnly, this.limits.headWaitMs, gone, stop)
    if (!head) return
    // blocks the request asks for, up to the current head: a client following the head asks for
    // few (its later blocks arrive while it waits), one reading from far back for many
    const span = Math.min(q.toBlock ?? Number.MAX_SAFE_INTEGER, head.number) - q.fromBlock
    const out = this.lineWriter(req, res, ds, finalizedOnly, span, gone)
    const deadline = Date.now() + this.limits.responseTimeMs
    const shouldStop = () => stop.aborted || out.bytes >= this.limits.responseBytes || Date.now() >= deadline
    const { scheduler } = this
    const pool = this.opts.renderPool ?? null
    const memoryGate = this.memoryGate.limitBytes > 0 ? this.memoryGate : null
    const blocks = new ResponseBlocks({
      ...{ ds, out, scheduler, span, finalizedOnly, gone, shouldStop, pool, pooled },
      memoryGate,
    })
    try {
      let from = q.fromBlock
      for (;;) {
        const to = Math.min(q.toBlock ?? Number.MAX_SAFE_INTEGER, head.number)
        await blocks.writeRange(from === q.fromBlock ? q : { ...q, fromBlock: from }, to)
        const last = blocks.last
        if (gone.aborted || shouldStop() || last == null) break
        const next = await followHead(ds, q, last, to, finalizedOnly, out, deadline, stop)
        if (!next) break
        head = next
        from = last.number + 1
      }
      await blocks.end()
      await out.end()
    } catch (err) {
      // Nothing sent yet: the caller answers 5xx. Lines sent: cut the connection (no clean end of
      // the body), so the client sees a failure and never takes a short answer for a complete one.
      if (!out.started) throw err
      this.errorLog.log(
        `stream of ${ds.name} failed after block ${blocks.last?.number ?? '-'}: ${(err as Error).stack ?? err}`,
      )
      out.destroy()
    }
  }

  /** the writer of a 200 stream answer (sent with its first line: a failure before it is still a 5xx) */
  private lineWriter(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    ds: Dataset,
    finalizedOnly: boolean,
    span: number,
    gone: AbortSignal,
  ): LineWriter {
    const gzip = acceptsGzip(req.headers['accept-encoding'])
    const headers: Record<string, string> = {
      'Content-Type': 'application/jsonl',
      Vary: varyWith(res, 'Accept-Encoding'),
      ...headHeaders(ds, finalizedOnly),
    }
    if (gzip) headers['Content-Encoding'] = 'gzip'
    return new LineWriter(
      res,
      {
        headers,
        gzipLevel: gzip ? this.limits.gzipLevel : null,
        writeTimeoutMs: this.limits.writeTimeoutMs,
        budget: this.budget,
        reserveBytes: this.scheduler.reserveBytesOf(span),
      },
      gone,
    )
  }
}

function sendJson(res: http.ServerResponse, value: unknown): void {
  const body = JSON.stringify(value)
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) })
  res.end(body)
}

/**
 * gzip unless the client refuses it or does not ask for it (docs/query.md §4, §6). As in HTTP's
 * content negotiation, `gzip` (or its alias `x-gzip`) named in the header decides by its own
 * q-value, and `*` only speaks for codings the header does not name: `gzip;q=0, *` refuses gzip.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (!header) return false
  const v = Array.isArray(header) ? header.join(',') : header
  let named: boolean | undefined
  let star: boolean | undefined
  for (const part of v.split(',')) {
    const [name, ...params] = part.trim().split(';')
    const coding = name.trim().toLowerCase()
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') continue
    const qp = params.map((p) => p.trim().toLowerCase()).find((p) => /^q\s*=/.test(p))
    const ok = !(qp && Number(qp.slice(qp.indexOf('=') + 1).trim()) === 0)
    if (coding === '*') star ??= ok
    else named = named === true || ok
  }
  return named ?? star ?? false
}
