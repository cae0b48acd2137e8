/**
 * The fake node's HTTP server side: POSTed JSON-RPC requests (single or batches; `GET /health`),
 * the API key a provider requires (401), gzip-compressed bodies and answers (415 when refused),
 * and the HTTP faults drawn per request: 429 with Retry-After, a connection dropped before or in
 * the middle of the answer, and a stalled answer (faults.ts `stall`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { gunzipSync, gzipSync } from 'node:zlib'
import { StallRequest } from './errors.ts'
import { handleOne, type NodeContext } from './methods.ts'

/** answered already (a GET, a wrong method, a missing API key), else false */
function refused(ctx: NodeContext, req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'POST') {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
      return true
    }
    res
      .writeHead(405, { 'content-type': 'text/plain' })
      .end('Used HTTP Method is not allowed. POST or OPTIONS is required')
    return true
  }
  for (const [name, value] of Object.entries(ctx.opts.requireHeaders)) {
    if (req.headers[name.toLowerCase()] !== value) {
      ctx.stats.unauthorized++
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Unauthorized: a valid API key is required')
      return true
    }
  }
  return false
}

/** the request's body, gunzipped when it came compressed; null when refused (answered already) */
function requestBody(ctx: NodeContext, req: IncomingMessage, res: ServerResponse, raw: Buffer): Buffer | null {
  if (!/gzip/i.test(req.headers['content-encoding'] ?? '')) return raw
  if (!ctx.opts.gzip || ctx.opts.refuseGzipRequests) {
    ctx.stats.refusedGzip++
    res.writeHead(415, { 'content-type': 'text/plain' }).end('Unsupported Content-Encoding')
    return null
  }
  try {
    raw = gunzipSync(raw)
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('Bad gzip body')
    return null
  }
  ctx.stats.gzipRequests++
  return raw
}

/** the answer's text (throws StallRequest for a stalled one) */
function answerText(ctx: NodeContext, raw: Buffer): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(raw.toString('utf8'))
  } catch {
    parsed = undefined
  }
  if (parsed === undefined) return '{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}'
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request"},"id":null}'
    return `[${parsed.map((p) => handleOne(ctx, p)).join(',')}]`
  }
  return handleOne(ctx, parsed) ?? ''
}

/** the connection dies: at once, or after the headers and half the body */
function dropAnswer(ctx: NodeContext, req: IncomingMessage, res: ServerResponse, body: string): void {
  ctx.stats.dropped++
  if (ctx.faultRnd() < 0.5) {
    req.socket.destroy()
  } else {
    // headers and part of the body, then the connection dies
    const buf = Buffer.from(body, 'utf8')
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(buf.length) })
    res.write(buf.subarray(0, Math.floor(buf.length / 2)), () => req.socket.destroy())
  }
}

/** a whole request received: its answer, or the faults drawn for it */
function answer(ctx: NodeContext, req: IncomingMessage, res: ServerResponse, chunks: Buffer[]): void {
  const { opts, stats } = ctx
  stats.requests++
  if (refused(ctx, req, res)) return
  const raw = requestBody(ctx, req, res, Buffer.concat(chunks))
  if (raw === null) return
  const zipAnswer = opts.gzip && /\bgzip\b/i.test(String(req.headers['accept-encoding'] ?? ''))
  if (opts.rate429 > 0 && ctx.faultRnd() < opts.rate429) {
    stats.injected429++
    res
      .writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(opts.retryAfterSec) })
      .end('Too many requests for a specific RPC call')
    return
  }
  const drop = opts.dropRate > 0 && ctx.faultRnd() < opts.dropRate
  let body: string
  try {
    body = answerText(ctx, raw)
  } catch (e) {
    if (!(e instanceof StallRequest)) throw e
    // the answer starts, then nothing: the connection stays open until the client gives up
    stats.stalls++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"jsonrpc":"2.0",')
    return
  }
  if (drop) return dropAnswer(ctx, req, res, body)
  if (zipAnswer) {
    stats.gzipAnswers++
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(body))
    return
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(body)
}

/** the server's request handler */
export function onRequest(ctx: NodeContext, req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => answer(ctx, req, res, chunks))
}
