/**
 * Memory and CPU of stream responses under load.
 *
 * `ByteBudget` counts the response bytes in flight across all streams: handed to a socket or gzip
 * stream and not yet taken by the kernel (or compressed). Writes never wait on it; rendering does.
 *
 * `RenderScheduler` hands out the right to render the next block: at most `permits` streams render
 * at once (rendering is synchronous work on the one event loop: more at once only delays every
 * response), none while the budget is full, and waiting streams are served smallest response first
 * (bytes sent so far, then the fewest blocks asked for), so a small query gets its turn within a
 * few block renders whatever the load.
 * Turns pass from stream to stream without the event loop turning (promise callbacks), so after a
 * slice of ~10 ms of them the next turn waits for the loop's I/O phase: a new request is read and
 * answered within a slice and a few block renders, however many streams are rendering.
 * A response still under `smallBytes` renders even when the budget is full, up to twice the budget:
 * so small queries do not wait on big ones, and the bytes in flight stay below twice the budget
 * plus one block per rendering stream.
 */
export class ByteBudget {
  private used = 0
  private reserved = 0
  private readonly listeners: (() => void)[] = []

  /**
   * `capacity`: bytes in flight of ordinary responses; `reserve`: bytes in flight of short
   * responses (see `RenderScheduler`), a separate account so that slow clients holding big blocks
   * do not stop a point query
   */
  constructor(
    readonly capacity: number,
    readonly reserve: number = capacity,
  ) {}

  /** bytes in flight, both accounts */
  get inFlight(): number {
    return this.used + this.reserved
  }

  get full(): boolean {
    return this.used >= this.capacity
  }

  /** over twice the capacity: not even small responses render */
  get overfull(): boolean {
    return this.used >= 2 * this.capacity
  }

  /** the reserve of short responses is used up */
  get reserveFull(): boolean {
    return this.reserved >= this.reserve
  }

  /** count `n` bytes in flight, in the reserve when `reserve` */
  take(n: number, reserve = false): void {
    if (reserve) this.reserved += n
    else this.used += n
  }

  release(n: number, reserve = false): void {
    const was = this.level()
    if (reserve) this.reserved -= n
    else this.used -= n
    if (this.level() < was) for (const l of this.listeners) l()
  }

  /** 0..5: how full the accounts are (a drop means someone may render again) */
  private level(): number {
    return (this.full ? (this.overfull ? 2 : 1) : 0) + (this.reserveFull ? 3 : 0)
  }

  /** `listener` runs whenever the budget stops being full or overfull, or the reserve has room again */
  onRoom(listener: () => void): void {
    this.listeners.push(listener)
  }

  /** the listeners run now: a waiter may render regardless of the budget now (see `RenderScheduler.acquire`) */
  wake(): void {
    for (const l of this.listeners) l()
  }
}

interface Waiter {
  served: number
  span: number
  seq: number
  /**
   * a stream that gave its turn back in the middle of a block (see `shouldYield`), or one that may
   * render regardless of the budget while this says so (asked again at each grant)
   */
  resume: boolean | (() => boolean)
  grant: () => void
}

export class RenderScheduler {
  private running = 0
  private seq = 0
  private readonly waiting: Waiter[] = []
  /** when the current run of turns without an event loop turn began; -1 = the loop turned since */
  private sliceStart = -1
  /** a pump is due after the event loop's next I/O phase */
  private deferred = false

  constructor(
    private readonly permits: number,
    private readonly budget: ByteBudget,
    private readonly smallBytes: number,
    /**
     * Turns are handed from stream to stream through promise callbacks, which run before the event
     * loop looks at sockets again: after this many ms of such turns, the next one waits for the
     * loop's I/O phase (new requests, drains and closes are seen between renders under any load).
     */
    private readonly sliceMs = 10,
    /**
     * A response that asked for fewer blocks than this (a point query) and sent less than
     * `smallBytes` is short: it renders from a reserve of its own while the budget is full (see
     * `ByteBudget.reserve`; its writes are counted there, `reserveBytesOf`).
     */
    private readonly shortBlocks = 0,
  ) {
    budget.onRoom(() => this.pump())
  }

  /** streams waiting for their turn */
  get queued(): number {
    return this.waiting.length
  }

