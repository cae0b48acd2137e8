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
 *   reading thread in callbacks and copies); a frame comes back as one transferred buffer.
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads'
import { newZlibGate, stopAtExit, stopZlibGate } from '../../util/zlib-gate.ts'
import { workerExecArgv } from '../../util/worker-argv.ts'
import type { ColMeta, Footer } from './chunk-file.ts'
import { framesOf } from './frame-table.ts'

/** raw bytes of frames decompressed ahead and not taken yet, at most */
export const PREFETCH_BYTES = 48 * 1024 * 1024

/**
 * counters for tests and benches: frames sent ahead, decompressed ahead (`ready`), taken by a
 * reader, dropped unread; `skipped`: left by the thread, the reader having decompressed the frame
 * itself before the thread got to it
 */
export const prefetchStats = { started: 0, ready: 0, taken: 0, dropped: 0, skipped: 0 }

interface Entry {
  raw: Buffer | null
  bytes: number
  /** the job decompressing it */
  id: number
}

/**
 * Shared with the thread: [0] = 1 while it is held (`holdPrefetch`, tests), then a slot per job id
 * (mod CANCEL_SLOTS), set once the reader decompressed that frame itself: the thread skips it
 * instead of decompressing what nobody will take (a reader faster than the thread left it
 * seconds of such work after a scan). An id sharing its slot with another job queued at the same
 * time can only make the thread skip or decompress one frame needlessly: a reader decompresses
 * whatever it does not find ready.
 */
const CANCEL_SLOTS = 1 << 16
const control = new Int32Array(new SharedArrayBuffer(4 * (1 + CANCEL_SLOTS)))

/** tests: hold the decompressing thread before its next frame (true), or let it go on (false) */
/** shared with the thread: [0] the process is exiting, [1] the thread is on a frame (the layout of src/util/zlib-gate.ts; see inflate-worker.mjs) */
const gate = newZlibGate()

/**
 * Stops the decompressing thread for good before the process ends it: waits (up to `maxMs`) for the
 * frame under way, after which the thread takes no other (frames sent and not answered are then
 * decompressed by their readers, if any still read). Runs at process exit: Node ends worker threads
 * then, and one ended while zlib sets up a decompressor aborts the process. Returns whether the
 * thread was idle in time.
 */
export function stopPrefetchThread(maxMs = 2000): boolean {
  return stopZlibGate(gate, maxMs)
}

export function holdPrefetch(on: boolean): void {
  Atomics.store(control, 0, on ? 1 : 0)
  if (!on) Atomics.notify(control, 0)
}

const ready = new Map<string, Entry>()
let held = 0
/** frames sent to the thread and not back yet, by job id */
const sent = new Map<number, string>()
let nextId = 1
let worker: Worker | null = null
/** the port the thread answers on (read by the event loop, and synchronously by `takePrefetched`) */
let answers: MessagePort | null = null

function frameKey(path: string, at: number): string {
  return `${path}\0${at}`
}

/** frames sent to the decompressing thread and not back yet (its answers waiting on the port taken first) */
export function prefetchPending(): number {
  drainAnswers()
  return sent.size
}

/** the raw bytes of the frame stored at file offset `at` of `path`, when decompressed ahead (taken: forgotten here) */
export function takePrefetched(path: string, at: number): Buffer | undefined {
  if (ready.size === 0) return undefined
  const key = frameKey(path, at)
  const e = ready.get(key)
  if (e === undefined) return undefined
  // answers the event loop has not delivered yet (a reader that runs without yielding to it, e.g.
  // a consumer writing to a socket that never backs up, would otherwise never see them)
  if (e.raw === null) drainAnswers()
  ready.delete(key)
  held -= e.bytes
  if (e.raw === null) {
    // still being decompressed, or not started: the reader does it itself, the thread skips it
    Atomics.store(control, 1 + (e.id % CANCEL_SLOTS), 1)
    return undefined
  }
  prefetchStats.taken++
  return e.raw
}

function dropOldest(): void {
  for (const [k, e] of ready) {
    if (e.raw === null) continue // being decompressed: its bytes are counted until it lands
    ready.delete(k)
    held -= e.bytes
    prefetchStats.dropped++
    return
  }
}

