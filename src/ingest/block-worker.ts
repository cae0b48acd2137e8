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
import {
  decodeBlockAnswer,
  type DecodedEnvelope,
  type DecodeMarks,
  type DecodePart,
  type NormalizeOptions,
} from './block-decode.ts'
import { errorMessage } from '../util/errors.ts'
import { wallNow } from '../util/wall-clock.ts'
import { threadTimes } from '../util/thread-clock.ts'
import { GCProfiler } from 'node:v8'
import { youngCollector } from '../util/gc-tuning.ts'

export interface ToBlockWorker {
  id: number
  slot: number
  bytes: Uint8Array
  /** decode only this part of the block (block-decode.ts `DecodePart`) */
  part?: DecodePart
}

export type FromBlockWorker = { id: number; env: DecodedEnvelope } | { id: number; error: string }

/**
 * ms after posting a result when the thread collects its young generation, unless the next answer
 * comes first (it is then collected before decoding that answer)
 */
const IDLE_GC_DELAY_MS = 100

const port = parentPort
if (port) {
  const opts = (workerData ?? {}) as NormalizeOptions
  // Between blocks, the young generation holds only the last block's garbage: collecting it then
  // is cheap (~3 ms, nothing to copy) and leaves the whole young generation to the next block,
  // whose half of a mainnet block then decodes without a scavenge. Left to itself, V8 scavenges
  // in the middle of about every other block, copying the records decoded so far (8-17 ms then,
  // on the way from the node's answer to the hot store). The collection runs a while after the
  // result is posted, so as not to compete for a core with the main thread storing the block.
  const collectYoung = youngCollector()
  let idle: NodeJS.Timeout | null = null
  let between = { collections: 0, ms: 0 }
  const collect = () => {
    idle = null
    if (!collectYoung) return
    const t = performance.now()
    collectYoung()
    between.collections++
    between.ms += performance.now() - t
  }
  port.on('message', (m: ToBlockWorker) => {
    if (idle) {
      clearTimeout(idle)
      collect()
    }
    const marks: DecodeMarks = { start: wallNow(), idleCollections: between.collections, idleGc: between.ms }
    between = { collections: 0, ms: 0 }
    const t0 = threadTimes()
    const gc = new GCProfiler()
    gc.start()
    let out: FromBlockWorker
    const transfer: ArrayBuffer[] = []
    try {
      const env = decodeBlockAnswer(m.bytes, m.slot, opts, true, marks, m.part)
      const r = env.result?.kind === 'normalized' ? env.result : null
      if (r && 'packed' in r.block) transfer.push(r.block.packed.buffer as ArrayBuffer)
      const gcs = gc.stop()
      const t1 = threadTimes()
      if (r?.marks) {
        r.marks.gc = gcs.statistics.reduce((ms, g) => ms + g.cost / 1000, 0)
        if (t0 && t1) {
          r.marks.run = t1.run - t0.run
          r.marks.wait = t1.wait - t0.wait
        }
        r.marks.sent = wallNow()
      }
      out = { id: m.id, env }
    } catch (e) {
      gc.stop()
      out = { id: m.id, error: errorMessage(e) }
    }
    port.postMessage(out, transfer)
    idle = setTimeout(collect, IDLE_GC_DELAY_MS)
  })
}
