/**
 * HTTP/1.1 framing the server refuses, with a plain-text reason each:
 *
 * - `Transfer-Encoding` other than exactly `chunked` (e.g. `gzip, chunked`): Node's parser takes
 *   the body as chunked and would hand the handler bytes the client meant to be decoded; RFC 9112
 *   §6.1 says a server that does not understand a transfer coding answers 501 and closes.
 * - requests Node's parser refused (malformed request line or header, headers too large, not
 *   received in time): 400, 431 or 408 with a `text/plain` reason instead of an empty body.
 */
import http from 'node:http'
import type { Duplex } from 'node:stream'
import { HttpError } from './http-error.ts'

/** A 501 for a request whose Transfer-Encoding is not plain `chunked`; null when it is absent or chunked. */
export function transferEncodingError(req: http.IncomingMessage): HttpError | null {
  const te = req.headers['transfer-encoding']
  if (te === undefined || te.trim().toLowerCase() === 'chunked') return null
  return new HttpError(
    501,
    `Not implemented: Transfer-Encoding ${JSON.stringify(te.slice(0, 80))} is not supported (only "chunked"; use Content-Encoding: gzip to compress a body)`,
    { Connection: 'close' },
  )
}

/** printable ASCII only (a reason from the parser goes into a response body and a log line) */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 200)

/** The answer to a request Node's HTTP parser refused: status and plain-text reason. */
export function clientErrorAnswer(err: Error & { code?: string; reason?: string }): {
  status: number
  body: string
} {
  const code = err.code ?? 'unknown'
  if (code === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      body: `Request header fields too large: the request line and headers exceed ${http.maxHeaderSize} bytes`,
    }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT')
    return { status: 408, body: 'Request timeout: the request headers and body did not arrive in time' }
  const why = err.reason ?? err.message
  return { status: 400, body: `Bad request: malformed HTTP request (${printable(`${code}: ${why}`)})` }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
}

/**
 * Answer a refused request as Node would (only if nothing was written on the connection yet, then
 * the connection is closed), with the reason as a text/plain body. Returns the status written, or
 * null when nothing could be written.
 */
export function answerClientError(err: Error & { code?: string; reason?: string }, socket: Duplex): number | null {
  const { status, body } = clientErrorAnswer(err)
  const answer =
    err.code !== 'ECONNRESET' && socket.writable && (socket as { bytesWritten?: number }).bytesWritten === 0
  if (answer)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  socket.destroy()
  return answer ? status : null
}
