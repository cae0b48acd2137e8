/**
 * The shared memory that large node answers are read into (src/ingest/rpc/), kept for the next
 * answers once one is decoded.
 *
 * A `getBlock` answer of a mainnet block is ~5.6 MB, read into a `SharedArrayBuffer` so that the
 * decoding threads read it without a copy (block-workers.ts). Allocated afresh for every answer,
 * that memory counts as the main thread's external memory until it is collected: ~5.6 MB more per
 * block, which brings V8's full collections of the main thread sooner (they are started by the
 * growth of external memory), and those land on the way from the node's answer to the clients.
 * Buffers given back (`release`, once nothing reads the answer any more) are handed out again for
 * answers they hold.
 */
const MiB = 1 << 20

export class SharedBodies {
  private readonly free: SharedArrayBuffer[] = []
  readonly stats = { allocated: 0, reused: 0 }

  /** `max`: free buffers kept at most (the largest are kept) */
  constructor(private readonly max = 8) {}

  /**
   * a buffer of `size` bytes in shared memory: a released one that holds it (the smallest such),
   * else a new one with room for answers up to a quarter larger
   */
  take(size: number): Buffer {
    let best = -1
    for (let i = 0; i < this.free.length; i++) {
      const cap = this.free[i].byteLength
      if (cap >= size && (best < 0 || cap < this.free[best].byteLength)) best = i
    }
    if (best >= 0) {
      this.stats.reused++
      const sab = this.free.splice(best, 1)[0]
      return Buffer.from(sab, 0, size)
    }
    this.stats.allocated++
    return Buffer.from(new SharedArrayBuffer(Math.ceil((size * 1.25) / MiB) * MiB), 0, size)
  }

  /**
   * `bytes` (from `take`) are read no more: their memory is handed out again. Anything else is
   * ignored (answers below the shared size are not from here).
   */
  release(bytes: Uint8Array): void {
    const sab = bytes.buffer
    if (!(sab instanceof SharedArrayBuffer) || this.free.includes(sab)) return
    this.free.push(sab)
    if (this.free.length > this.max) {
      this.free.sort((a, b) => b.byteLength - a.byteLength)
      this.free.length = this.max
    }
  }
}
