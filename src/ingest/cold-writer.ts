/**
 * A live follower's cold store with its writes in a process of its own (cold-writer-child.ts).
 *
 * Finalized blocks move from the hot store to the cold store as they finalize, by batches
 * (FINALIZE_BATCHES); with mainnet-sized blocks encoding them into chunks and merging small chunks
 * is seconds of CPU per second of chain. Here a child process owns the store as its one writer;
 * this process reads the same directory through a read-only DiskColdStore (`reader`: queries,
 * heads, the render threads) that picks up each append once it is durable. The append protocol,
 * its durability and its crash repair are the DiskColdStore's own; the hot store deletes
 * finalized blocks only after `append` resolved, as with any ColdStore.
 *
 * Why a process and not a thread: the writer runs below the server's priority (COLD_WRITER_NICE),
 * and in a thread only its own thread was: its garbage collections ran on V8's helper threads,
 * which a process's threads share, at the server's priority (bench/results/tail.md). In a process
 * of its own, every thread of the writer is niced. Blocks go to it through a pipe as the buffers
 * the hot store holds (a lazy block's packed form, not copied in this process).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Socket } from 'node:net'
import type { Block } from '../model.ts'
import type { Chunk, HeadInfo } from '../store/chunk.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../store/cold/disk-store.ts'
import { storedPieces } from '../store/packed-block.ts'
import type { ColdStore } from '../store/types.ts'
import {
  BLOCKS_FD,
  type ColdWriterSetup,
  type FromColdWriter,
  frameHead,
  type ToColdWriter,
} from './cold-writer-child.ts'

/**
 * How a follower with this cold store moves finalized blocks (RealtimeIngesterOptions): by 20
 * (at mainnet size ~32 MiB of chunk, sealed at once) or once the oldest waited 30 s. Appends of
 * a block or two, as they finalize, were each written as a small chunk and rewritten by merge
 * after merge: every block encoded 3-4 times. Ingestion pauses while 512 MiB of finalized blocks
 * wait in the hot store: a follower catching up (a restart far behind the node) while the writer
 * process, below the server's priority, gets little CPU on a busy machine held its whole catch-up
 * in the hot store, where a block takes many times its chunk's bytes, and filled the disk.
 */
export const FINALIZE_BATCHES = {
  finalizeMinBlocks: 20,
  finalizeMaxDelayMs: 30_000,
  finalizeBacklogMaxBytes: 512 * 1024 * 1024,
} as const

const WRITER_CACHE_BYTES = 16 * 1024 * 1024

/**
 * The writer process's default nice value: below the decoding threads and the main thread, so that
 * encoding a batch of finalized blocks (seconds of CPU at mainnet size) waits for a core while a
 * new block is decoded or streamed, and takes the idle cores the rest of the time
 */
export const COLD_WRITER_NICE = 10

/**
 * The writer process's V8 semi-space size, MB (a young generation of 3x this): an append holds its
 * batch's decoded blocks (~4 MB of objects for a 300-transaction block) while they are encoded, and
 * with V8's default 16 MB semi-spaces scavenge after scavenge copied them. With 32 MB semi-spaces
 * the soak's writer work (test/realtime-soak-cold.test.ts; replayed in one process, 500 blocks of
 * 300 transactions, alternate runs at load 5-8) took 32.4-32.5 s of CPU instead of 35.3-38.2
 * (64 MB: 34.5-40.6), for up to 48 MB more memory (docs/operations.md §6); with the tail held
 * as columns (tail-columns.ts), 400-block replays at load 7-11 no longer told 16, 32 and 64 apart
 * (19.9-23.9 s each), so the smaller of the two that had helped.
 */
export const COLD_WRITER_SEMI_SPACE_MB = 32

/** how long `close` waits for the writer to close its store and exit before it is killed */
const CLOSE_TIMEOUT_MS = 60_000

interface Writer {
  child: ChildProcess
  /** the pipe the blocks go through */
  blocks: Socket
}

/** start a writer process on `setup` and wait until its store is open */
async function startWriter(setup: ColdWriterSetup): Promise<Writer> {
  const child = fork(fileURLToPath(new URL('./cold-writer-child.mjs', import.meta.url)), [JSON.stringify(setup)], {
    // the entry registers tsx itself; this process's options (an inline entry's, the test runner's) are not the writer's
    execArgv: [`--max-semi-space-size=${COLD_WRITER_SEMI_SPACE_MB}`],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
  })
  const blocks = child.stdio[BLOCKS_FD] as Socket
  // a writer that died has its exit reported; a write to its closed pipe is not news
  blocks.on('error', () => undefined)
  try {
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number | null, signal: string | null) =>
        reject(new Error(`cold store writer process exited (${signal ?? `code ${code}`})`))
      child.once('error', reject)
      child.once('exit', onExit)
      child.once('message', (m: FromColdWriter) => {
        child.off('error', reject)
        child.off('exit', onExit)
        if (m.t === 'ready') resolve()
        else reject(new Error(m.t === 'error' ? m.message : `unexpected ${m.t}`))
      })
    })
  } catch (e) {
    child.kill('SIGKILL')
    throw e
  }
  return { child, blocks }
}