  /**
   * Wait for a turn to render (`served`: bytes this response sent so far; `span`: blocks its range
   * covers); resolves to the release function, or to null when `signal` aborts first.
   */
  acquire(
    served: number,
    span: number,
    signal: AbortSignal,
    resume: boolean | (() => boolean) = false,
  ): Promise<(() => void) | null> {
    if (signal.aborted) return Promise.resolve(null)
    return new Promise((resolve) => {
      const w: Waiter = {
        served,
        span,
        seq: this.seq++,
        resume,
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve(this.turn())
        },
      }
      const onAbort = () => {
        const i = this.waiting.indexOf(w)
        if (i >= 0) this.waiting.splice(i, 1)
        resolve(null)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(w)
      this.pump()
    })
  }

  /**
   * `acquire` without waiting: the turn at once when it is free to take (a permit left, no stream
   * waiting, the budget allowing it, the current slice of turns not used up), else null (then
   * `acquire`). A stream rendering alone takes its turns without a promise and an abort listener
   * per block.
   */
  tryAcquire(served: number, span: number, resume: boolean | (() => boolean) = false): (() => void) | null {
    if (this.running >= this.permits || this.waiting.length > 0 || this.deferred) return null
    if (this.sliceStart >= 0 && performance.now() - this.sliceStart >= this.sliceMs) return null
    if (!this.grantable(served, span, resume)) return null
    this.startSlice()
    this.running++
    return this.turn()
  }

  /** the release function of a turn just granted (`running` counts it) */
  private turn(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      this.running--
      this.pump()
    }
  }

  /** a slice of turns begins unless one is under way (it ends when the event loop turns) */
  private startSlice(): void {
    if (this.sliceStart >= 0) return
    this.sliceStart = performance.now()
    // runs in the loop's check phase, after its I/O phase: the slice ends with the turn
    setImmediate(() => (this.sliceStart = -1))
  }

  /**
   * A stream in the middle of a long block (`served` bytes sent so far) asks whether to give its
   * turn back: true when a waiting stream that sent less could render now. It then waits again with
   * `acquire(..., resume = true)`: ahead of the streams that sent as much as it did, and regardless
   * of the budget (its block is under way), so blocks are not rendered a slice each in round
   * robin while new and small responses get their turn within a slice.
   */
  shouldYield(served: number): boolean {
    for (const w of this.waiting) if (w.served < served && this.grantable(w.served, w.span, w.resume)) return true
    return false
  }

  /** bytes of a response (from its start) counted in the budget's reserve: see `shortBlocks` */
  reserveBytesOf(span: number): number {
    return span < this.shortBlocks ? this.smallBytes : 0
  }

  private grantable(served: number, span: number, resume: Waiter['resume']): boolean {
    if (typeof resume === 'function' ? resume() : resume) return true
    if (served < this.smallBytes && span < this.shortBlocks && !this.budget.reserveFull) return true
    return !(this.budget.overfull || (this.budget.full && served >= this.smallBytes))
  }

  private pump(): void {
    if (this.deferred) return
    if (this.sliceStart < 0) this.startSlice()
    // (the clock read only when a stream waits: a turn released with none waiting costs no reading)
    else if (this.waiting.length > 0 && performance.now() - this.sliceStart >= this.sliceMs) {
      this.deferred = true
      setImmediate(() => {
        this.deferred = false
        this.pump()
      })
      return
    }
    while (this.running < this.permits && this.waiting.length > 0) {
      let best = -1
      for (let i = 0; i < this.waiting.length; i++) {
        const w = this.waiting[i]
        if (!this.grantable(w.served, w.span, w.resume)) continue
        if (best < 0) best = i
        else {
          const b = this.waiting[best]
          if (
            w.served !== b.served
              ? w.served < b.served
              : resumes(w) !== resumes(b)
                ? resumes(w)
                : w.span !== b.span
                  ? w.span < b.span
                  : w.seq < b.seq
          )
            best = i
        }
      }
      if (best < 0) return
      const [w] = this.waiting.splice(best, 1)
      this.running++
      w.grant()
    }
  }
}

function resumes(w: Waiter): boolean {
  return typeof w.resume === 'function' ? w.resume() : w.resume
}
