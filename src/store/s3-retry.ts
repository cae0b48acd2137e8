/**
 * Requests to object storage: each attempt timed out when it makes no progress, retried with
 * backoff unless the key is missing, one log line per attempt.
 */
import { NoSuchKey } from '@aws-sdk/client-s3'

/** a log line: `warn` for a failed or retried request, `debug` for every request done */
export type S3Log = (msg: string, level?: 'warn' | 'debug') => void

export interface RetryOptions {
  /** attempts of one request in all (default 6) */
  attempts?: number
  /** first backoff; doubled each time (default 250 ms) */
  baseMs?: number
  /**
   * an attempt fails when it makes no progress for this long (default 10 s): no response headers,
   * no body bytes; a PUT or a LIST, which report no progress, get this long plus 1 s per MB sent
   */
  timeoutMs?: number
  log?: S3Log
}

export const DEFAULT_S3_TIMEOUT_MS = 10_000

export function isMissing(e: unknown): boolean {
  const x = e as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e instanceof NoSuchKey || x?.name === 'NoSuchKey' || x?.$metadata?.httpStatusCode === 404
}

/** an object whose bytes differ from what the pointer or catalogue says (fetched again) */
export class DamagedObject extends Error {}

/** an attempt that made no progress for its timeout */
export class StalledRequest extends Error {}

/** what one attempt is given: the signal aborting it, and a call for each sign of progress */
export interface Attempt {
  signal: AbortSignal
  progress(): void
}

/**
 * One attempt of `op`, failed (and its request aborted) when it makes no progress for `ms`: the
 * promise settles by then whether or not the client honours the abort.
 */
function attemptWithin<T>(what: string, ms: number, op: (a: Attempt) => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const ac = new AbortController()
    let timer: NodeJS.Timeout | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        const e = new StalledRequest(`no progress for ${ms} ms (timed out)`)
        ac.abort(e)
        reject(e)
      }, ms)
    }
    arm()
    op({ signal: ac.signal, progress: arm }).then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (e: unknown) => {
        clearTimeout(timer)
        reject(e)
      },
    )
  })
}

/**
 * Run `op` with a timeout per attempt (see RetryOptions.timeoutMs), again (with backoff) when it
 * fails for another reason than a missing key, at most `attempts` times; one log line per attempt.
 * `health` hears of each attempt: reached (true) or not (false), for /ready.
 */
export async function withRetry<T>(
  what: string,
  op: (a: Attempt) => Promise<T>,
  o: RetryOptions & { extraMs?: number },
  health?: (reached: boolean, why?: string) => void,
): Promise<T> {
  const attempts = o.attempts ?? 6
  const ms = (o.timeoutMs ?? DEFAULT_S3_TIMEOUT_MS) + (o.extraMs ?? 0)
  for (let i = 1; ; i++) {
    const t0 = Date.now()
    try {
      const r = await attemptWithin(what, ms, op)
      health?.(true)
      o.log?.(`s3: ${what}: done in ${Date.now() - t0} ms (attempt ${i})`, 'debug')
      return r
    } catch (e) {
      if (isMissing(e)) {
        health?.(true)
        o.log?.(`s3: ${what}: no such key (${Date.now() - t0} ms)`, 'debug')
        throw e
      }
      if (!(e instanceof DamagedObject)) health?.(false, `${what}: ${errText(e)}`)
      if (i >= attempts) {
        o.log?.(
          `s3: ${what} failed (${errText(e)}) after ${Date.now() - t0} ms, attempt ${i} of ${attempts}, giving up`,
        )
        throw e
      }
      const wait = (o.baseMs ?? 250) * 2 ** (i - 1)
      o.log?.(
        `s3: ${what} failed (${errText(e)}) after ${Date.now() - t0} ms, attempt ${i} of ${attempts}, retrying in ${wait} ms`,
      )
      await new Promise((r) => setTimeout(r, wait))
    }
  }
}

export function errText(e: unknown): string {
  const x = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }
  const status = x?.$metadata?.httpStatusCode
  return `${x?.name ?? 'Error'}${status ? ` ${status}` : ''}: ${x?.message ?? String(e)}`
}
