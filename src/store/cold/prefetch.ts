/**
 * Decompression ahead of a range scan: while a query renders chunk i, the frames that chunk i-1
 * needed decompressed (the same columns, the same parts, read whole) are decompressed for chunk
 * i+1 by a thread of its own, so that the reading thread finds them ready instead of running
 * brotli itself. On a machine with a core to spare, a scan whose columns do not stay in the cache
 * (a wide range read again and again) then costs the reading thread the rendering only.
 *
 * - What is fetched ahead is learnt, not declared: the reader logs the frames it decompresses per
 *   chunk file (`watch` / `noteFrame` / `collect`); a part every frame of which was decompressed
 *   while rendering chunk i-1 is fetched ahead for chunk i+1. A selective query that reads a few
 *   frames of a column fetches nothing ahead.
 * - The bytes are those the reader would decompress itself: the thread reads the stored frame
 *   from the (immutable) file, checks it against its crc32 (the reader does not check a frame it
 *   takes again) and hands it over raw (before the part's filter, which the reader applies as
 *   always). A frame not ready when the reader gets to it is
 *   decompressed by the reader, as without this module.
 * - Memory: at most PREFETCH_BYTES of raw frames are held, first in first out (a frame nobody
 *   took, e.g. of a stream that ended, is dropped when room is needed).
 * - One thread of its own decompresses (`inflate-worker.mjs`: a second core's worth, never the
 *   whole thread pool; node's asynchronous brotli measured ~30 % of the saved time back on the
 *   reading thread in callbacks and copies); a frame comes back as one transferred buffer. The
 *   thread is a `WorkerPool` of one (src/util/worker-pool.ts): when it dies, the frames it had are
 *   decompressed by their readers, and it is spawned again after a backoff (nothing is read ahead
 *   meanwhile, nor at all once it kept dying).
 * - The state (the thread, the frames ready, the logs) is a `Prefetcher`'s; the cold store's
 *   readers use one per process (`sharedPrefetcher`, through the functions below).
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads'
import { WorkerPool, type WorkerPoolStats } from '../../util/worker-pool.ts'
import type { ColMeta, Footer } from './chunk-file.ts'
import { framesOf } from './frame-table.ts'

/** raw bytes of frames decompressed ahead and not taken yet, at most */
export const PREFETCH_BYTES = 48 * 1024 * 1024

interface Entry {
  raw: Buffer | null
  bytes: number
  /** the job decompressing it */
  id: number
}

/**
 * Shared with the thread: [0] = 1 while it is held (`hold`, tests), then a slot per job id
 * (mod CANCEL_SLOTS), set once the reader decompressed that frame itself: the thread skips it
 * instead of decompressing what nobody will take (a reader faster than the thread left it
 * seconds of such work after a scan). An id sharing its slot with another job queued at the same
 * time can only make the thread skip or decompress one frame needlessly: a reader decompresses
 * whatever it does not find ready.
 */
const CANCEL_SLOTS = 1 << 16

function frameKey(path: string, at: number): string {
  return `${path}\0${at}`
}

/** the thread's answer to a job: the raw bytes, or null (`skipped`: on purpose, see `control`) */
type Answer = { id: number; raw: Uint8Array | null; skipped?: boolean }

/** a column of a chunk by its name in the footer, and the parts of it read whole */
export interface ReadWhole {
  kind: string
  field: string
  parts: number[]
}

/**
 * a frame for the thread: read `len` stored bytes at file offset `at`, check them against `crc`,
 * decompress them (`codec`, frames.ts CODEC_*) to `bytes`
 */
interface Job {
  id: number
  at: number
  len: number
  crc: number
  bytes: number
  codec: number
}

/** Frames decompressed ahead by a thread of its own, the frames' logs, and its counters. */
export class Prefetcher {
  /**
   * counters for tests and benches: frames sent ahead, decompressed ahead (`ready`), taken by a
   * reader, dropped unread; `skipped`: left by the thread, the reader having decompressed the frame
   * itself before the thread got to it
   */
  readonly stats = { started: 0, ready: 0, taken: 0, dropped: 0, skipped: 0 }
  private readonly control = new Int32Array(new SharedArrayBuffer(4 * (1 + CANCEL_SLOTS)))
  private readonly ready = new Map<string, Entry>()
  private held = 0
  /** frames sent to the thread and not back yet, by job id */
  private readonly sent = new Map<number, string>()
  private nextId = 1
  /** the port the thread answers on (read by the event loop, and synchronously by `take`) */
  private answers: MessagePort | null = null
  /** the decompressing thread, started on first use; one thread: at most a second core's worth */
  private readonly thread: WorkerPool<{ answers: MessagePort }>
  /** files whose decompressed frames are logged: path -> blob offset -> frames decompressed per part */
  private readonly logs = new Map<string, Map<number, number[]>>()