/** what the thread sent back: the frame's raw bytes (null: it did not decompress) */
function landed(id: number, raw: Uint8Array | null): void {
  const key = sent.get(id)
  sent.delete(id)
  if (key === undefined) return
  const e = ready.get(key)
  if (e === undefined || e.raw !== null) return // taken meanwhile (decompressed by the reader)
  if (raw === null || raw.byteLength !== e.bytes) {
    ready.delete(key)
    held -= e.bytes
    return
  }
  e.raw = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  prefetchStats.ready++
}

/** the thread's answer to a job: the raw bytes, or null (`skipped`: on purpose, see `control`) */
type Answer = { id: number; raw: Uint8Array | null; skipped?: boolean }

function answered(a: Answer): void {
  if (a.skipped === true) prefetchStats.skipped++
  landed(a.id, a.raw)
}

/** take the thread's answers waiting on its port, without the event loop */
function drainAnswers(): void {
  const port = answers
  if (port === null) return
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
    answered(m.message as Answer)
  }
}

/** the decompressing thread, started on first use; one thread: at most a second core's worth */
function thread(): Worker {
  if (worker !== null) return worker
  const { port1, port2 } = new MessageChannel()
  const w = new Worker(new URL('./inflate-worker.mjs', import.meta.url), {
    execArgv: workerExecArgv(),
    workerData: { answers: port2, control, gate },
    transferList: [port2],
  })
  port1.on('message', answered)
  const gone = () => {
    if (worker !== w) return
    worker = null
    if (answers === port1) answers = null
    port1.close()
    // what it had is decompressed by the readers
    for (const id of [...sent.keys()]) landed(id, null)
  }
  w.on('error', gone)
  w.on('exit', gone)
  // it never keeps the process alive (after the listeners: adding one refs the thread again)
  w.unref()
  port1.unref()
  worker = w
  answers = port1
  // the process ends the thread when it exits: not inside zlib
  stopAtExit(gate)
  return w
}

/** files whose decompressed frames are logged: path -> blob offset -> frames decompressed per part */
const logs = new Map<string, Map<number, number[]>>()

/** log the frames decompressed from `path` from now on (until `collect`) */
export function watch(path: string): void {
  if (!logs.has(path)) logs.set(path, new Map())
}

/** a reader decompressed (or took) a frame of part `part` of the blob at `blob` in `path` */
export function noteFrame(path: string, blob: number, part: number): void {
  if (logs.size === 0) return
  const log = logs.get(path)
  if (log === undefined) return
  let counts = log.get(blob)
  if (counts === undefined) log.set(blob, (counts = []))
  counts[part] = (counts[part] ?? 0) + 1
}

/** a column of a chunk by its name in the footer, and the parts of it read whole */
export interface ReadWhole {
  kind: string
  field: string
  parts: number[]
}

/** stop logging `path` */
export function unwatch(path: string): void {
  logs.delete(path)
}

/** the parts `path` had decompressed whole since `watch` (named by kind and field); stops logging it */
export function collect(path: string, footer: Footer): ReadWhole[] {
  const log = logs.get(path)
  logs.delete(path)
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

/**
 * Decompress ahead, in the decompressing thread, the frames of `wanted` in the chunk file `path` (footer
 * `footer`); `skip(m)`: true for a column the reader holds already (nothing to fetch).
 */
export function prefetch(
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
      const f = framesOf(m)
      for (const i of w.parts) {
        const p = f.parts[i]
        if (p === undefined) continue
        const size = 2 ** p.log
        for (let j = 0; j < p.at.length; j++) {
          if (p.len[j] <= 0) continue // stored raw: nothing to decompress
          const at = m.o + p.at[j]
          const key = frameKey(path, at)
          if (ready.has(key)) continue
          const rawLen = Math.min(size, m.p[i] - j * size)
          while (held + rawLen > PREFETCH_BYTES && ready.size > 0) {
            const before = held
            dropOldest()
            if (held === before) break
          }
          if (held + rawLen > PREFETCH_BYTES) return
          const id = nextId++
          ready.set(key, { raw: null, bytes: rawLen, id })
          Atomics.store(control, 1 + (id % CANCEL_SLOTS), 0)
          held += rawLen
          sent.set(id, key)
          jobs.push({ id, at, len: p.len[j], crc: f.fc[p.crc0 + j], bytes: rawLen, codec: p.codec })
          prefetchStats.started++
        }
      }
    }
  } finally {
    if (jobs.length > 0) {
      try {
        thread().postMessage({ path, jobs })
      } catch {
        for (const j of jobs) landed(j.id, null)
      }
    }
  }
}
