/**
 * Writes a stream response's JSON lines: small lines batched into larger writes, each write
 * waiting for the socket (or the gzip stream in front of it) to drain, so a slow client slows its
 * query down instead of filling memory.
 *
 * - The 200 and its headers go out with the first write: until then a failure can still be
 *   answered with a 5xx (`started` says whether that is still possible).
 * - Bytes are counted as UTF-8 bytes of the lines (before compression).
 * - Every write counts its bytes in the shared `ByteBudget` until the socket or the gzip stream
 *   took them (the scheduler renders no block for big responses while the budget is full).
 * - A watchdog ends the response (destroys the socket) when the socket has bytes pending and
 *   takes none of them for `writeTimeoutMs`: a client that stops reading frees its slot.
 * - When the response closes before finishing (client gone, timed out, destroyed), the gzip
 *   stream is destroyed with it.
 */
import type http from 'node:http'
import zlib from 'node:zlib'
import type { Socket } from 'node:net'
import type { Writable } from 'node:stream'
import { recycleLine } from '../util/json-bytes.ts'
import type { ByteBudget } from './budget.ts'

export interface LineWriterOptions {
  /** headers of the 200, sent with the first write */
  headers: Record<string, string>
  /** gzip level, or null for identity encoding */
  gzipLevel: number | null
  /** destroy the response when its socket takes no pending byte for this long (ms); 0 = never */
  writeTimeoutMs: number
  budget: ByteBudget | null
  /** the first this many bytes of the response are counted in the budget's reserve (`ByteBudget.reserve`) */
  reserveBytes?: number
  /** lines are gathered into writes of about this many bytes */
  batchBytes?: number
  /**
   * bytes the sink may hold not yet taken by the kernel before `addLine`/`addBytes` say to wait
   * for `drained()`
   */
  pendingBytes?: number
}

export class LineWriter {
  /** UTF-8 bytes of the lines written so far (newlines included, before compression) */
  bytes = 0
  private buf: (string | Buffer)[] = []
  private bufLen = 0
  /**
   * the last lines added by `addBytes` while they are adjacent bytes of one buffer: the first
   * line, and the length of the run (one view over all of them is made once, when the run ends)
   */
  private run: Buffer | null = null
  private runLen = 0
  private sink: Writable
  private gz: zlib.Gzip | null = null
  private started_ = false
  private closed = false
  /** bytes taken from the budget (its main account, its reserve) and not yet released */
  private held = 0
  private heldReserve = 0
  /** bytes handed to the sink so far */
  private pushed = 0
  private watchdog: NodeJS.Timeout | null = null
  private readonly batchBytes: number
  private readonly pendingBytes: number

  constructor(
    private readonly res: http.ServerResponse,
    private readonly opts: LineWriterOptions,
    private readonly signal: AbortSignal,
  ) {
    this.sink = res
    // (a write costs the sending thread per call too: on loopback, 256 KiB writes against 64 KiB
    // cut the server's main-thread CPU for a 10.7 MB response by ~15 %)
    this.batchBytes = opts.batchBytes ?? 256 * 1024
    this.pendingBytes = opts.pendingBytes ?? 1024 * 1024
    res.once('close', () => this.onClose())
  }

  /** true once the 200 is out */
  get started(): boolean {
    return this.started_
  }

  private get gone(): boolean {
    return this.closed || this.signal.aborted
  }

  private start(): void {
    if (this.started_) return
    this.started_ = true
    this.res.writeHead(200, this.opts.headers)
    if (this.opts.gzipLevel != null) {
      const gz = zlib.createGzip({ level: this.opts.gzipLevel })
      gz.on('error', () => this.destroy())
      gz.pipe(this.res)
      this.gz = gz
      this.sink = gz
    }
    if (this.opts.writeTimeoutMs > 0) this.startWatchdog(this.opts.writeTimeoutMs)
  }

