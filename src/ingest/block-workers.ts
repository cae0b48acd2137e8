/**
 * Worker threads that decode `getBlock` answers (parse, shape check, normalize: block-decode.ts),
 * so that the main thread, which serves the streams, only reads the bytes off the socket, applies
 * the normalized block to the hot store and wakes the streams.
 *
 * The body's bytes are transferred to a worker (no copy), or shared with it when the RPC client
 * read them into shared memory (large answers: src/ingest/rpc/); the normalized block comes back packed
 * into one transferred buffer (src/store/packed-block.ts), which the hot store writes as it is and
 * decodes only when a reader needs the records: the main thread's share of a block is a memory
 * copy into LMDB. (Structured-cloning the records instead costs the main thread a deserialization
 * as long as decoding the buffer, for every block, whether read or not.) An answer under 64 KiB
 * (at the tip, mostly "block not available") is decoded in the calling thread; each other answer
 * goes to the worker with the fewest answers pending; with two threads or more, a large answer
 * (a mainnet block) goes to two of them, each decoding half of its transactions from its half of the
 * bytes only (block-cut.ts: both cut the transactions array at the same place), so that a block is
 * ready in about half the time when two cores are free; the one done last answers for both
 * (block-worker.ts), so that the main thread receives one answer with the parts' two buffers. The
 * threads are a `WorkerPool` (src/util/worker-pool.ts): a thread that dies fails its pending answers
 * (the RPC client takes them for damaged transport and asks again) and is spawned again after a
 * backoff; one that keeps dying fails the pool, and every answer after it.
 *
 * `decodeStreamed` does the same for the blocks of a Geyser stream (src/ingest/geyser/source.ts):
 * the SubscribeUpdateBlock message's memory is transferred to the thread with the fewest pending,
 * which reads the protobuf and normalizes (src/ingest/geyser/block-decode.ts); the main thread only
 * reads the update's header.
 */
import { MessageChannel, type Transferable } from 'node:worker_threads'
import {
  decodeBlockAnswer,
  type DecodedBlock,
  type DecodedEnvelope,
  type DecodePart,
  type NormalizeOptions,
} from './block-decode.ts'
import type { FromBlockWorker, PairOfParts, ToBlockWorker } from './block-worker.ts'
import { type BlockDecoder } from './rpc/source.ts'
import { SharedBodies } from './rpc/shared-bodies.ts'
import { wallNow } from '../util/wall-clock.ts'
import { parseWorkerLimits } from '../util/worker-argv.ts'
import { WorkerPool, type PoolWorker, type WorkerPoolStats } from '../util/worker-pool.ts'
import { defaultDecodeThreads } from './decode-threads.ts'

/** a thread's answer for one part of a pair: its part went to the other thread, which answers */
const HANDED_OFF = Symbol('handed off')
/** a thread's answer for a pair: the parts do not join, the answer is to be decoded whole */
const REJOIN = Symbol('decode whole')
type Outcome = DecodedEnvelope | typeof HANDED_OFF | typeof REJOIN

type Slot = PoolWorker<undefined>

export class BlockWorkerPool implements BlockDecoder {
  private readonly threads: number
  private readonly normalize: NormalizeOptions
  private readonly splitMinBytes: number
  private readonly inlineMaxBytes: number
  /** the threads (src/util/worker-pool.ts: a dead one fails its answers and is spawned again) */
  private readonly pool: WorkerPool<undefined, ToBlockWorker, FromBlockWorker>
  private closed = false
  /**
   * the shared memory large streamed messages are copied into, kept for the next ones: a new
   * `SharedArrayBuffer` of a mainnet block's ~3 MB costs ~5 ms to allocate and fault in, against
   * ~0.4 ms for the copy into one already touched
   */
  private readonly streamedBodies = new SharedBodies(4)
  /**
   * `inline`: answers decoded in the calling thread (smaller than `inlineMaxBytes`); `spawned`:
   * threads started, respawns included; `streamed`: streamed blocks (`decodeStreamed`) a thread
   * answered for
   */
  readonly stats = { decoded: 0, failed: 0, spawned: 0, inline: 0, streamed: 0 }

