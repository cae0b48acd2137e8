/**
 * The import's batches in worker threads (worker.ts, started through worker.mjs): `WorkerBackend`
 * gives each batch whole to one worker, which parses, normalizes and encodes it and transfers the
 * chunk file's bytes back.
 */
import type { ResourceLimits } from 'node:worker_threads'
import { parseWorkerLimits } from '../../util/worker-argv.ts'
import { WorkerPool, type PoolWorker } from '../../util/worker-pool.ts'
import { LineError, type BatchOptions, type BatchStart, type LineResult } from './batch.ts'
import type { LineRing } from './line-ring.ts'
import { ImportError, type EncodedBatch, type ImportBackend } from './types.ts'
import type { FromWorker, ToWorker } from './worker.ts'

class Deferred<T> {
  resolve!: (v: T) => void
  reject!: (e: unknown) => void
  readonly promise = new Promise<T>((res, rej) => {
    this.resolve = res
    this.reject = rej
  })
  constructor() {
    this.promise.catch(() => undefined) // a failure is reported where it is awaited
  }
}

/**
 * Batches in worker threads (worker.ts): each batch goes whole to one worker (the one with
 * the fewest batches in hand), which parses, normalizes and encodes it, and transfers the chunk
 * file's bytes back. A worker that fails (an exception, out of memory, exit) fails every pending
 * and later call: its batches die with it, so the worker pool (src/util/worker-pool.ts) is told to
 * allow no restart.
 */
export class WorkerBackend implements ImportBackend {
  private readonly pool: WorkerPool<{ batches: number }, { id?: number }, FromWorker>
  private readonly owner = new Map<number, PoolWorker<{ batches: number }>>()
  private readonly starts = new Map<number, Deferred<BatchStart>>()
  private readonly acks = new Map<number, Deferred<LineResult>>()
  private readonly chunks = new Map<number, Deferred<EncodedBatch>>()
  private failure: Error | null = null

  constructor(
    n: number,
    opts: BatchOptions,
    /** where lines are given to the workers; a line elsewhere is transferred */
    private readonly ring: LineRing | null,
    resourceLimits?: ResourceLimits,
  ) {
    this.pool = new WorkerPool<{ batches: number }, { id?: number }, FromWorker>({
      name: 'import worker',
      size: n,
      url: new URL('./worker.mjs', import.meta.url),
      zlibGate: true,
      setup: (_slot, gate) => ({
        workerData: { ...opts, zlibGate: gate, lineRing: ring?.buffer ?? null },
        state: { batches: 0 },
      }),
      resourceLimits: parseWorkerLimits(resourceLimits),
      eager: true,
      restarts: { maxRestarts: 0 },
      load: (w) => w.state.batches,
      // (no request of the pool's: every message is the backend's)
      idOf: () => undefined,
      onMessage: (w, m) => this.onMessage(w, m),
      onFailure: (e) => this.fail(new ImportError(e.message)),
    })
  }

  private fail(e: Error): void {
    if (this.failure) return
    this.failure = e
    for (const d of this.starts.values()) d.reject(e)
    for (const d of this.acks.values()) d.reject(e)
    for (const d of this.chunks.values()) d.reject(e)
  }

  private onMessage(w: PoolWorker<{ batches: number }>, m: FromWorker): void {
    if (m.t === 'ack') {
      this.acks.get(m.seq)?.resolve({ warnings: m.warnings })
      this.acks.delete(m.seq)
    } else if (m.t === 'started') {
      this.starts.get(m.id)?.resolve(m.start)
      this.starts.delete(m.id)
    } else if (m.t === 'chunk' || m.t === 'dropped') {
      w.state.batches--
      const d = this.chunks.get(m.id)
      if (m.t === 'dropped') d?.reject(new LineError(m.message, m.seq))
      else d?.resolve({ ...m.chunk, bytes: m.data.byteLength, parts: [m.data], sealed: m.sealed })
    } else if (m.seq !== null && m.line) {
      this.acks.get(m.seq)?.reject(new LineError(m.message, m.seq))
      this.acks.delete(m.seq)
    } else this.fail(new ImportError(`${w.name} failed: ${m.message}`))
  }

  private post(id: number, m: ToWorker, transfer?: ArrayBuffer[]): void {
    this.pool.post(this.owner.get(id)!, m, transfer)
  }

  async start(id: number, tail: readonly string[]): Promise<BatchStart> {
    if (this.failure) throw this.failure
    const w = this.pool.pick()
    if (w === null) throw this.pool.failure ?? new ImportError('import workers are closed')
    w.state.batches++
    this.owner.set(id, w)
    this.chunks.set(id, new Deferred())
    this.post(id, { t: 'start', id, tail: [...tail] })
    if (tail.length === 0) return { blocks: 0, bytes: 0 }
    const d = new Deferred<BatchStart>()
    this.starts.set(id, d)
    return d.promise
  }

  line(id: number, seq: number, line: Buffer): Promise<LineResult> {
    if (this.failure) return Promise.reject(this.failure)
    const d = new Deferred<LineResult>()
    this.acks.set(seq, d)
    if (this.ring?.holds(line)) {
      // in the ring the workers share: where
      this.post(id, { t: 'line', id, seq, at: line.byteOffset, length: line.length })
    } else {
      // a buffer of the line's own: moved to the worker (a view of anything else: copied first)
      const whole = line.byteOffset === 0 && line.byteLength === line.buffer.byteLength
      const bytes = whole && !(line.buffer instanceof SharedArrayBuffer) ? line : new Uint8Array(line)
      this.post(id, { t: 'line', id, seq, bytes }, [bytes.buffer as ArrayBuffer])
    }
    return d.promise
  }

  end(id: number, sealed: boolean): void {
    if (!this.failure) this.post(id, { t: 'end', id, sealed })
  }

  chunk(id: number): Promise<EncodedBatch> {
    const d = this.chunks.get(id)!
    return d.promise.finally(() => {
      this.chunks.delete(id)
      this.owner.delete(id)
    })
  }

  async close(): Promise<void> {
    // (a worker ended inside zlib's setup aborts the process: the pool lets the calls under way finish first)
    await this.pool.close()
  }
}
