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
import type { ParsedQuery } from '../query/index.ts'
import { DiskColdStore } from '../store/cold.ts'
import { DatasetDirStore } from '../store/dataset-dir.ts'
import type { RenderRequest, RenderResult, WorkerMessage, WorkerSetup } from './render-pool.ts'
import { errorDetail } from '../util/errors.ts'
import { installZlibGate } from '../util/zlib-gate.ts'

const setup = workerData as WorkerSetup
installZlibGate(setup.zlibGate)
const port = parentPort!
const stores = new Map<string, Promise<DatasetDirStore>>()
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

async function render(m: RenderRequest): Promise<Extract<RenderResult, { type: 'done' }>> {
  const st = streams.get(m.stream)
  if (!st) throw new Error(`render worker: stream ${m.stream} is not open`)
  // (a DatasetDirStore picks up what the writer published since on every chunks() call)
  const store = await storeOf(m.dir)
  const numbers: number[] = []
  const hashes: string[] = []
  const buffer: number[] = []
  const starts: number[] = []
  const ends: number[] = []
  const empty: boolean[] = []
  // buffers[0]: the small lines, concatenated at the end
  const buffers: ArrayBuffer[] = [new ArrayBuffer(0)]
  const small: Buffer[] = []
  let smallEnd = 0
  let size = 0
  const q = { ...st.q, fromBlock: m.from }
  for await (const b of executeQuery(store, q, {
    to: m.to,
    finalizedOnly: true,
    bigintsAsNumbers: st.bigintsAsNumbers,
  })) {
    // the cold store's blocks come rendered as bytes, with their newline: taken as they are
    const line = 'data' in b && Buffer.isBuffer(b.data) ? b.data : Buffer.from(b.line + '\n')
    if (line.length >= OWN_BUFFER && line.byteOffset === 0) {
      // (the line buffer's own memory, handed over by the engine: moved, not copied)
      buffers.push(line.buffer as ArrayBuffer)
      buffer.push(buffers.length - 1)
      starts.push(0)
      ends.push(line.length)
    } else {
      small.push(line)
      buffer.push(0)
      starts.push(smallEnd)
      smallEnd += line.length
      ends.push(smallEnd)
    }
    size += line.length
    numbers.push(b.number)
    hashes.push(b.hash)
    empty.push(b.empty)
  }
  if (small.length > 0) {
    const all = Buffer.allocUnsafeSlow(smallEnd)
    let at = 0
    for (const l of small) at += l.copy(all, at)
    buffers[0] = all.buffer as ArrayBuffer
  }
  return { type: 'done', id: m.id, buffers, size, numbers, hashes, buffer, starts, ends, empty }
}

port.on('message', (m: WorkerMessage) => {
  switch (m.type) {
    case 'open':
      streams.set(m.stream, { q: parseQuery(m.body, m.limits), bigintsAsNumbers: m.bigintsAsNumbers })
      return
    case 'close':
      streams.delete(m.stream)
      return
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
