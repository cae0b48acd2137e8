/**
 * An import worker thread: parses, normalizes and encodes the batches the main thread
 * (import.ts, `WorkerBackend`) gives it, in order; the next batch is parsed while the previous one
 * encodes.
 *
 * Messages in: `start` (a new batch, optionally beginning with the blocks of the store's unsealed
 * tail files), `line` (one archive line of the open batch), `end` (encode the open batch now).
 * Out: `ack` per line (warnings, whether the line filled the batch: then the batch is encoded at
 * once), `late` for a line of a batch already full (the main thread sent it ahead; it goes to the
 * next batch), `chunk` (the encoded chunk file bytes, transferred), `error` (a line or the batch
 * failed).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BatchBuilder, type BatchOptions, type LineResult } from './import-batch.ts'
import { errorMessage, errorDetail } from '../../util/errors.ts'
import { installZlibGate } from '../../util/zlib-gate.ts'

export type ToWorker =
  | { t: 'start'; id: number; tail: string[] }
  | { t: 'line'; id: number; seq: number; text: string }
  | { t: 'end'; id: number }

export type FromWorker =
  | { t: 'ack'; id: number; seq: number; warnings: LineResult['warnings']; full: boolean }
  | { t: 'late'; id: number; seq: number }
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
  const encode = (id: number) => {
    open = null
    const c = builder.encode()
    c.catch(() => undefined) // reported in order below
    encoded = encoded.then(async () => {
      let chunk
      try {
        chunk = await c
      } catch (e) {
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
      open = m.id
      builder.startWith(m.tail)
    } else if (m.t === 'line') {
      // a line of a batch already full: the main thread sends it again to the next one
      if (m.id !== open) return post({ t: 'late', id: m.id, seq: m.seq })
      let r
      try {
        r = builder.add(m.text)
      } catch (e) {
        post({ t: 'error', id: m.id, seq: m.seq, message: errorMessage(e), line: true })
        return
      }
      post({ t: 'ack', id: m.id, seq: m.seq, warnings: r.warnings, full: r.full })
      if (r.full) encode(m.id)
    } else if (m.t === 'end') {
      if (m.id !== open || builder.size === 0) throw new Error(`end of batch ${m.id}, which is not open`)
      encode(m.id)
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
