/**
 * Per-client guards of the HTTP server: a token-bucket rate limit and a concurrent stream cap per
 * client address, and a limiter of repeated log lines (a client must not be able to flood the log).
 */

export interface RateLimit {
  /** sustained requests per second per client address */
  perSecond: number
  /** bucket size */
  burst: number
}

/** Token buckets per client address. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()
  constructor(private readonly cfg: RateLimit) {}

  /** 0 when allowed, else seconds to wait */
  take(key: string): number {
    const now = Date.now()
    let b = this.buckets.get(key)
    if (!b) {
      b = { tokens: this.cfg.burst, at: now }
      this.buckets.set(key, b)
      if (this.buckets.size > 10_000) this.sweep(now)
    }
    b.tokens = Math.min(this.cfg.burst, b.tokens + ((now - b.at) / 1000) * this.cfg.perSecond)
    b.at = now
    if (b.tokens >= 1) {
      b.tokens -= 1
      return 0
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.cfg.perSecond))
  }

  private sweep(now: number): void {
    for (const [k, b] of this.buckets) if (now - b.at > 60_000) this.buckets.delete(k)
  }
}

/** Counts open requests per client address, up to a cap. */
export class PerClientCap {
  private readonly open = new Map<string, number>()
  constructor(private readonly max: number) {}

  /** false when `key` already holds `max` */
  enter(key: string): boolean {
    const n = this.open.get(key) ?? 0
    if (n >= this.max) return false
    this.open.set(key, n + 1)
    return true
  }

  leave(key: string): void {
    const n = (this.open.get(key) ?? 1) - 1
    if (n > 0) this.open.set(key, n)
    else this.open.delete(key)
  }

  /** open requests of `key` */
  count(key: string): number {
    return this.open.get(key) ?? 0
  }
}

/**
 * Passes at most `perWindow` lines per `windowMs`; the lines dropped meanwhile are summed up in
 * one line when the next window opens.
 */
export class LogLimiter {
  private windowStart = 0
  private passed = 0
  private dropped = 0

  constructor(
    private readonly write: (msg: string) => void,
    private readonly perWindow = 20,
    private readonly windowMs = 10_000,
  ) {}

  log(msg: string): void {
    const now = Date.now()
    if (now - this.windowStart >= this.windowMs) {
      if (this.dropped > 0) this.write(`${this.dropped} similar messages suppressed in the last window`)
      this.windowStart = now
      this.passed = 0
      this.dropped = 0
    }
    if (this.passed < this.perWindow) {
      this.passed++
      this.write(msg)
    } else this.dropped++
  }
}
