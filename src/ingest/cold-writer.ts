/**
 * A live follower's cold store with its writes in a worker thread (cold-writer-worker.ts).
 *
 * Finalized blocks move from the hot store to the cold store as they finalize, a few at a time:
 * the DiskColdStore writes each append as a small chunk and merges small chunks into bigger ones,
 * so every block is encoded several times; with mainnet-sized blocks that is seconds of CPU per
 * second of chain, which on the main thread stalled every stream (the tail bench with
 * `TAIL_COLD=disk`). Here the worker thread owns the store as its one writer; this thread reads
 * the same directory through a read-only DiskColdStore (`reader`: queries, heads, the render
 * threads) that picks up each append once it is durable. The append protocol, its durability and
 * its crash repair are the DiskColdStore's own; the hot store deletes finalized blocks only after
 * `append` resolved, as with any ColdStore.
 */
import { Worker } from 'node:worker_threads'
import type { Block } from '../model.ts'
import type { Chunk, HeadInfo } from '../store/chunk.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../store/cold.ts'
import { transferablePacked } from '../store/packed-block.ts'
import { mapAcrossTurns } from '../util/turns.ts'
import type { ColdStore } from '../store/types.ts'
import { workerExecArgv } from '../util/worker-argv.ts'
import { newZlibGate, release, stopAtExit, stopZlibGate } from '../util/zlib-gate.ts'
import type { ColdWriterSetup, FromColdWriter, ToColdWriter } from './cold-writer-worker.ts'

/**
 * How a follower with this cold store moves finalized blocks (RealtimeIngesterOptions): by 20
 * (at mainnet size ~32 MiB of chunk, sealed at once) or once the oldest waited 30 s. Appends of
 * a block or two, as they finalize, were each written as a small chunk and rewritten by merge
 * after merge: every block encoded 3-4 times.
 */
export const FINALIZE_BATCHES = { finalizeMinBlocks: 20, finalizeMaxDelayMs: 30_000 } as const

const WRITER_CACHE_BYTES = 16 * 1024 * 1024

/**
 * The writer thread's default nice value: below the decoding threads and the main thread, so that
 * encoding a batch of finalized blocks (seconds of CPU at mainnet size) waits for a core while a
 * new block is decoded or streamed, and takes the idle cores the rest of the time
 */
export const COLD_WRITER_NICE = 10

/** start a writer thread on `setup` and wait until its store is open */
/** each writer thread's zlib gate: a thread is ended only once it is outside zlib (`endWriter`) */
const gates = new WeakMap<Worker, Int32Array>()

/** ends a writer thread, after the zlib call it may be in (ended inside zlib's setup, Node aborts the process) */
function endWriter(worker: Worker): Promise<number> {
  const gate = gates.get(worker)
  if (gate !== undefined) stopZlibGate(gate)
  return worker.terminate()
}

async function startWriter(setup: ColdWriterSetup): Promise<Worker> {
  const zlibGate = newZlibGate()
  const worker = new Worker(new URL('./cold-writer-worker.mjs', import.meta.url), {
    workerData: { ...setup, zlibGate },
    execArgv: workerExecArgv(),
  })
  gates.set(worker, zlibGate)
  // unref'd: ended at exit if still running, then never inside zlib
  stopAtExit(zlibGate)
  worker.once('exit', () => release(zlibGate))
  try {
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`cold store writer thread exited (code ${code})`))
      worker.once('error', reject)
      worker.once('exit', onExit)
      worker.once('message', (m: FromColdWriter) => {
        worker.off('error', reject)
        worker.off('exit', onExit)
        if (m.t === 'ready') resolve()
        else reject(new Error(m.t === 'error' ? m.message : `unexpected ${m.t}`))
      })
    })
  } catch (e) {
    await endWriter(worker)
    throw e
  }
  return worker
}

export class ColdWriterThread implements ColdStore {
  private readonly pending = new Map<number, { resolve: (last: HeadInfo | null) => void; reject: (e: Error) => void }>()
  private nextId = 1
  /** why the writer thread is gone (null while it runs) */
  private failure: Error | null = null
  private closed = false
  private worker!: Worker
  /** writer threads started (a thread that dies is replaced on the next append) */
  starts = 0

  private constructor(
    private readonly setup: ColdWriterSetup,
    /** the same directory, read-only, in this thread */
    readonly reader: DiskColdStore,
  ) {}

