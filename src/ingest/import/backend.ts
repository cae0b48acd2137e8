/**
 * The import's batches parsed, normalized and encoded in this thread (`--workers 1`), and the
 * default number of worker threads (worker-backend.ts) otherwise.
 */
import { availableParallelism } from 'node:os'
import { BatchBuilder, type BatchOptions, type BatchStart, type LineResult } from './batch.ts'
import type { EncodedBatch, ImportBackend } from './types.ts'

export class InProcessBackend implements ImportBackend {
  private readonly builder: BatchBuilder
  private readonly chunks = new Map<number, Promise<EncodedBatch>>()
  constructor(opts: BatchOptions) {
    this.builder = new BatchBuilder(opts)
  }
  async start(_id: number, tail: readonly string[]): Promise<BatchStart> {
    return this.builder.startWith(tail)
  }
  async line(_id: number, seq: number, line: Buffer): Promise<LineResult> {
    return this.builder.add(line, seq)
  }
  end(id: number, sealed: boolean): void {
    const p = this.builder.encode(sealed) // takes the batch's blocks at once
    p.catch(() => undefined) // awaited (and reported) by chunk()
    this.chunks.set(id, p)
  }
  chunk(id: number): Promise<EncodedBatch> {
    const p = this.chunks.get(id)!
    this.chunks.delete(id)
    return p
  }
  async close(): Promise<void> {}
}

/** Worker threads used by default: one per core the process may use, at most 8 (memory: two batches each). */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(8, availableParallelism()))
}
