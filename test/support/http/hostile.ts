/**
 * Helpers for the hostile-client tests: raw sockets (malformed requests, slow uploads, clients that
 * never read), requests from a chosen loopback address, and a query selecting everything.
 */
import http from 'node:http'
import net from 'node:net'
import { everything } from '../../../bench/support.ts'

export { everything }

/** Send raw bytes, collect everything until the server closes (or `ms` pass): the raw answer. */
export function rawExchange(port: number, data: string | Buffer, ms = 5_000): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const s = net.connect(port, '127.0.0.1', () => s.write(data))
    const done = () => {
      clearTimeout(t)
      s.destroy()
      resolve(Buffer.concat(chunks).toString('latin1'))
    }
    const t = setTimeout(done, ms)
    s.on('data', (c: Buffer) => {
      chunks.push(c)
      // one complete answer is enough (keep-alive connections stay open)
      const text = Buffer.concat(chunks).toString('latin1')
      const m = /content-length: (\d+)\r\n/i.exec(text)
      const end = text.indexOf('\r\n\r\n')
      if (m && end >= 0 && text.length >= end + 4 + Number(m[1])) done()
    })
    s.on('error', done)
    s.on('close', done)
  })
}

export function statusOf(raw: string): number {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw)
  return m ? Number(m[1]) : 0
}

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  raw: Buffer
  /** true when the body ended cleanly; false when the connection was cut */
  complete: boolean
}

/** A POST of a JSON body from a chosen local address; the whole answer, noting a cut connection. */
export function postFrom(
  url: string,
  body: unknown,
  opts: { localAddress?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        localAddress: opts.localAddress,
        headers: { 'Content-Type': 'application/json', ...opts.headers },
      },
      (res) => {
        const chunks: Buffer[] = []
        let complete = false
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => (complete = true))
        res.on('error', () => undefined)
        res.on('close', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(chunks), complete }),
        )
      },
    )
    req.on('error', reject)
    req.end(typeof body === 'string' ? body : JSON.stringify(body))
  })
}

/** A stream request whose body arrives one byte every `everyMs` (never completes on its own). */
export function slowUpload(port: number, everyMs: number, localAddress = '127.0.0.1'): { answer: Promise<string> } {
  const body = JSON.stringify({ fromBlock: 0 }) + ' '.repeat(200)
  const s = net.connect({ port, host: '127.0.0.1', localAddress })
  const chunks: Buffer[] = []
  let i = 0
  let timer: NodeJS.Timeout | undefined
  s.on('connect', () => {
    s.write(
      `POST /datasets/d/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    )
    timer = setInterval(() => {
      if (i < body.length) s.write(body[i++])
    }, everyMs)
  })
  s.on('data', (c: Buffer) => chunks.push(c))
  const answer = new Promise<string>((resolve) => {
    const done = () => {
      clearInterval(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    }
    s.on('close', done)
    s.on('error', () => undefined)
  })
  return { answer }
}

/** A complete stream request from a client that never reads the answer; `close()` drops it. */
export function neverReader(port: number, path: string, body: unknown, gzip = false): { close: () => void } {
  const text = JSON.stringify(body)
  const s = net.connect(port, '127.0.0.1', () => {
    s.pause()
    s.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        (gzip ? 'Accept-Encoding: gzip\r\n' : '') +
        `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    )
  })
  s.on('error', () => undefined)
  return { close: () => s.destroy() }
}

/** poll `cond` every 20 ms until it holds; throws after `ms` */
export async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