export class ColdWriterProcess implements ColdStore {
  private readonly pending = new Map<number, { resolve: (last: HeadInfo | null) => void; reject: (e: Error) => void }>()
  private nextId = 1
  /** why the writer process is gone (null while it runs) */
  private failure: Error | null = null
  private closed = false
  private writer!: Writer
  /** writer processes started (one that dies is replaced on the next append) */
  starts = 0

  private constructor(
    private readonly setup: ColdWriterSetup,
    /** the same directory, read-only, in this process */
    readonly reader: DiskColdStore,
  ) {}

  /**
   * Open the store at `dir` for writing in a child process (creating it when missing) and for
   * reading here. `options` apply to both (the reader is opened read-only, with `verify: 'none'`:
   * the writer checked the files). `writer.nice`: the nice value of the writer's threads (default
   * COLD_WRITER_NICE; 0: this process's priority); `writer.lockWaitMs`: how long the writer waits
   * for the store's lock while a live process holds it (default LOCK_WAIT_MS: the writer of a
   * server killed a moment ago may still be exiting).
   */
  static async open(
    dir: string,
    options: Omit<DiskColdStoreOptions, 'readOnly'> = {},
    writer: { nice?: number; lockWaitMs?: number } = {},
  ): Promise<ColdWriterProcess> {
    // the writer reads only for merges: a small cache of its own
    const cacheBytes = Math.min(options.cacheBytes ?? WRITER_CACHE_BYTES, WRITER_CACHE_BYTES)
    const setup: ColdWriterSetup = {
      dir,
      options: { ...options, cacheBytes, acquireChunk: undefined },
      nice: writer.nice ?? COLD_WRITER_NICE,
      lockWaitMs: writer.lockWaitMs,
    }
    const w = await startWriter(setup)
    let reader: DiskColdStore
    try {
      reader = await DiskColdStore.open(dir, { ...options, readOnly: true, verify: 'none' })
    } catch (e) {
      w.child.kill('SIGKILL')
      throw e
    }
    const s = new ColdWriterProcess(setup, reader)
    s.attach(w)
    return s
  }

  /** the writer process's id (tests) */
  get pid(): number | undefined {
    return this.writer.child.pid
  }

  private attach(w: Writer): void {
    this.writer = w
    this.failure = null
    this.starts++
    w.child.on('message', (m: FromColdWriter) => this.answer(m))
    w.child.on('error', (e) => this.fail(w, new Error(`cold store writer process failed: ${e.message}`)))
    w.child.on('exit', (code, signal) =>
      this.fail(w, new Error(`cold store writer process exited (${signal ?? `code ${code}`})`)),
    )
    this.ref(false)
  }

  /** keep this process alive for the writer only while an answer is awaited */
  private ref(on: boolean): void {
    const { child, blocks } = this.writer
    if (on) {
      child.ref()
      child.channel?.ref()
      blocks.ref()
    } else {
      child.unref()
      child.channel?.unref()
      blocks.unref()
    }
  }

  private answer(m: FromColdWriter): void {
    if (m.t !== 'done' && m.t !== 'failed') return
    const p = this.pending.get(m.id)
    if (!p) return
    this.pending.delete(m.id)
    if (this.pending.size === 0) this.ref(false)
    if (m.t === 'done') p.resolve(m.last)
    else p.reject(new Error(m.message))
  }

  private fail(w: Writer, err: Error): void {
    if (this.closed || w !== this.writer) return
    this.failure ??= err
    w.child.kill('SIGKILL')
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
  }

  /** send `m`, after the frames of `blocks` on the pipe */
  private send(m: ToColdWriter, blocks: readonly Block[] = []): Promise<HeadInfo | null> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pending.set(m.id, { resolve, reject })
      this.ref(true)
      const pipe = this.writer.blocks
      // the buffers as they are: the pipe's queue holds them until written (nothing writes to them)
      for (const b of blocks) {
        const pieces = storedPieces(b)
        pipe.write(frameHead(pieces.reduce((n, p) => n + p.byteLength, 0)))
        for (const p of pieces) if (p.byteLength) pipe.write(p)
      }
      this.writer.child.send(m)
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

  /** append in the writer process; resolves once durable there and visible here */
  async append(blocks: Block[]): Promise<void> {
    if (this.closed) throw new Error('cold store closed')
    if (blocks.length === 0) return
    // a writer that died is replaced (its lock, of a process gone, is taken over); what it left
    // half written is repaired when the new one opens the store, as after a crash
    if (this.failure) this.attach(await startWriter(this.setup))
    let last: HeadInfo | null
    try {
      last = await this.send({ t: 'append', id: this.nextId++, blocks: blocks.length }, blocks)
    } finally {
      // also after a failure: what the writer published is seen here (a retry is recognized there)
      this.reader.refresh()
    }
    const seen = this.reader.lastBlock()
    if (!last || !seen || seen.number !== last.number || seen.hash !== last.hash)
      throw new Error(
        `cold store: the writer process ends at ${last?.number ?? 'nothing'}, its reader at ${seen?.number ?? 'nothing'}`,
      )
  }

  async close(): Promise<void> {
    if (this.closed) return
    const { child } = this.writer
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('exit', () => resolve())
    })
    try {
      if (!this.failure) await this.send({ t: 'close', id: this.nextId++ })
    } finally {
      this.closed = true
      const timer = setTimeout(() => child.kill('SIGKILL'), this.failure ? 0 : CLOSE_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
      await this.reader.close()
    }
  }
}
