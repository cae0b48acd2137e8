/**
 * CORS (`--cors ORIGIN...`, `cors` in the configuration file; off by default): a web page of an
 * allowed origin may call the API from a browser.
 *
 * - Every response to a request from an allowed origin carries `Access-Control-Allow-Origin` (the
 *   origin, with `Vary: Origin`; `*` when any origin is allowed) and exposes the headers a client
 *   reads: `X-Sqd-*` (heads), `X-Request-Id`, `Retry-After`.
 * - A preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin is answered
 *   204 with the methods and the request headers asked for (`Content-Type`, `Authorization`, an API
 *   key header...); from another origin, 403 `text/plain` with the reason. Preflights need no API
 *   key and take no rate limit token (browsers send them without credentials).
 * - Without the option nothing changes: no CORS header, and OPTIONS is 405 as before.
 */
import type http from 'node:http'

export const EXPOSED_HEADERS = [
  'X-Sqd-Head-Number',
  'X-Sqd-Finalized-Head-Number',
  'X-Sqd-Finalized-Head-Hash',
  'X-Request-Id',
  'Retry-After',
].join(', ')

/** how long a browser may cache a preflight answer (seconds) */
const MAX_AGE = '600'

/** a request header list a preflight may ask for: header names separated by commas */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/

/** `*`, or scheme://host[:port] as a browser sends it in `Origin` (no path, no trailing slash) */
export function checkOrigin(origin: string): string {
  if (origin === '*') return origin
  let u: URL | null = null
  try {
    u = new URL(origin)
  } catch {}
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== origin) {
    throw new Error(`an origin is * or scheme://host[:port] (no path, no trailing slash), got '${origin}'`)
  }
  return origin
}

export class Cors {
  private readonly any: boolean
  private readonly origins: ReadonlySet<string>

  constructor(origins: readonly string[]) {
    for (const o of origins) checkOrigin(o)
    this.any = origins.includes('*')
    this.origins = new Set(origins)
  }

  /**
   * Sets the CORS headers of a request from an allowed origin; answers a preflight. True when the
   * request was answered (a preflight), false when the server goes on handling it.
   */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const origin = req.headers.origin
    if (origin === undefined) return false
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined
    if (!this.any && !this.origins.has(origin)) {
      if (!preflight) return false
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', Vary: 'Origin' })
      res.end(`Forbidden: origin ${JSON.stringify(origin.slice(0, 200))} is not allowed (--cors)`)
      return true
    }
    res.setHeader('Access-Control-Allow-Origin', this.any ? '*' : origin)
    if (!this.any) res.setHeader('Vary', 'Origin')
    if (!preflight) {
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS)
      return false
    }
    const asked = req.headers['access-control-request-headers']
    const headers: Record<string, string> = {
      'Access-Control-Allow-Methods': 'GET, HEAD, POST',
      'Access-Control-Max-Age': MAX_AGE,
      'Content-Length': '0',
    }
    if (asked !== undefined && HEADER_LIST.test(asked.trim())) headers['Access-Control-Allow-Headers'] = asked.trim()
    res.writeHead(204, headers)
    res.end()
    return true
  }
}

/** the `Vary` of a response that also varies by `value` (keeps `Origin` set by Cors) */
export function varyWith(res: http.ServerResponse, value: string): string {
  const v = res.getHeader('Vary')
  return v === undefined ? value : `${String(v)}, ${value}`
}
