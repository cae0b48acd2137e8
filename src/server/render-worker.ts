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

const setup = workerData as WorkerSetup
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

const NEWLINE = Buffer.from('\n')

async function render(m: RenderRequest): Promise<Extract<RenderResult, { type: 'done' }>> {
  const st = streams.get(m.stream)
  if (!st) throw new Error(`render worker: stream ${m.stream} is not open`)
  // (a DatasetDirStore picks up what the writer published since on every chunks() call)
  const store = await storeOf(m.dir)
  const numbers: number[] = []
  const hashes: string[] = []
  const ends: number[] = []
  const empty: boolean[] = []
  const parts: (string | Buffer)[] = []
  let end = 0
  const q = { ...st.q, fromBlock: m.from }
  for await (const b of executeQuery(store, q, {
    to: m.to,
    finalizedOnly: true,
    bigintsAsNumbers: st.bigintsAsNumbers,
  })) {
    // the cold store's blocks come rendered as bytes: taken as they are
    if (b.bytes !== undefined) {
      parts.push(b.bytes, NEWLINE)
      end += b.bytes.length + 1
    } else {
      parts.push(b.line, '\n')
      end += Buffer.byteLength(b.line) + 1
    }
    numbers.push(b.number)
    hashes.push(b.hash)
    ends.push(end)
    empty.push(b.empty)
  }
  const buf = parts.every((p) => typeof p === 'string')
    ? Buffer.from(parts.join(''))
    : Buffer.concat(
        parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)),
        end,
      )
  // a Buffer of its own ArrayBuffer can be transferred; a pooled one (small) is copied
  const bytes =
    buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength
      ? (buf.buffer as ArrayBuffer)
      : (buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer)
  return { type: 'done', id: m.id, bytes, numbers, hashes, ends, empty }
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
        (r) => port.postMessage(r, [r.bytes]),
        (e: unknown) =>
          port.postMessage({
            type: 'error',
            id: m.id,
            message: errorDetail(e),
          } satisfies RenderResult),
      )
  }
})