  /**
   * `splitMinBytes` (default 1 MiB): with two threads or more, an answer at least this large is
   * decoded in two parts at once, half of its transactions in each thread. `inlineMaxBytes`
   * (default 64 KiB): an answer smaller than this is decoded in the calling thread, at once.
   *
   * Why small answers stay here: at the chain's tip most answers are the node's "block not
   * available" errors (~100 bytes, one per poll), which cost less to parse than a round trip to a
   * thread, and sent to a thread they made it collect its young generation before each (the
   * collection `block-worker.ts` runs between answers). With ~13 such answers between two blocks,
   * V8 then shrank that thread's young generation, and its half of the next mainnet block ran 2-7
   * scavenges (5-15 ms copying the records made so far) where the other thread ran none.
   */
  constructor(
    opts: { threads?: number; normalize?: NormalizeOptions; splitMinBytes?: number; inlineMaxBytes?: number } = {},
  ) {
    this.threads = Math.max(1, opts.threads ?? defaultDecodeThreads())
    this.normalize = { ...opts.normalize }
    this.splitMinBytes = opts.splitMinBytes ?? 1 << 20
    this.inlineMaxBytes = opts.inlineMaxBytes ?? 64 << 10
    const normalize = this.normalize
    this.pool = new WorkerPool<undefined, ToBlockWorker, FromBlockWorker>({
      name: 'block decoding worker',
      size: this.threads,
      url: new URL('./block-worker.mjs', import.meta.url),
      setup: () => ({ workerData: normalize, state: undefined }),
      resourceLimits: parseWorkerLimits(),
      ref: 'busy',
      onSpawn: () => this.stats.spawned++,
    })
  }

  /** the threads' counters (spawned, died, answers pending, threads busy) */
  get workerStats(): WorkerPoolStats {
    return this.pool.stats
  }

  get size(): number {
    return this.threads
  }

