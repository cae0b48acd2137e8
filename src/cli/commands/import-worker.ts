/**
 * An import worker thread: parses, normalizes and encodes the batches the main thread
 * (import.ts, `WorkerBackend`) gives it, one message at a time, in order.
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
  const builder = new BatchBuilder(workerData as BatchOptions)
  let open: number | null = null
  const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer)

  const encode = async (id: number) => {
    open = null
    const c = await builder.encode()
    // one fresh buffer, transferred (parts may be views into shared pools)
    const data = new Uint8Array(c.bytes)
    let k = 0
    for (const p of c.parts) {
      data.set(p, k)
      k += p.byteLength
    }
    const { firstBlock, lastBlock, blockCount, lastHash, sha256 } = c
    post({ t: 'chunk', id, chunk: { firstBlock, lastBlock, blockCount, lastHash, sha256 }, sealed: c.sealed, data }, [
      data.buffer,
    ])
  }

  const handle = async (m: ToWorker) => {
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
        post({ t: 'error', id: m.id, seq: m.seq, message: e instanceof Error ? e.message : String(e), line: true })
        return
      }
      post({ t: 'ack', id: m.id, seq: m.seq, warnings: r.warnings, full: r.full })
      if (r.full) await encode(m.id)
    } else if (m.t === 'end') {
      if (m.id !== open || builder.size === 0) throw new Error(`end of batch ${m.id}, which is not open`)
      await encode(m.id)
    }
  }

  // one message at a time: encoding yields to the event loop between big columns
  let queue = Promise.resolve()
  port.on('message', (m: ToWorker) => {
    queue = queue
      .then(() => handle(m))
      .catch((e: unknown) => {
        const message = e instanceof Error ? (e.stack ?? e.message) : String(e)
        post({ t: 'error', id: m.id, seq: null, message, line: false })
      })
  })
}
