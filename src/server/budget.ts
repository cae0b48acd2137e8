/**
 * A global budget of response bytes in flight (handed to a socket or gzip stream, not yet taken
 * by the kernel), shared by every open stream. A stream waits for room before writing, so its
 * query does not render the next block meanwhile: memory under many slow clients stays bounded
 * by the budget plus one pending batch per stream. Waiters are served in arrival order; a write
 * larger than the whole budget goes through when nothing else is in flight.
 */
export class ByteBudget {
  private used = 0
  private readonly waiters: { n: number; grant: () => void }[] = []

  constructor(readonly capacity: number) {}

  get inFlight(): number {
    return this.used
  }

  private fits(n: number): boolean {
    return this.used === 0 || this.used + n <= this.capacity
  }

  /** resolves once `n` bytes are taken; rejects (nothing taken) when `signal` aborts first */
  acquire(n: number, signal: AbortSignal): Promise<void> {
    if (this.waiters.length === 0 && this.fits(n)) {
      this.used += n
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const w = {
        n,
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      const onAbort = () => {
        const i = this.waiters.indexOf(w)
        if (i >= 0) this.waiters.splice(i, 1)
        reject(signal.reason ?? new Error('aborted'))
        this.wake()
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiters.push(w)
    })
  }

  release(n: number): void {
    this.used -= n
    this.wake()
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0].n)) {
      const w = this.waiters.shift()!
      this.used += w.n
      w.grant()
    }
  }
}
