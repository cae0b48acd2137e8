/**
 * Where `solportal import` puts the lines it hands to its worker threads: one shared ring of
 * memory (a SharedArrayBuffer every worker maps), written by the reading thread and read by the
 * workers, so a line crosses threads without an allocation of its own.
 *
 * A line sent as a buffer of its own instead (copied, then transferred) costs a fresh multi-MB
 * allocation in the reading thread, whose pages the kernel must zero and map, and arrives in the
 * worker as memory outside the JavaScript heap that the collector counts towards its next full
 * collection. The ring's pages are mapped once and reused.
 *
 * Lines are released in the order they were placed (the import settles the oldest line first),
 * so the ring is a FIFO of spans: a line goes after the newest one, or at the start when it does
 * not fit before the end (the end's bytes are then unused for that turn). A line longer than the
 * ring is not placed (the caller sends it as a buffer of its own).
 */
export class LineRing {
  readonly buffer: SharedArrayBuffer
  private readonly bytes: Buffer
  /** [start, end) of the lines in use, oldest first */
  private readonly spans: number[] = []
  private first = 0

  constructor(readonly size: number) {
    this.buffer = new SharedArrayBuffer(size)
    this.bytes = Buffer.from(this.buffer)
  }

  /** lines in use */
  get count(): number {
    return (this.spans.length - this.first) / 2
  }

  /** where a line of `n` bytes goes now, or -1: not until older lines are released (or never, n > size) */
  room(n: number): number {
    const { spans, first, size } = this
    if (n > size) return -1
    if (first === spans.length) return 0
    const oldest = spans[first]
    const newest = spans[spans.length - 2]
    const end = spans[spans.length - 1]
    // in use [oldest, end): after it, else from the start up to the oldest
    if (newest >= oldest) return size - end >= n ? end : n <= oldest ? 0 : -1
    // wrapped (in use from the oldest towards the ring's end, and [0, end)): between the two
    return oldest - end >= n ? end : -1
  }

  /**
   * Copies a line (its pieces, `n` bytes in all) into the ring at `at` (`room(n)`, not -1) and
   * returns its view there, in use until `release`.
   */
  place(pieces: readonly Buffer[], n: number, at: number): Buffer {
    let k = at
    for (const p of pieces) k += p.copy(this.bytes, k)
    this.spans.push(at, at + n)
    return this.bytes.subarray(at, at + n)
  }

  /** the oldest line in use is no longer needed */
  release(): void {
    if (this.first === this.spans.length) throw new Error('no line in use')
    this.first += 2
    if (this.first === this.spans.length) {
      this.spans.length = 0
      this.first = 0
    } else if (this.first > 1024) {
      this.spans.splice(0, this.first)
      this.first = 0
    }
  }

  /** is this buffer a view of the ring? */
  holds(b: Uint8Array): boolean {
    return b.buffer === this.buffer
  }
}
