/**
 * The engine's clock for `ExecuteOptions.pause`: when the current slice of synchronous work began
 * and when it is long enough for a pause.
 */

/** one reading of the clock per PAUSE_ROWS rows rendered */
export const PAUSE_ROWS = 64

/**
 * When the current slice of synchronous work began, and the pause to take once it is long. A
 * slice begins at its first check after a yield (`reset` reads no clock: it runs once per block
 * output, and the checks come at most PAUSE_ROWS rows apart, or before a chunk's filters).
 */
export class Slicer {
  /** when the slice began; -1: at the next check */
  private start = -1

  constructor(
    private readonly pause: (() => Promise<boolean>) | undefined,
    private readonly sliceMs: number,
  ) {}

  /** a yield happened (the consumer ran): a new slice begins */
  reset(): void {
    this.start = -1
  }

  /** true when the slice is long enough for a pause */
  get due(): boolean {
    if (this.pause === undefined) return false
    const now = performance.now()
    if (this.start < 0) {
      this.start = now
      return false
    }
    return now - this.start >= this.sliceMs
  }

  /** pause now; false = stop */
  async take(): Promise<boolean> {
    const go = await this.pause!()
    this.start = performance.now()
    return go
  }
}
