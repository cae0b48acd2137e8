/**
 * Where CAR bytes come from: a local file, or an `http(s)://` URL read with Range requests. A
 * download that breaks (a reset, a cut connection, a body shorter than announced) is resumed
 * from the byte it stopped at (`Range: bytes=N-`, the answer must be 206 from N), up to
 * `retries` times in a row without progress, waiting 0.2 s, 0.4 s, ... (at most 5 s) between tries.
 */
import { createReadStream } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import { looksLikeCar } from './reader.ts'

export function isUrl(s: string): boolean {
  return /^https?:\/\//i.test(s)
}

const READ_CHUNK = 256 * 1024

export interface SourceOptions {
  /** failed attempts in a row (no byte received) before giving up (default 8) */
  retries?: number
  /** first wait between attempts, ms (default 200; doubled each time, at most 5 s) */
  backoffMs?: number
  /** told of each resumption */
  onResume?: (offset: number, reason: string) => void
}

/** The bytes of a file or URL, streamed; each chunk is a fresh buffer (views of it stay valid). */
export async function* sourceBytes(src: string, opts: SourceOptions = {}): AsyncGenerator<Uint8Array> {
  if (!isUrl(src)) {
    yield* createReadStream(src, { highWaterMark: READ_CHUNK }) as AsyncIterable<Buffer>
    return
  }
  let offset = 0
  let total: number | null = null
  let failures = 0
  const retries = opts.retries ?? 8
  for (;;) {
    let res: http.IncomingMessage
    try {
      res = await get(src, offset > 0 ? { Range: `bytes=${offset}-` } : {})
    } catch (e) {
      if (++failures > retries) throw new Error(`${src}: ${(e as Error).message} (after ${retries} retries)`)
      opts.onResume?.(offset, (e as Error).message)
      await sleep(Math.min(5000, (opts.backoffMs ?? 200) * 2 ** (failures - 1)))
      continue
    }
    if (offset > 0) {
      const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(String(res.headers['content-range'] ?? ''))
      if (res.statusCode !== 206 || !range || Number(range[1]) !== offset) {
        res.destroy()
        throw new Error(
          `${src}: the server does not resume at byte ${offset} (HTTP ${res.statusCode}, Range requests unsupported?)`,
        )
      }
      if (range[2] !== '*') total = Number(range[2])
    } else {
      if (res.statusCode !== 200) {
        res.destroy()
        throw new Error(`${src}: HTTP ${res.statusCode}`)
      }
      const len = res.headers['content-length']
      if (len !== undefined) total = Number(len)
    }
    let got = 0
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        got += chunk.length
        offset += chunk.length
        failures = 0
        yield chunk
      }
    } catch (e) {
      if (++failures > retries)
        throw new Error(`${src}: ${(e as Error).message} at byte ${offset} (after ${retries} retries)`)
      opts.onResume?.(offset, (e as Error).message)
      await sleep(Math.min(5000, (opts.backoffMs ?? 200) * 2 ** (failures - 1)))
      continue
    }
    if (total === null || offset >= total) return
    // the body ended short of the announced length: resume
    if (got === 0 && ++failures > retries) throw new Error(`${src}: body ends at byte ${offset} of ${total}`)
    opts.onResume?.(offset, `body ended at byte ${offset} of ${total}`)
  }
}

function get(url: string, headers: Record<string, string>): Promise<http.IncomingMessage> {
  const mod = url.startsWith('https:') ? https : http
  return new Promise((resolve, reject) => {
    const req = mod.get(url, { headers: { ...headers, 'accept-encoding': 'identity' } }, resolve)
    req.on('error', reject)
    req.setTimeout(60_000, () => req.destroy(new Error('no answer for 60 s')))
  })
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** The size of a file or URL (HEAD; null when the server does not say). */
export async function sourceSize(src: string): Promise<number | null> {
  if (!isUrl(src)) return (await stat(src)).size
  const mod = src.startsWith('https:') ? https : http
  return new Promise((resolve) => {
    const req = mod.request(src, { method: 'HEAD' }, (res) => {
      res.resume()
      const n = Number(res.headers['content-length'])
      resolve(res.statusCode === 200 && Number.isFinite(n) ? n : null)
    })
    req.on('error', () => resolve(null))
    req.setTimeout(30_000, () => req.destroy())
    req.end()
  })
}

/** Is this input a CAR file (by its first bytes; URLs are taken as CAR files)? */
export async function isCarInput(src: string): Promise<boolean> {
  if (isUrl(src)) return true
  const fh = await open(src, 'r')
  try {
    const head = Buffer.alloc(64)
    const { bytesRead } = await fh.read(head, 0, 64, 0)
    return looksLikeCar(head.subarray(0, bytesRead))
  } finally {
    await fh.close()
  }
}