  private startWatchdog(timeoutMs: number): void {
    const sock = this.res.socket
    if (!sock) return
    let last = -1
    let lastQueued = -1
    let lastProgress = Date.now()
    this.watchdog = setInterval(
      () => {
        const pending = sock.writableLength
        const taken = sock.bytesWritten - pending
        // node counts a write as taken once all of it is; the bytes of the writes under way that
        // the kernel has not taken yet (libuv's write queue) show a slow client's progress inside
        // one write (a batch is up to `batchBytes`)
        const queued = queuedBytes(sock)
        const now = Date.now()
        if (pending === 0 || taken !== last || queued < lastQueued) {
          last = taken
          lastProgress = now
        } else if (now - lastProgress >= timeoutMs) {
          this.destroy()
        }
        lastQueued = queued
      },
      Math.max(10, Math.floor(timeoutMs / 4)),
    )
    this.watchdog.unref()
  }

  private onClose(): void {
    this.closed = true
    if (this.watchdog) clearInterval(this.watchdog)
    this.watchdog = null
    if (this.gz && !this.gz.destroyed && !this.res.writableFinished) this.gz.destroy()
    if (this.held > 0) this.opts.budget?.release(this.held)
    if (this.heldReserve > 0) this.opts.budget?.release(this.heldReserve, true)
    this.held = 0
    this.heldReserve = 0
  }

  /** cut the response: the client sees the connection end without a clean end of the body */
  destroy(): void {
    this.gz?.destroy()
    this.res.destroy()
  }

  /**
   * A line to the response (batching, encoding, handing to the socket); false when the caller
   * must then wait for `drained()` before writing more. A line may come as UTF-8 bytes
   * (without its newline: the engine's byte output, `OutputBlock.bytes`).
   */
  addLine(line: string | Buffer): boolean {
    if (this.run !== null) this.endRun()
    if (typeof line !== 'string') {
      this.buf.push(line, NEWLINE)
      const n = line.length + 1
      this.bufLen += n
      this.bytes += n
      return this.bufLen >= this.batchBytes ? this.pushNow() : true
    }
    const n = Buffer.byteLength(line) + 1
    this.buf.push(line, '\n')
    this.bufLen += n
    this.bytes += n
    return this.bufLen >= this.batchBytes ? this.pushNow() : true
  }

  /**
   * `addLine` for a line already encoded (UTF-8 bytes, its newline included): rendered by the
   * engine (`OutputBlock.data`) or in a worker thread (src/server/render-pool.ts). The writer owns
   * the bytes from then on: a line buffer of the engine's is reused once written (`recycleLine`).
   */
  addBytes(data: Buffer): boolean {
    // a large line goes out on its own, as it is, not copied into a batch with the lines before it
    if (data.length >= this.batchBytes && this.bufLen > 0) this.pushNow()
    const run = this.run
    if (run !== null && run.buffer === data.buffer && run.byteOffset + this.runLen === data.byteOffset) {
      // the next line of the same rendered segment: the run grows (one view over all, made later)
      this.runLen += data.length
    } else {
      if (run !== null) this.endRun()
      this.run = data
      this.runLen = data.length
    }
    this.bufLen += data.length
    this.bytes += data.length
    return this.bufLen >= this.batchBytes ? this.pushNow() : true
  }

  /** the run of adjacent lines into the batch, as one view */
  private endRun(): void {
    const run = this.run!
    this.buf.push(this.runLen === run.length ? run : Buffer.from(run.buffer, run.byteOffset, this.runLen))
    this.run = null
  }

  /** resolves when the socket (or gzip stream) can take more, or the response is gone */
  drained(): Promise<void> {
    return drained(this.sink, this.signal)
  }

  private async push(): Promise<void> {
    if (!this.pushNow()) await this.drained()
  }

