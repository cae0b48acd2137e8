/**
 * The import's batches in worker threads (worker.ts, started through worker.mjs): `WorkerBackend`
 * gives each batch whole to one worker, which parses, normalizes and encodes it and transfers the
 * chunk file's bytes back.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads'
import { parseWorkerLimits, workerExecArgv } from '../../util/worker-argv.ts'
import { newZlibGate, stopZlibGates } from '../../util/zlib-gate.ts'
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
 * and later call.
 */
export class WorkerBackend implements ImportBackend {
  private readonly workers: { w: Worker; batches: number; gate: Int32Array }[] = []
  private readonly owner = new Map<number, number>()
  private readonly starts = new Map<number, Deferred<BatchStart>>()
  private readonly acks = new Map<number, Deferred<LineResult>>()
  private readonly chunks = new Map<number, Deferred<EncodedBatch>>()
  private failure: Error | null = null
  private closing = false

  constructor(
    n: number,
    opts: BatchOptions,
    /** where lines are given to the workers; a line elsewhere is transferred */
    private readonly ring: LineRing | null,
    resourceLimits?: ResourceLimits,
  ) {
    for (let i = 0; i < n; i++) {
      const gate = newZlibGate()
      const w = new Worker(new URL('./worker.mjs', import.meta.url), {
        workerData: { ...opts, zlibGate: gate, lineRing: ring?.buffer ?? null },
        resourceLimits: parseWorkerLimits(resourceLimits),
        execArgv: workerExecArgv(),
      })
      w.on('message', (m: FromWorker) => this.onMessage(i, m))
      w.on('error', (e) => this.fail(new ImportError(`import worker ${i + 1} failed: ${e.message}`)))
      w.on('exit', (code) => {
        if (!this.closing) this.fail(new ImportError(`import worker ${i + 1} exited (code ${code})`))
      })
      this.workers.push({ w, batches: 0, gate })
    }
  }

  private fail(e: Error): void {
    if (this.failure) return
    this.failure = e
    for (const d of this.starts.values()) d.reject(e)
    for (const d of this.acks.values()) d.reject(e)
    for (const d of this.chunks.values()) d.reject(e)
  }

  private onMessage(i: number, m: FromWorker): void {
    if (m.t === 'ack') {
      this.acks.get(m.seq)?.resolve({ warnings: m.warnings })
      this.acks.delete(m.seq)
    } else if (m.t === 'started') {
      this.starts.get(m.id)?.resolve(m.start)
      this.starts.delete(m.id)
    } else if (m.t === 'chunk' || m.t === 'dropped') {
      this.workers[i].batches--
      const d = this.chunks.get(m.id)
      if (m.t === 'dropped') d?.reject(new LineError(m.message, m.seq))
      else d?.resolve({ ...m.chunk, bytes: m.data.byteLength, parts: [m.data], sealed: m.sealed })
    } else if (m.seq !== null && m.line) {
      this.acks.get(m.seq)?.reject(new LineError(m.message, m.seq))
      this.acks.delete(m.seq)
    } else this.fail(new ImportError(`import worker ${i + 1} failed: ${m.message}`))
  }

  private post(id: number, m: ToWorker, transfer?: ArrayBuffer[]): void {
    this.workers[this.owner.get(id)!].w.postMessage(m, transfer)
  }

  async start(id: number, tail: readonly string[]): Promise<BatchStart> {
    if (this.failure) throw this.failure
    let best = 0
    for (let i = 1; i < this.workers.length; i++) if (this.workers[i].batches < this.workers[best].batches) best = i
    this.workers[best].batches++
    this.owner.set(id, best)
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
    this.closing = true
    // a worker ended inside zlib's setup aborts the process: let the calls under way finish first
    stopZlibGates(this.workers.map((x) => x.gate))
    await Promise.all(this.workers.map((x) => x.w.terminate()))
  }
}