  /**
   * Open the store at `dir` for writing in a worker thread (creating it when missing) and for
   * reading here. `options` apply to both (the reader is opened read-only, with `verify: 'none'`:
   * the writer checked the files). `thread.nice`: the writer thread's nice value (default
   * COLD_WRITER_NICE; 0: the process's priority).
   */
  static async open(
    dir: string,
    options: Omit<DiskColdStoreOptions, 'readOnly'> = {},
    thread: { nice?: number } = {},
  ): Promise<ColdWriterThread> {
    // the writer reads only for merges: a small cache of its own
    const cacheBytes = Math.min(options.cacheBytes ?? WRITER_CACHE_BYTES, WRITER_CACHE_BYTES)
    const setup: ColdWriterSetup = {
      dir,
      options: { ...options, cacheBytes, acquireChunk: undefined },
      nice: thread.nice ?? COLD_WRITER_NICE,
    }
    const worker = await startWriter(setup)
    let reader: DiskColdStore
    try {
      reader = await DiskColdStore.open(dir, { ...options, readOnly: true, verify: 'none' })
    } catch (e) {
      await endWriter(worker)
      throw e
    }
    const s = new ColdWriterThread(setup, reader)
    s.attach(worker)
    return s
  }

  private attach(worker: Worker): void {
    this.worker = worker
    this.failure = null
    this.starts++
    worker.on('message', (m: FromColdWriter) => this.answer(m))
    worker.on('error', (e) => this.fail(worker, new Error(`cold store writer thread failed: ${e.message}`)))
    worker.on('exit', (code) => this.fail(worker, new Error(`cold store writer thread exited (code ${code})`)))
    worker.unref()
  }

  private answer(m: FromColdWriter): void {
    if (m.t !== 'done' && m.t !== 'failed') return
    const p = this.pending.get(m.id)
    if (!p) return
    this.pending.delete(m.id)
    if (this.pending.size === 0) this.worker.unref()
    if (m.t === 'done') p.resolve(m.last)
    else p.reject(new Error(m.message))
  }

  private fail(worker: Worker, err: Error): void {
    if (this.closed || worker !== this.worker) return
    this.failure ??= err
    void endWriter(worker)
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
  }

  private send(m: ToColdWriter, transfer: ArrayBuffer[] = []): Promise<HeadInfo | null> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pending.set(m.id, { resolve, reject })
      this.worker.ref()
      this.worker.postMessage(m, transfer)
    })
  }

  firstBlock(): number | null {
    return this.reader.firstBlock()
  }

  lastBlock(): HeadInfo | null {
    return this.reader.lastBlock()
  }

  chunks(from: number, to: number): AsyncIterable<Chunk> {
    return this.reader.chunks(from, to)
  }

  chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    return this.reader.chainBefore(n, limit)
  }

  /** append in the writer thread; resolves once durable there and visible here */
  async append(blocks: Block[]): Promise<void> {
    if (this.closed) throw new Error('cold store closed')
    if (blocks.length === 0) return
    // a writer thread that died is replaced (its lock is this process's: taken over); what it
    // left half written is repaired when the new one opens the store, as after a crash
    if (this.failure) this.attach(await startWriter(this.setup))
    // each block's stored form in memory of its own, transferred. At mainnet size that is ~6 MB of
    // new memory a block, whose page faults alone took 10-20 ms a block on a VM: one block per turn
    // of the event loop, so that a batch of 20 never holds the streams and the ingest for ~0.4 s
    const packed = await mapAcrossTurns(blocks, transferablePacked)
    if (this.closed) throw new Error('cold store closed')
    const last = await this.send(
      { t: 'append', id: this.nextId++, blocks: packed },
      packed.map((p) => p.buffer as ArrayBuffer),
    )
    this.reader.refresh()
    const seen = this.reader.lastBlock()
    if (!last || !seen || seen.number !== last.number || seen.hash !== last.hash)
      throw new Error(
        `cold store: the writer thread ends at ${last?.number ?? 'nothing'}, its reader at ${seen?.number ?? 'nothing'}`,
      )
  }

  async close(): Promise<void> {
    if (this.closed) return
    try {
      if (!this.failure) await this.send({ t: 'close', id: this.nextId++ })
    } finally {
      this.closed = true
      await endWriter(this.worker)
      await this.reader.close()
    }
  }
}