  decode(bytes: Buffer, slot: number, signal?: AbortSignal): Promise<DecodedEnvelope> {
    if (this.closed) return Promise.reject(new Error('block decoding workers are closed'))
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
    if (bytes.byteLength < this.inlineMaxBytes) {
      try {
        const env = decodeBlockAnswer(bytes, slot, this.normalize)
        this.stats.inline++
        return Promise.resolve(env)
      } catch (e) {
        this.stats.failed++
        return Promise.reject(e instanceof Error ? e : new Error(String(e)))
      }
    }
    // shared memory (large answers, src/ingest/rpc/) is read by the threads as it is; else the
    // body's memory is transferred when it is its own, and a pooled small one copied
    const shared = bytes.buffer instanceof SharedArrayBuffer
    const own = shared || (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength)
    const data = own ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes)
    if (this.threads < 2 || bytes.byteLength < this.splitMinBytes) return this.whole(slot, data)
    // a large answer: half of its transactions in each of two threads, each reading its own half of
    // the bytes (block-cut.ts), in shared memory (a copy when it was not: also kept in case the
    // parts do not join); the thread done last answers for both parts (block-worker.ts), so
    // that the main thread receives one answer for the block
    const both = shared ? data : new Uint8Array(new SharedArrayBuffer(data.byteLength))
    if (!shared) both.set(data)
    return this.inTwo(slot, both)
  }

  /**
   * `both` (shared memory) decoded in two parts by two threads, the one done last answering for
   * the block; decoded whole by one thread when the parts do not join (or fewer than two threads
   * run: one is respawning after a death, see worker-pool.ts). `streamed`: a streamed block's
   * message (`decodeStreamed`)
   */
  private inTwo(slot: number, both: Uint8Array, streamed?: true): Promise<DecodedEnvelope> {
    const a = this.pool.pick()
    const b = a && this.pool.pick(a)
    if (!a || !b) return this.whole(slot, both, streamed)
    const flag = new Int32Array(new SharedArrayBuffer(8))
    const { port1, port2 } = new MessageChannel()
    // both parts settled before the answer does (its memory is used again then: rpc.ts)
    return Promise.allSettled([
      this.send(a, slot, both, { index: 0, of: 2 }, { port: port1, flag }, streamed),
      this.send(b, slot, both, { index: 1, of: 2 }, { port: port2, flag }, streamed),
    ]).then((parts) => {
      const answers: DecodedEnvelope[] = []
      let rejoin = false
      for (const p of parts) {
        if (p.status === 'rejected') throw p.reason
        if (p.value === REJOIN) rejoin = true
        else if (p.value !== HANDED_OFF) answers.push(p.value)
      }
      return !rejoin && answers.length === 1 ? answers[0] : this.whole(slot, both, streamed)
    })
  }

  /**
   * a streamed block's SubscribeUpdateBlock message (Geyser: src/ingest/geyser/block-decode.ts)
   * read and normalized by a thread, whatever its size (every one is a block); `own`: the memory
   * under `message` is the caller's to give (transferred), else the message is copied. With two
   * threads or more, a message of `splitMinBytes` or more (a mainnet block) is copied into shared
   * memory and decoded in two parts at once, half of the transactions in each thread, as a large
   * `getBlock` answer is (the shared memory reused from message to message). Rejects when the
   * message cannot be read.
   */
  decodeStreamed(message: Uint8Array, slot: number, own: boolean): Promise<DecodedBlock> {
    if (this.closed) return Promise.reject(new Error('block decoding workers are closed'))
    let answer: Promise<DecodedEnvelope>
    if (this.threads >= 2 && message.byteLength >= this.splitMinBytes) {
      const both = this.streamedBodies.take(message.byteLength)
      both.set(message)
      const bodies = this.streamedBodies
      // its memory serves the next message once no thread reads it (both parts settled, and the
      // whole message decoded again when they did not join)
      answer = this.inTwo(slot, both, true).finally(() => bodies.release(both))
    } else answer = this.whole(slot, own ? message : new Uint8Array(message), true)
    return answer.then((env) => {
      if (!env.result) throw new Error('a block decoding worker answered no block')
      this.stats.streamed++
      return env.result
    })
  }

  /** the answer (`streamed`: a streamed block's message) decoded whole by one thread (the least busy) */
  private whole(slot: number, bytes: Uint8Array, streamed?: true): Promise<DecodedEnvelope> {
    return this.send(undefined, slot, bytes, undefined, undefined, streamed).then((r) => {
      if (typeof r === 'symbol') throw new Error('a block decoding worker answered for a part it was not given')
      return r
    })
  }

  /** `bytes` to thread `to` (else the least busy), and its answer */
  private send(
    to: Slot | undefined,
    slot: number,
    bytes: Uint8Array,
    part?: DecodePart,
    pair?: PairOfParts,
    streamed?: true,
  ): Promise<Outcome> {
    const msg: Omit<ToBlockWorker, 'id'> = {
      slot,
      bytes,
      ...(part ? { part } : {}),
      ...(pair ? { pair } : {}),
      ...(streamed ? { streamed } : {}),
    }
    const transfer: Transferable[] = bytes.buffer instanceof SharedArrayBuffer ? [] : [bytes.buffer]
    if (pair) transfer.push(pair.port)
    return this.pool.request(msg, { transfer, to }).then((m) => this.outcome(m))
  }

  private outcome(m: FromBlockWorker): Outcome {
    if ('error' in m) {
      this.stats.failed++
      throw new Error(m.error)
    }
    this.stats.decoded++
    if ('handedOff' in m) return HANDED_OFF
    if ('rejoin' in m) return REJOIN
    const r = m.env.result
    if (r?.kind === 'normalized' && r.marks) r.marks.received = wallNow()
    return m.env
  }

  async close(): Promise<void> {
    this.closed = true
    await this.pool.close()
  }
}
