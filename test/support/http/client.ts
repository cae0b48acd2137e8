/**
 * A small real HTTP client for end-to-end tests (node:http, loopback only).
 */
import http from 'node:http'
import zlib from 'node:zlib'

export interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  /** the decoded body (gunzipped when Content-Encoding: gzip) */
  text: string
  /** raw bytes as received */
  raw: Buffer
}

export interface RequestOpts {
  method?: string
  headers?: Record<string, string>
  body?: string | Buffer
}

export function request(url: string, opts: RequestOpts = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const raw = Buffer.concat(chunks)
        const text =
          res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw).toString('utf8') : raw.toString('utf8')
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, raw })
      })
    })
    req.on('error', reject)
    if (opts.body != null) req.write(opts.body)
    req.end()
  })
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return request(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

export function lines(r: Reply): unknown[] {
  return r.text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l))
}

interface Header {
  number: number
  hash: string
}

/**
 * Stream a bounded range the way Portal clients do: re-request from last+1 (with
 * parentBlockHash) until the block `toBlock`, or an empty 200, arrives. Returns every line.
 */
export async function streamAll(
  base: string,
  query: Record<string, unknown>,
  maxRequests = 10_000,
): Promise<{ lines: string[]; requests: number }> {
  const out: string[] = []
  let fromBlock = query.fromBlock as number
  let parentBlockHash: string | undefined = query.parentBlockHash as string | undefined
  const toBlock = query.toBlock as number
  for (let i = 1; i <= maxRequests; i++) {
    const r = await postJson(`${base}/stream`, { ...query, fromBlock, ...(parentBlockHash ? { parentBlockHash } : {}) })
    if (r.status !== 200) throw new Error(`status ${r.status}: ${r.text}`)
    const ls = r.text.split('\n').filter((l) => l.length > 0)
    if (ls.length === 0) return { lines: out, requests: i }
    out.push(...ls)
    const last = (JSON.parse(ls[ls.length - 1]) as { header: Header }).header
    if (last.number >= toBlock) return { lines: out, requests: i }
    fromBlock = last.number + 1
    parentBlockHash = last.hash
  }
  throw new Error('too many requests')
}
