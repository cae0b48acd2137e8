/**
 * Reading a request body under one size limit, whatever its framing: a Content-Length body, a
 * chunked body and a gzip body all stop at the same number of bytes of (decoded) JSON text.
 *
 * - identity: the bytes received are counted as they arrive; a declared Content-Length above the
 *   limit is refused before reading.
 * - gzip: the compressed bytes are bounded too (by the limit plus a small slack: deflate never
 *   grows data by more than ~0.03%), and the decoded bytes are counted while decoding, which
 *   stops as soon as they pass the limit, so a small "gzip bomb" costs at most the limit in memory.
 *
 * The default limit lets a query with the default 100,000 filter values through: a base58
 * address is at most 44 characters, 47 bytes with its quotes and comma, so 100,000 of them take
 * ~4.7 MB; 8 MiB leaves room for the rest of the query and for whitespace.
 */
import type http from 'node:http'
import zlib from 'node:zlib'

/** Default body limit (decoded bytes): 8 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

/** Bytes a filter value takes in a query body at most, for sizing the body limit (44 + `"",`). */
export const FILTER_VALUE_BYTES = 47

/**
 * The body limit that fits `maxFilterValues` addresses in one filter list, with 1 MiB for the rest
 * of the query; never below the default.
 */
export function bodyLimitFor(maxFilterValues: number): number {
  return Math.max(DEFAULT_MAX_BODY_BYTES, maxFilterValues * FILTER_VALUE_BYTES + 1024 * 1024)
}

/** A request body that cannot be read as a query: its message is the 400's reason. */
export class RequestBodyError extends Error {}

function tooLarge(maxBytes: number): RequestBodyError {
  return new RequestBodyError(
    `request body is larger than the limit of ${maxBytes} bytes (limit maxBodyBytes, --max-body-bytes)`,
  )
}

/**
 * Reads the body of `req` as UTF-8 text, decoding gzip when Content-Encoding says so; throws
 * RequestBodyError when it is larger than `maxBytes` (decoded), not valid gzip, or encoded otherwise.
 */
export async function readRequestBody(req: http.IncomingMessage, maxBytes: number): Promise<string> {
  const encoding = String(req.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase()
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new RequestBodyError(`unsupported Content-Encoding '${encoding.slice(0, 40)}' (use gzip or none)`)
  }
  const gzip = encoding === 'gzip'
  // compressed input: the limit plus deflate's worst-case overhead
  const maxRaw = gzip ? maxBytes + Math.ceil(maxBytes / 1000) + 1024 : maxBytes
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > maxRaw) throw tooLarge(maxBytes)

  const raw = await collect(req, req, maxRaw, maxBytes)
  if (!gzip) return raw.toString('utf8')
  const gunzip = zlib.createGunzip()
  const decoded = collect(gunzip, null, maxBytes, maxBytes).catch((e: unknown) => {
    if (e instanceof RequestBodyError) throw e
    throw new RequestBodyError(`request body is not valid gzip: ${(e as Error).message}`)
  })
  gunzip.end(raw)
  return (await decoded).toString('utf8')
}

/**
 * The bytes of a readable stream, at most `max` of them; stops reading (and throws) past it. The
 * request is not destroyed on overflow: it is left paused, so that the 400 can still be written.
 */
function collect(
  stream: NodeJS.ReadableStream & { destroy?: () => void },
  req: http.IncomingMessage | null,
  max: number,
  limit: number,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (err: Error | null) => {
      stream.off('data', onData)
      stream.off('end', onEnd)
      stream.off('error', onError)
      if (err) {
        if (req) req.pause()
        else stream.destroy?.()
        reject(err)
      } else resolve(Buffer.concat(chunks, size))
    }
    const onData = (c: Buffer) => {
      size += c.length
      if (size > max) return done(tooLarge(limit))
      chunks.push(c)
    }
    const onEnd = () => done(null)
    const onError = (e: Error) => done(e)
    stream.on('data', onData)
    stream.on('end', onEnd)
    stream.on('error', onError)
  })
}
