/**
 * A render worker thread (src/server/render-pool.ts): opens cold stores read-only (their chunk
 * files are immutable) and renders block ranges of queries into Buffers of complete JSON lines,
 * transferred to the main thread with each block's number, hash, end offset and empty flag.
 *
 * Messages in: `open` (a stream's query, parsed once per worker), `render` (a range of a stream),
 * `close` (the stream ended). Out: `done` or `error` per render.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { executeQuery, parseQuery } from '../query/index.ts'
import type { OutputBlock, ParsedQuery } from '../query/index.ts'
import { recycleLine, spareBuffer, spareLines } from '../util/json-bytes.ts'
import { DiskColdStore } from '../store/cold/disk-store.ts'
import { DatasetDirStore } from '../store/dataset-dir.ts'
import type { RenderRequest, RenderResult, StreamRequest, WorkerMessage, WorkerSetup } from './render-protocol.ts'
import { errorDetail } from '../util/errors.ts'
import { installZlibGate } from '../util/zlib-gate.ts'

const setup = workerData as WorkerSetup
installZlibGate(setup.zlibGate)
const port = parentPort!
const stores = new Map<string, Promise<DatasetDirStore>>()
type Done = Extract<RenderResult, { type: 'done' }>
const streams = new Map<number, { q: ParsedQuery; bigintsAsNumbers: boolean }>()

function storeOf(dir: string): Promise<DatasetDirStore> {
  let s = stores.get(dir)
  if (!s) {
    s = DiskColdStore.open(dir, { readOnly: true, cacheBytes: setup.cacheBytes, verify: 'none' }).then(
      (cold) => new DatasetDirStore(cold, null),
    )
    s.catch(() => stores.delete(dir))
    stores.set(dir, s)
  }
  return s
}

/** a line at least this long goes in a buffer of its own, moved to the main thread */
const OWN_BUFFER = 64 * 1024

/** Blocks' lines gathered into buffers to transfer to the main thread (one `done` message). */
class Batch {
  readonly numbers: number[] = []
  readonly hashes: string[] = []
  readonly buffer: number[] = []
  readonly starts: number[] = []
  readonly ends: number[] = []
  readonly empty: boolean[] = []
  // buffers[0]: the small lines, concatenated at the end
  private readonly buffers: ArrayBuffer[] = [new ArrayBuffer(0)]
  private readonly small: Buffer[] = []
  private smallEnd = 0
  size = 0

  add(b: OutputBlock): void {
    // the cold store's blocks come rendered as bytes, with their newline: taken as they are
    const line = 'data' in b && Buffer.isBuffer(b.data) ? b.data : Buffer.from(b.line + '\n')
    if (line.length >= OWN_BUFFER && line.byteOffset === 0) {
      // (the line buffer's own memory, handed over by the engine: moved, not copied)
      this.buffers.push(line.buffer as ArrayBuffer)
      this.buffer.push(this.buffers.length - 1)
      this.starts.push(0)
      this.ends.push(line.length)
    } else {
      this.small.push(line)
      this.buffer.push(0)
      this.starts.push(this.smallEnd)
      this.smallEnd += line.length
      this.ends.push(this.smallEnd)
    }
    this.size += line.length
    this.numbers.push(b.number)
    this.hashes.push(b.hash)
    this.empty.push(b.empty)
  }

  /** the message (its buffers are to be transferred) */
  done(id: number, last?: boolean): Done {
    if (this.small.length > 0) {
      // (memory of earlier batches the main thread gave back once written, when there is some)
      const all = spareBuffer(this.smallEnd) ?? Buffer.allocUnsafeSlow(this.smallEnd)
      let at = 0
      for (const l of this.small) {
        at += l.copy(all, at)
        // copied: the engine's line buffer is reused for its next lines (as the server's writer
        // gives it back once written), not left to the garbage collector
        recycleLine(l)
      }
      this.buffers[0] = all.buffer as ArrayBuffer
    }
    const { buffers, size, numbers, hashes, buffer, starts, ends, empty } = this
    return { type: 'done', id, buffers, size, numbers, hashes, buffer, starts, ends, empty, last }
  }
}