  constructor() {
    this.thread = new WorkerPool<{ answers: MessagePort }>({
      name: 'read-ahead thread',
      size: 1,
      url: new URL('./inflate-worker.mjs', import.meta.url),
      // the process ends the thread when it exits: not inside zlib (the gate's layout is
      // src/util/zlib-gate.ts: [0] the process is exiting, [1] the thread is on a frame)
      zlibGate: true,
      setup: (_slot, gate) => {
        const { port1, port2 } = new MessageChannel()
        port1.on('message', (a: Answer) => this.answered(a))
        port1.unref()
        return {
          workerData: { answers: port2, control: this.control, gate },
          transferList: [port2],
          state: { answers: port1 },
        }
      },
      // it never keeps the process alive
      ref: 'never',
      onSpawn: (w) => (this.answers = w.state.answers),
      onDeath: (w) => {
        if (this.answers === w.state.answers) this.answers = null
        w.state.answers.close()
        // what it had is decompressed by the readers
        for (const id of [...this.sent.keys()]) this.landed(id, null)
      },
    })
  }

  /** the thread's counters (spawned, died) */
  get threadStats(): WorkerPoolStats {
    return this.thread.stats
  }

  /**
   * Stops the decompressing thread for good before the process ends it: waits (up to `maxMs`) for the
   * frame under way, after which the thread takes no other (frames sent and not answered are then
   * decompressed by their readers, if any still read). Runs at process exit: Node ends worker threads
   * then, and one ended while zlib sets up a decompressor aborts the process. Returns whether the
   * thread was idle in time.
   */
  stopThread(maxMs = 2000): boolean {
    return this.thread.stopZlib(maxMs)
  }

  /** tests: hold the decompressing thread before its next frame (true), or let it go on (false) */
  hold(on: boolean): void {
    Atomics.store(this.control, 0, on ? 1 : 0)
    if (!on) Atomics.notify(this.control, 0)
  }

  /** frames sent to the decompressing thread and not back yet (its answers waiting on the port taken first) */
  pending(): number {
    this.drainAnswers()
    return this.sent.size
  }

  /** the raw bytes of the frame stored at file offset `at` of `path`, when decompressed ahead (taken: forgotten here) */
  take(path: string, at: number): Buffer | undefined {
    if (this.ready.size === 0) return undefined
    const key = frameKey(path, at)
    const e = this.ready.get(key)
    if (e === undefined) return undefined
    // answers the event loop has not delivered yet (a reader that runs without yielding to it, e.g.
    // a consumer writing to a socket that never backs up, would otherwise never see them)
    if (e.raw === null) this.drainAnswers()
    this.ready.delete(key)
    this.held -= e.bytes
    if (e.raw === null) {
      // still being decompressed, or not started: the reader does it itself, the thread skips it
      Atomics.store(this.control, 1 + (e.id % CANCEL_SLOTS), 1)
      return undefined
    }
    this.stats.taken++
    return e.raw
  }

  private dropOldest(): void {
    for (const [k, e] of this.ready) {
      if (e.raw === null) continue // being decompressed: its bytes are counted until it lands
      this.ready.delete(k)
      this.held -= e.bytes
      this.stats.dropped++
      return
    }
  }

  /** what the thread sent back: the frame's raw bytes (null: it did not decompress) */
  private landed(id: number, raw: Uint8Array | null): void {
    const key = this.sent.get(id)
    this.sent.delete(id)
    if (key === undefined) return
    const e = this.ready.get(key)
    if (e === undefined || e.raw !== null) return // taken meanwhile (decompressed by the reader)
    if (raw === null || raw.byteLength !== e.bytes) {
      this.ready.delete(key)
      this.held -= e.bytes
      return
    }
    e.raw = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
    this.stats.ready++
  }

  private answered(a: Answer): void {
    if (a.skipped === true) this.stats.skipped++
    this.landed(a.id, a.raw)
  }