  /** hand the batched lines to the sink; false when it holds `pendingBytes` or more */
  private pushNow(): boolean {
    const n = this.bufLen
    if (n === 0) return true
    if (this.run !== null) this.endRun()
    const parts = this.buf
    this.buf = []
    this.bufLen = 0
    // lines as bytes (the engine's views, adjacent ones merged by addBytes) are written as they
    // are, a write each, not copied into one buffer; strings and many small pieces are joined into
    // a Buffer (the socket keeps one copy of the bytes, not the string and its encoded copy)
    const whole = parts.length <= MAX_PARTS && parts.every((p) => typeof p !== 'string')
    const data = whole ? (parts as Buffer[]) : [toBuffer(parts)]
    // the engine's line buffers (`recycleLine`): given back once copied, or once the sink took them
    if (!whole) for (const p of parts) if (typeof p !== 'string') recycleLine(p)
    if (this.gone) return true
    this.start()
    const budget = this.opts.budget
    const reserve = this.pushed < (this.opts.reserveBytes ?? 0)
    this.pushed += n
    if (budget) {
      budget.take(n, reserve)
      if (reserve) this.heldReserve += n
      else this.held += n
    }
    const last = data.length - 1
    for (let k = 0; k <= last; k++) {
      const b = data[k]
      this.sink.write(b, (err) => {
        if (whole && !err) recycleLine(b)
        if (k < last || this.closed || !budget) return
        if (reserve) this.heldReserve -= n
        else this.held -= n
        budget.release(n, reserve)
      })
    }
    // node's http corks the socket at a write until the next tick: uncorked now, the bytes go to
    // the kernel while the next lines render (a render loop may not let a tick pass for a while)
    const sock = this.res.socket
    if (this.gz === null && sock !== null && sock.writableCorked > 0) sock.uncork()
    // not `write`'s answer, false whenever a write is above the sink's high-water mark (16 KiB)
    // even when the kernel took all of it at once: waiting for 'drain' then stops rendering while
    // the socket still has bytes to send; the next lines render meanwhile up to `pendingBytes`
    return this.sink.writableLength < this.pendingBytes
  }

  /** push buffered lines through to the client now (before waiting for new blocks) */
  async flush(): Promise<void> {
    await this.push()
    if (this.gz && !this.gone) {
      const gz = this.gz
      await this.untilClosedOr((done) => gz.flush(zlib.constants.Z_SYNC_FLUSH, done))
    }
  }

  /** the remaining lines, then a clean end of the body (and of the gzip stream) */
  async end(): Promise<void> {
    await this.push()
    if (this.gone) return
    this.start()
    await this.untilClosedOr((done) => {
      this.res.once('finish', done)
      this.sink.end()
    })
  }

  /** resolves when `start`'s callback is called or the response closes, whichever comes first */
  private untilClosedOr(start: (done: () => void) => void): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('close', done)
        this.res.off('finish', done)
        resolve()
      }
      this.res.on('close', done)
      start(done)
    })
  }
}

/**
 * bytes of the socket's writes under way not taken by the kernel yet (libuv's write queue: it
 * shrinks as the kernel takes part of a write), -1 when unknown
 */
function queuedBytes(sock: Socket): number {
  const q = (sock as unknown as { _handle?: { writeQueueSize?: unknown } | null })._handle?.writeQueueSize
  return typeof q === 'number' ? q : -1
}

const NEWLINE = Buffer.from('\n')

/** a batch of at most this many Buffers is written as it is (more are joined) */
const MAX_PARTS = 4

/** the parts as one Buffer: strings encoded at once, a lone Buffer as it is */
function toBuffer(parts: (string | Buffer)[]): Buffer {
  if (parts.length === 1 && typeof parts[0] !== 'string') return parts[0]
  if (parts.every((p) => typeof p === 'string')) return Buffer.from(parts.join(''))
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))
}

function drained(w: Writable, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      w.off('drain', done)
      w.off('close', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    w.on('drain', done)
    w.on('close', done)
    signal.addEventListener('abort', done)
  })
}
