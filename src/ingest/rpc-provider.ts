/**
 * What RPC providers need of a client (src/ingest/rpc/ `RpcClient`): a request-rate cap that a
 * 429's Retry-After pauses for every request, a summary of the node's refusals and failures in one
 * log line a minute instead of a line each, the `--rpc-header` values, and a node URL fit for logs
 * (no credentials, no API key in its path or query).
 */
import { sleep } from './rpc/errors.ts'
import { type RpcClientOptions } from './rpc/client.ts'

/**
 * Requests at most `rps` a second, spread evenly (a request waits for its turn); `pauseFor` holds
 * every request back (a 429's Retry-After applies to the client, not to one request).
 */
export class RequestLimiter {
  private readonly spacingMs: number
  /** when the next request may go (performance.now() ms) */
  private nextAt = 0
  private pausedUntil = 0

  /** `rps` 0: no cap (only the pauses) */
  constructor(rps: number) {
    this.spacingMs = rps > 0 ? 1000 / rps : 0
  }

  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      let now = performance.now()
      while (this.pausedUntil > now) {
        await sleep(this.pausedUntil - now, signal)
        now = performance.now()
      }
      // a turn reserved now: later callers queue behind it
      const at = Math.max(this.nextAt, now)
      this.nextAt = at + this.spacingMs
      if (at > now) await sleep(at - now, signal)
      // a pause that began meanwhile holds this request back too
      if (this.pausedUntil <= performance.now()) return
    }
  }

  /** no request goes for `ms` */
  pauseFor(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, performance.now() + ms)
  }
}

/** the kind of a failed request a client retries, for the summaries */
export function retryKind(err: Error): string {
  const m = err.message
  if (/HTTP 429/.test(m)) return 'HTTP 429'
  if (/timeout after/.test(m)) return 'timeouts'
  if (/stalled/.test(m)) return 'stalls'
  if (/HTTP 5\d\d|HTTP 408/.test(m)) return 'HTTP 5xx'
  if (/-32005/.test(m)) return 'node unhealthy (-32005)'
  return 'dropped connections'
}

/**
 * Counts of the node's refusals and failures by kind, logged as one line per `everyMs` (default a
 * minute) when there were any: `note` counts, `flush` logs what was counted since the last line.
 */
export class EventSummary {
  private counts = new Map<string, number>()
  private longestWaitMs = 0
  private since = Date.now()
  private readonly timer: NodeJS.Timeout
  /** every count since the start, by kind */
  readonly totals = new Map<string, number>()

  constructor(
    private readonly log: (line: string) => void,
    private readonly everyMs = 60_000,
  ) {
    this.timer = setInterval(() => this.flush(), everyMs)
    this.timer.unref()
  }

  note(kind: string, waitMs = 0): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1)
    this.totals.set(kind, (this.totals.get(kind) ?? 0) + 1)
    this.longestWaitMs = Math.max(this.longestWaitMs, waitMs)
  }

  /** the counts as text (`3 HTTP 429, 1 timeouts`), or '' */
  static describe(counts: ReadonlyMap<string, number>): string {
    return [...counts].map(([k, n]) => `${n} ${k}`).join(', ')
  }

  flush(): void {
    const secs = Math.max(1, Math.round((Date.now() - this.since) / 1000))
    this.since = Date.now()
    if (this.counts.size === 0) return
    this.log(
      `the node in the last ${secs} s: ${EventSummary.describe(this.counts)}; retried (longest wait ${Math.round(this.longestWaitMs)} ms)`,
    )
    this.counts = new Map()
    this.longestWaitMs = 0
  }

  close(): void {
    clearInterval(this.timer)
    this.flush()
  }
}

/** `Name: value` of `--rpc-header` as [name, value]; throws a message naming the problem */
export function parseHeader(text: string): [string, string] {
  const i = text.indexOf(':')
  const name = i > 0 ? text.slice(0, i).trim() : ''
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    // (the text is not repeated: it may hold a key)
    throw new Error(`expected 'Name: value', a header name (letters, digits, -) before the colon`)
  }
  const value = text.slice(i + 1).trim()
  if (/[\r\n\0]/.test(value)) throw new Error(`the value of header ${name} holds a line break or NUL`)
  return [name, value]
}

/**
 * The node URL as logs may show it: scheme, host and port; user, password, path and query (where
 * providers put API keys) replaced by `***`.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    const hidden =
      u.username !== '' || u.password !== '' || u.search !== '' || (u.pathname !== '/' && u.pathname !== '')
    return `${u.protocol}//${u.host}${hidden ? '/***' : ''}`
  } catch {
    return '(the node URL)'
  }
}

/** the checked provider options of the command line (src/cli/options.ts `rpcProviderSettings`) */
export interface ProviderSettings {
  headers: Record<string, string>
  /** requests per second at most (0: no cap) */
  rps: number
  gzip: boolean
}

/**
 * A client's options for a provider: its headers, gzip, the rate cap, 429s retried as long as
 * the node asks (each waiting its Retry-After) and every retry counted in `summary` (one log line
 * a minute) instead of a line each.
 */
export function providerClientOptions(
  url: string,
  p: ProviderSettings,
  summary: EventSummary,
): RpcClientOptions & { url: string } {
  return {
    url,
    headers: p.headers,
    gzip: p.gzip,
    limiter: new RequestLimiter(p.rps),
    max429Retries: 100_000,
    onRetry: (_method, err, _attempt, delayMs) => summary.note(retryKind(err), delayMs),
  }
}