  /** take the thread's answers waiting on its port, without the event loop */
  private drainAnswers(): void {
    const port = this.answers
    if (port === null) return
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
      this.answered(m.message as Answer)
    }
  }

  /** log the frames decompressed from `path` from now on (until `collect`) */
  watch(path: string): void {
    if (!this.logs.has(path)) this.logs.set(path, new Map())
  }

  /** a reader decompressed (or took) a frame of part `part` of the blob at `blob` in `path` */
  noteFrame(path: string, blob: number, part: number): void {
    if (this.logs.size === 0) return
    const log = this.logs.get(path)
    if (log === undefined) return
    let counts = log.get(blob)
    if (counts === undefined) log.set(blob, (counts = []))
    counts[part] = (counts[part] ?? 0) + 1
  }

  /** stop logging `path` */
  unwatch(path: string): void {
    this.logs.delete(path)
  }

  /** the parts `path` had decompressed whole since `watch` (named by kind and field); stops logging it */
  collect(path: string, footer: Footer): ReadWhole[] {
    const log = this.logs.get(path)
    this.logs.delete(path)
    if (log === undefined || log.size === 0) return []
    const out: ReadWhole[] = []
    const tables: [string, Record<string, ColMeta>][] = [['header', footer.header.cols]]
    for (const [kind, t] of Object.entries(footer.kinds)) tables.push([kind, t.cols])
    for (const [kind, cols] of tables) {
      for (const [field, m] of Object.entries(cols)) {
        const counts = log.get(m.o)
        if (counts === undefined || !m.fr) continue
        const parts: number[] = []
        m.fr.forEach((fr, i) => {
          if (fr.length > 2 && counts[i] === fr.length - 2) parts.push(i)
        })
        if (parts.length) out.push({ kind, field, parts })
      }
    }
    return out
  }

  /**
   * Decompress ahead, in the decompressing thread, the frames of `wanted` in the chunk file `path` (footer
   * `footer`); `skip(m)`: true for a column the reader holds already (nothing to fetch).
   */
  prefetch(
    path: string,
    footer: Footer,
    wanted: ReadWhole[],
    skip: (kind: string, field: string, m: ColMeta) => boolean,
  ): void {
    if (wanted.length === 0) return
    const jobs: Job[] = []
    try {
      for (const w of wanted) {
        const t = w.kind === 'header' ? footer.header : footer.kinds[w.kind as keyof Footer['kinds']]
        const m = t?.cols[w.field]
        if (m === undefined || !m.fr || !m.fc || skip(w.kind, w.field, m)) continue
        if (!this.queueColumn(path, m, w.parts, jobs)) return
      }
    } finally {
      if (jobs.length > 0) this.send(path, jobs)
    }
  }

  /** jobs for the frames of `parts` of column `m` not asked for yet; false once the memory bound is reached */
  private queueColumn(path: string, m: ColMeta, parts: number[], jobs: Job[]): boolean {
    const f = framesOf(m)
    for (const i of parts) {
      const p = f.parts[i]
      if (p === undefined) continue
      const size = 2 ** p.log
      for (let j = 0; j < p.at.length; j++) {
        if (p.len[j] <= 0) continue // stored raw: nothing to decompress
        const at = m.o + p.at[j]
        const key = frameKey(path, at)
        if (this.ready.has(key)) continue
        const rawLen = Math.min(size, m.p[i] - j * size)
        while (this.held + rawLen > PREFETCH_BYTES && this.ready.size > 0) {
          const before = this.held
          this.dropOldest()
          if (this.held === before) break
        }
        if (this.held + rawLen > PREFETCH_BYTES) return false
        const id = this.nextId++
        this.ready.set(key, { raw: null, bytes: rawLen, id })
        Atomics.store(this.control, 1 + (id % CANCEL_SLOTS), 0)
        this.held += rawLen
        this.sent.set(id, key)
        jobs.push({ id, at, len: p.len[j], crc: f.fc![p.crc0 + j], bytes: rawLen, codec: p.codec })
        this.stats.started++
      }
    }
    return true
  }

  /** the jobs to the thread (none running, e.g. respawning after a death: the readers decompress them) */
  private send(path: string, jobs: Job[]): void {
    try {
      const w = this.thread.pick()
      if (w !== null && this.thread.post(w, { path, jobs })) return
    } catch {
      // (not started: the readers decompress the frames)
    }
    for (const j of jobs) this.landed(j.id, null)
  }

  /** ends the thread (the frames it had are decompressed by their readers) */
  async close(): Promise<void> {
    await this.thread.close()
    for (const id of [...this.sent.keys()]) this.landed(id, null)
  }
}

/** the process's read-ahead, used by the cold store's readers through the functions below */
export const sharedPrefetcher = new Prefetcher()

/** `sharedPrefetcher.stats` */
export const prefetchStats = sharedPrefetcher.stats

/** `Prefetcher.stopThread` of the shared read-ahead */
export function stopPrefetchThread(maxMs = 2000): boolean {
  return sharedPrefetcher.stopThread(maxMs)
}

/** `Prefetcher.hold` of the shared read-ahead */
export function holdPrefetch(on: boolean): void {
  sharedPrefetcher.hold(on)
}

/** `Prefetcher.pending` of the shared read-ahead */
export function prefetchPending(): number {
  return sharedPrefetcher.pending()
}

/** `Prefetcher.take` of the shared read-ahead */
export function takePrefetched(path: string, at: number): Buffer | undefined {
  return sharedPrefetcher.take(path, at)
}

/** `Prefetcher.watch` of the shared read-ahead */
export function watch(path: string): void {
  sharedPrefetcher.watch(path)
}

/** `Prefetcher.noteFrame` of the shared read-ahead */
export function noteFrame(path: string, blob: number, part: number): void {
  sharedPrefetcher.noteFrame(path, blob, part)
}

/** `Prefetcher.unwatch` of the shared read-ahead */
export function unwatch(path: string): void {
  sharedPrefetcher.unwatch(path)
}

/** `Prefetcher.collect` of the shared read-ahead */
export function collect(path: string, footer: Footer): ReadWhole[] {
  return sharedPrefetcher.collect(path, footer)
}

/** `Prefetcher.prefetch` of the shared read-ahead */
export function prefetch(
  path: string,
  footer: Footer,
  wanted: ReadWhole[],
  skip: (kind: string, field: string, m: ColMeta) => boolean,
): void {
  sharedPrefetcher.prefetch(path, footer, wanted, skip)
}
