/**
 * Worker threads that decode `getBlock` answers (parse, shape check, normalize: block-decode.ts),
 * so that the main thread, which serves the streams, only reads the bytes off the socket, applies
 * the normalized block to the hot store and wakes the streams.
 *
 * The body's bytes are transferred to a worker (no copy); the normalized block comes back packed
 * into one transferred buffer (src/store/packed-block.ts), which the hot store writes as it is and
 * decodes only when a reader needs the records: the main thread's share of a block is a memory
 * copy into LMDB. (Structured-cloning the records instead costs the main thread a deserialization
 * as long as decoding the buffer, for every block, whether read or not.) Each answer
 * goes to the worker with the fewest answers pending. A worker that dies fails its pending
 * answers (the RPC client takes them for damaged transport and asks again) and is replaced on the
 * next answer.
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { DecodedEnvelope, NormalizeOptions } from './block-decode.ts'
import type { FromBlockWorker, ToBlockWorker } from './block-worker.ts'
import type { BlockDecoder } from './rpc.ts'
import { wallNow } from '../util/wall-clock.ts'
import { workerExecArgv } from '../util/worker-argv.ts'

interface Pending {
  resolve: (env: DecodedEnvelope) => void
  reject: (err: Error) => void
}

interface Slot {
  w: Worker
  pending: Map<number, Pending>
  dead: boolean
}

/** threads used by default: the cores left beside the main thread, at least 1, at most 4 */
export function defaultDecodeThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1))
}

export class BlockWorkerPool implements BlockDecoder {
  private readonly threads: number
  private readonly normalize: NormalizeOptions
  private readonly workers: Slot[] = []
  private nextId = 1
  private closed = false
  readonly stats = { decoded: 0, failed: 0, spawned: 0 }

  constructor(opts: { threads?: number; normalize?: NormalizeOptions } = {}) {
    this.threads = Math.max(1, opts.threads ?? defaultDecodeThreads())
    this.normalize = { ...opts.normalize }
  }

  get size(): number {
    return this.threads
  }

  private spawn(): Slot {
    const w = new Worker(new URL('./block-worker.mjs', import.meta.url), {
      workerData: this.normalize,
      execArgv: workerExecArgv(),
    })
    const slot: Slot = { w, pending: new Map(), dead: false }
    const fail = (err: Error) => {
      if (slot.dead) return
      slot.dead = true
      const i = this.workers.indexOf(slot)
      if (i >= 0) this.workers.splice(i, 1)
      for (const p of slot.pending.values()) p.reject(err)
      slot.pending.clear()
      void w.terminate()
    }
    w.on('message', (m: FromBlockWorker) => {
      const p = slot.pending.get(m.id)
      if (!p) return
      slot.pending.delete(m.id)
      if ('error' in m) {
        this.stats.failed++
        p.reject(new Error(m.error))
      } else {
        this.stats.decoded++
        const r = m.env.result
        if (r?.kind === 'normalized' && r.marks) r.marks.received = wallNow()
        p.resolve(m.env)
      }
      if (slot.pending.size === 0) w.unref()
    })
    w.on('error', (e) => fail(new Error(`block decoding worker failed: ${e.message}`)))
    w.on('exit', (code) => fail(new Error(`block decoding worker exited (code ${code})`)))
    w.unref()
    return slot
  }

  private pick(): Slot {
    if (this.workers.length < this.threads) {
      this.stats.spawned++
      const s = this.spawn()
      this.workers.push(s)
      return s
    }
    let best = this.workers[0]
    for (const s of this.workers) if (s.pending.size < best.pending.size) best = s
    return best
  }

  decode(bytes: Buffer, slot: number, signal?: AbortSignal): Promise<DecodedEnvelope> {
    if (this.closed) return Promise.reject(new Error('block decoding workers are closed'))
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
    const s = this.pick()
    const id = this.nextId++
    // transfer the body's memory when it is its own (large answers); copy a pooled small one
    const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength
    const data = own ? new Uint8Array(bytes.buffer, 0, bytes.byteLength) : new Uint8Array(bytes)
    return new Promise<DecodedEnvelope>((resolve, reject) => {
      s.pending.set(id, { resolve, reject })
      s.w.ref()
      const msg: ToBlockWorker = { id, slot, bytes: data }
      s.w.postMessage(msg, [data.buffer as ArrayBuffer])
    })
  }

  async close(): Promise<void> {
    this.closed = true
    const ws = this.workers.splice(0)
    for (const s of ws) {
      s.dead = true
      for (const p of s.pending.values()) p.reject(new Error('block decoding workers are closed'))
      s.pending.clear()
    }
    await Promise.all(ws.map((s) => s.w.terminate()))
  }
}