function open(stream: number): { q: ParsedQuery; bigintsAsNumbers: boolean } {
  const st = streams.get(stream)
  if (!st) throw new Error(`render worker: stream ${stream} is not open`)
  return st
}

async function render(m: RenderRequest): Promise<Done> {
  const st = open(m.stream)
  // (a DatasetDirStore picks up what the writer published since on every chunks() call)
  const store = await storeOf(m.dir)
  const batch = new Batch()
  const q = { ...st.q, fromBlock: m.from }
  for await (const b of executeQuery(store, q, {
    to: m.to,
    finalizedOnly: true,
    bigintsAsNumbers: st.bigintsAsNumbers,
  }))
    batch.add(b)
  return batch.done(m.id)
}

/** a streamed range being rendered: bytes sent and not yet taken, and its wait for room */
interface Run {
  ahead: number
  wake: (() => void) | null
  cancelled: boolean
}
const runs = new Map<number, Run>()

/**
 * A whole range in one pass of the engine, sent in batches of about `batchBytes` as they fill. The
 * stream says which bytes it took (`credit`): a batch waits while those sent and not taken would
 * pass `aheadBytes` with it (but goes when none are), so the thread runs ahead of the stream by a
 * bounded amount and stops while the stream does not take.
 */
async function streamRange(m: StreamRequest): Promise<void> {
  const run: Run = { ahead: 0, wake: null, cancelled: false }
  runs.set(m.id, run)
  const send = async (batch: Batch, last: boolean): Promise<boolean> => {
    if (run.ahead > 0 && run.ahead + batch.size > m.aheadBytes && !run.cancelled) {
      // (the stream credits what it took when told, else only every so many bytes)
      port.postMessage({ type: 'blocked', id: m.id } satisfies RenderResult)
      while (run.ahead > 0 && run.ahead + batch.size > m.aheadBytes && !run.cancelled)
        await new Promise<void>((r) => (run.wake = r))
    }
    if (run.cancelled) return false
    run.ahead += batch.size
    const r = batch.done(m.id, last)
    port.postMessage(r, r.buffers)
    return true
  }
  try {
    const st = open(m.stream)
    const store = await storeOf(m.dir)
    let batch = new Batch()
    for await (const b of executeQuery(
      store,
      { ...st.q, fromBlock: m.from },
      { to: m.to, finalizedOnly: true, bigintsAsNumbers: st.bigintsAsNumbers, shouldStop: () => run.cancelled },
    )) {
      batch.add(b)
      if (batch.size >= m.batchBytes) {
        if (!(await send(batch, false))) return
        batch = new Batch()
      }
    }
    if (!run.cancelled) await send(batch, true)
  } catch (e) {
    if (!run.cancelled) port.postMessage({ type: 'error', id: m.id, message: errorDetail(e) } satisfies RenderResult)
  } finally {
    runs.delete(m.id)
  }
}

port.on('message', (m: WorkerMessage) => {
  switch (m.type) {
    case 'open':
      streams.set(m.stream, { q: parseQuery(m.body, m.limits), bigintsAsNumbers: m.bigintsAsNumbers })
      return
    case 'close':
      streams.delete(m.stream)
      return
    case 'stream':
      void streamRange(m)
      return
    case 'spare':
      for (const ab of m.buffers) spareLines(ab)
      return
    case 'credit':
    case 'cancel': {
      const run = runs.get(m.id)
      if (!run) return
      if (m.type === 'credit') run.ahead -= m.n
      else run.cancelled = true
      run.wake?.()
      run.wake = null
      return
    }
    case 'render':
      render(m).then(
        (r) => port.postMessage(r, r.buffers),
        (e: unknown) =>
          port.postMessage({
            type: 'error',
            id: m.id,
            message: errorDetail(e),
          } satisfies RenderResult),
      )
  }
})
