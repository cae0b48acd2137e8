/**
 * A block decoding worker thread (block-workers.ts): parses, shape-checks and normalizes the
 * `getBlock` answers the main thread transfers to it, one message at a time.
 *
 * In: `{ id, slot, bytes, part? }` (the answer's body, transferred; `part`: decode only that part of
 * the block, block-decode.ts). Out: `{ id, env }` (the decoded
 * envelope; the normalized block packed into one buffer, transferred: src/store/packed-block.ts) or
 * `{ id, error }` (the bytes are not JSON, or decoding threw).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { decodeBlockAnswer, type DecodedEnvelope, type DecodePart, type NormalizeOptions } from './block-decode.ts'
import { errorMessage } from '../util/errors.ts'
import { wallNow } from '../util/wall-clock.ts'

export interface ToBlockWorker {
  id: number
  slot: number
  bytes: Uint8Array
  /** decode only this part of the block (block-decode.ts `DecodePart`) */
  part?: DecodePart
}

export type FromBlockWorker = { id: number; env: DecodedEnvelope } | { id: number; error: string }

const port = parentPort
if (port) {
  const opts = (workerData ?? {}) as NormalizeOptions
  port.on('message', (m: ToBlockWorker) => {
    const marks = { start: wallNow() }
    let out: FromBlockWorker
    const transfer: ArrayBuffer[] = []
    try {
      const env = decodeBlockAnswer(m.bytes, m.slot, opts, true, marks, m.part)
      const r = env.result?.kind === 'normalized' ? env.result : null
      if (r && 'packed' in r.block) transfer.push(r.block.packed.buffer as ArrayBuffer)
      if (r?.marks) r.marks.sent = wallNow()
      out = { id: m.id, env }
    } catch (e) {
      out = { id: m.id, error: errorMessage(e) }
    }
    port.postMessage(out, transfer)
  })
}
