/**
 * An import worker thread: parses, normalizes and encodes the batches the main thread
 * (worker-backend.ts `WorkerBackend`) gives it, in order; the next batch is parsed while the previous one
 * encodes.
 *
 * Messages in: `start` (a new batch, optionally beginning with the blocks of the store's unsealed
 * tail files), `line` (one archive line of the open batch: where its bytes are in the ring of
 * lines shared with the main thread, line-ring.ts, or the bytes themselves, transferred), `end`
 * (the batch is complete, sealed or not: encode it). The main thread decides where batches end
 * (batch.ts `BatchCut`), so it sends a batch's `end` without waiting for the acks of its
 * lines.
 * Out: `started` (the tail's blocks and estimated bytes, for a start with a tail), `ack` per line
 * (its warnings), `chunk` (the encoded chunk file bytes, transferred), `error` (a line or the
 * batch failed). A batch with a bad line is never encoded: its `end` is answered by `dropped`,
 * naming the line (whose `error` came first).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BatchBuilder, LineError, type BatchOptions, type BatchStart, type LineResult } from './batch.ts'
import { errorMessage, errorDetail } from '../../util/errors.ts'
import { installZlibGate } from '../../util/zlib-gate.ts'

export type ToWorker =
  | { t: 'start'; id: number; tail: string[] }
  | { t: 'line'; id: number; seq: number; bytes: Uint8Array }
  | { t: 'line'; id: number; seq: number; at: number; length: number }
  | { t: 'end'; id: number; sealed: boolean }

export type FromWorker =
  | { t: 'started'; id: number; start: BatchStart }
  | { t: 'ack'; id: number; seq: number; warnings: LineResult['warnings'] }
  | { t: 'dropped'; id: number; seq: number; message: string }
  | {
      t: 'chunk'
      id: number
      chunk: { firstBlock: number; lastBlock: number; blockCount: number; lastHash: string; sha256: string }
      sealed: boolean
      data: Uint8Array
    }
  | { t: 'error'; id: number; seq: number | null; message: string; line: boolean }

const port = parentPort
if (port) {
  installZlibGate((workerData as { zlibGate?: Int32Array }).zlibGate)
  const builder = new BatchBuilder(workerData as BatchOptions)
  /** the ring lines are given in (line-ring.ts): a line there is read before it is acknowledged */
  const ring = (workerData as { lineRing?: SharedArrayBuffer | null }).lineRing ?? null
  let open: number | null = null
  const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer)
  const fail = (id: number, e: unknown) => {
    const message = errorDetail(e)
    post({ t: 'error', id, seq: null, message, line: false })
  }

  /**
   * Chunks being encoded, in batch order. `encode` takes the batch's blocks at once, so the next
   * batch's lines are parsed and normalized while the earlier one encodes (its columns yield to the
   * event loop between big ones, each compressed in this thread: frames.ts): at most one batch
   * encoding behind the open one, as the main thread gives a worker at most two batches at a time.
   */
  let encoded: Promise<void> = Promise.resolve()
  const encode = (id: number, sealed: boolean) => {
    open = null
    const c = builder.encode(sealed)
    c.catch(() => undefined) // reported in order below
    encoded = encoded.then(async () => {
      let chunk
      try {
        chunk = await c
      } catch (e) {
        // a batch with a bad line: dropped, naming the line (whose `error` came first)
        if (e instanceof LineError) return post({ t: 'dropped', id, seq: e.seq, message: e.message })
        return fail(id, e)
      }
      // one fresh buffer, transferred (parts may be views into shared pools)
      const data = new Uint8Array(chunk.bytes)
      let k = 0
      for (const p of chunk.parts) {
        data.set(p, k)
        k += p.byteLength
      }
      const { firstBlock, lastBlock, blockCount, lastHash, sha256 } = chunk
      post(
        { t: 'chunk', id, chunk: { firstBlock, lastBlock, blockCount, lastHash, sha256 }, sealed: chunk.sealed, data },
        [data.buffer],
      )
    })
  }

  const handle = (m: ToWorker) => {
    if (m.t === 'start') {
      if (open !== null) throw new Error(`start of batch ${m.id} while batch ${open} is open`)
      open = m.id
      if (m.tail.length) post({ t: 'started', id: m.id, start: builder.startWith(m.tail) })
    } else if (m.t === 'line') {
      if (m.id !== open) throw new Error(`a line of batch ${m.id}, which is not open`)
      // the lines after a bad one are not answered: the import stops at it
      if (builder.failed) return
      let r
      try {
        r = builder.add('bytes' in m ? m.bytes : new Uint8Array(ring!, m.at, m.length), m.seq)
      } catch (e) {
        post({ t: 'error', id: m.id, seq: m.seq, message: errorMessage(e), line: true })
        return
      }
      post({ t: 'ack', id: m.id, seq: m.seq, warnings: r.warnings })
    } else if (m.t === 'end') {
      if (m.id !== open) throw new Error(`end of batch ${m.id}, which is not open`)
      if (!builder.failed && builder.size === 0) throw new Error(`end of batch ${m.id}, which is empty`)
      encode(m.id, m.sealed)
    }
  }

  // messages in order, each at once (parsing a line is synchronous; encoding goes on behind)
  port.on('message', (m: ToWorker) => {
    try {
      handle(m)
    } catch (e) {
      fail(m.id, e)
    }
  })
}
