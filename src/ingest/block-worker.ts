/**
 * A block decoding worker thread (block-workers.ts): parses, shape-checks and normalizes the
 * `getBlock` answers the main thread transfers to it, one message at a time.
 *
 * In: `{ id, slot, bytes, part?, pair? }` (the answer's body, transferred or shared; `part`: decode
 * only that part of the block, block-decode.ts; `pair`: see `answerForPair`). Out: `{ id, env }`
 * (the decoded envelope; the normalized block packed into one buffer, transferred:
 * src/store/packed-block.ts), `{ id, error }` (the bytes are not JSON, or decoding threw), or for a
 * part of a pair `{ id, handedOff }` / `{ id, rejoin }`. With `streamed`, the bytes are a streamed
 * block's SubscribeUpdateBlock message (src/ingest/geyser/block-decode.ts), answered as `{ id, env }`
 * (`{ result }`) or `{ id, error }` (the message cannot be read).
 */
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads'
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
import { joinParts } from './block-join.ts'
import { isPackedBlock, packedBuffers } from '../store/packed-block.ts'
import { decodeStreamedBlock } from './geyser/block-decode.ts'

export interface ToBlockWorker {
  id: number
  slot: number
  bytes: Uint8Array
  /** decode only this part of the block (block-decode.ts `DecodePart`) */
  part?: DecodePart
  /** the part's pair: the thread done last answers for both (`answerForPair`) */
  pair?: PairOfParts
  /** `bytes` is a Geyser SubscribeUpdateBlock message, not a `getBlock` answer */
  streamed?: true
}

/**
 * What two threads decoding the two parts of one answer share: a port of a channel between them,
 * and two counters in shared memory (threads done; the first's result posted to the other)
 */
export interface PairOfParts {
  port: MessagePort
  flag: Int32Array
}

export type FromBlockWorker =
  | { id: number; env: DecodedEnvelope }
  | { id: number; error: string }
  /** this part's result went to the other thread of the pair, which answers for the block */
  | { id: number; handedOff: true }
  /** the parts do not join (or the other thread is gone): the answer is to be decoded whole */
  | { id: number; rejoin: true }

/** how long the thread done last waits for the other's result once it is announced (only a dead thread takes long) */
const PAIR_WAIT_MS = 10_000

/**
 * The answer for a part of a pair. The thread done first posts its result (its packed buffer
 * transferred) to the other thread and answers `handedOff`; the thread done last takes it and
 * answers for the block, with both parts' buffers in order (block-join.ts): the main thread then
 * receives one answer per block, and no thread copies the parts into new memory (the hot store
 * writes them as one into memory it reuses: src/store/hot.ts). Which thread is first is settled
 * by an atomic count, so that exactly one answers.
 */
function answerForPair(
  m: ToBlockWorker & { pair: PairOfParts; part: DecodePart },
  out: FromBlockWorker,
  transfer: ArrayBuffer[],
  marks: DecodeMarks,
): [FromBlockWorker, ArrayBuffer[]] {
  const { port: other, flag } = m.pair
  if (Atomics.add(flag, 0, 1) === 0) {
    other.postMessage(out, transfer)
    Atomics.store(flag, 1, 1)
    Atomics.notify(flag, 1)
    return [{ id: m.id, handedOff: true }, []]
  }
  const got = Atomics.wait(flag, 1, 0, PAIR_WAIT_MS) === 'timed-out' ? undefined : receiveMessageOnPort(other)
  other.close()
  if (!got) return [{ id: m.id, rejoin: true }, []]
  const theirs = got.message as FromBlockWorker
  if ('error' in out) return [out, []]
  if ('error' in theirs) return [{ id: m.id, error: theirs.error }, []]
  if (!('env' in theirs) || !('env' in out)) return [{ id: m.id, rejoin: true }, []]
  const env = joinParts(m.part.index === 0 ? [out.env, theirs.env] : [theirs.env, out.env], marks)
  if (env === null) return [{ id: m.id, rejoin: true }, []]
  const r = env.result?.kind === 'normalized' ? env.result : null
  return [{ id: m.id, env }, r && isPackedBlock(r.block) ? packedBuffers(r.block) : []]
}

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
    let transfer: ArrayBuffer[] = []
    try {
      const env = m.streamed
        ? { result: decodeStreamedBlock(m.bytes, m.slot, opts, true, marks, m.part) }
        : decodeBlockAnswer(m.bytes, m.slot, opts, true, marks, m.part)
      const r = env.result?.kind === 'normalized' ? env.result : null
      if (r && isPackedBlock(r.block)) transfer.push(...packedBuffers(r.block))
      const gcs = gc.stop()
      const t1 = threadTimes()
      marks.gc = gcs.statistics.reduce((ms, g) => ms + g.cost / 1000, 0)
      if (t0 && t1) {
        marks.run = t1.run - t0.run
        marks.wait = t1.wait - t0.wait
      }
      out = { id: m.id, env }
    } catch (e) {
      gc.stop()
      out = { id: m.id, error: errorMessage(e) }
    }
    if (m.pair && m.part) [out, transfer] = answerForPair({ ...m, pair: m.pair, part: m.part }, out, transfer, marks)
    marks.sent = wallNow()
    port.postMessage(out, transfer)
    idle = setTimeout(collect, IDLE_GC_DELAY_MS)
  })
}
