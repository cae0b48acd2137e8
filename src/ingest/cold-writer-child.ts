/**
 * The cold store writer process (cold-writer.ts): owns the DiskColdStore of a live follower as its
 * one writer and appends the finalized blocks its parent sends, so that encoding chunks and merging
 * small ones, seconds of CPU for mainnet-sized blocks, run in a process of their own, every thread
 * of it (V8's collector and compiler threads, libuv's pool) at a lower priority than the server.
 *
 * `runColdWriter(argv[2])`: the setup, JSON (`ColdWriterSetup`). Blocks come on file descriptor 4, a pipe, each as
 * a frame (`frameHead`: its length, u32 LE, then the block's stored form, the bytes the hot store
 * keeps: src/store/packed-block.ts `storedPieces`). Messages on the IPC channel: out first `{ t: 'ready',
 * last }` or `{ t: 'error', message }`; in `{ t: 'append', id, blocks }` (the next `blocks` frames
 * of the pipe, ascending), answered `{ t: 'done', id, last }` once durable or `{ t: 'failed', id,
 * message }`; `{ t: 'close', id }`, answered `{ t: 'done', id, last: null }` once the store is
 * closed (its lock released), after which the process exits. When the parent goes (its channel
 * closes), the process exits at once: whatever it left half written is repaired by the next
 * writer, as after a crash.
 */
import { readdirSync } from 'node:fs'
import { Socket } from 'node:net'
import { setPriority } from 'node:os'
import type { HeadInfo } from '../store/chunk.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../store/cold/disk-store.ts'
import { LockError } from '../store/lock.ts'
import { unpackBlock } from '../store/packed-block.ts'
import { errorMessage } from '../util/errors.ts'

export interface ColdWriterSetup {
  dir: string
  options: DiskColdStoreOptions
  /** the nice value of every thread of the process (0: the parent's priority) */
  nice?: number
  /** how long to wait for the store's lock held by a live process (default LOCK_WAIT_MS) */
  lockWaitMs?: number
}

export type ToColdWriter = { t: 'append'; id: number; blocks: number } | { t: 'close'; id: number }

export type FromColdWriter =
  | { t: 'ready'; last: HeadInfo | null }
  | { t: 'error'; message: string }
  | { t: 'done'; id: number; last: HeadInfo | null }
  | { t: 'failed'; id: number; message: string }

/** the file descriptor of the pipe the blocks come on */
export const BLOCKS_FD = 4

/**
 * How long a new writer waits for the store's lock while a live process holds it: after the server
 * was killed, its writer process exits once it notices (at most a moment of synchronous work
 * later), and a server restarted at once finds the lock still held. A second server on the same
 * directory is refused once this has passed.
 */
export const LOCK_WAIT_MS = 15_000

/** The head of a block's frame on the pipe: the length of the block's stored form (u32 LE). */
export function frameHead(length: number): Uint8Array {
  if (!Number.isInteger(length) || length <= 0 || length > 0xffff_ffff) throw new Error(`a block of ${length} bytes`)
  const head = new Uint8Array(4)
  new DataView(head.buffer).setUint32(0, length, true)
  return head
}

/**
 * Cuts the bytes of the pipe into blocks' frames as they arrive, each block's bytes copied once
 * into memory of its own; `next` resolves with the next block's stored form, in order.
 */
export class FrameReader {
  /** bytes of the frame's head (its length) read so far */
  private readonly head = new Uint8Array(4)
  private readonly headView = new DataView(this.head.buffer)
  private headFill = 0
  private frame: Uint8Array | null = null
  private fill = 0
  private readonly ready: Uint8Array[] = []
  private readonly waiting: ((frame: Uint8Array) => void)[] = []

  push(data: Uint8Array): void {
    let at = 0
    while (at < data.byteLength) {
      if (this.frame) {
        const k = Math.min(this.frame.byteLength - this.fill, data.byteLength - at)
        this.frame.set(data.subarray(at, at + k), this.fill)
        this.fill += k
        at += k
        if (this.fill === this.frame.byteLength) {
          const w = this.waiting.shift()
          if (w) w(this.frame)
          else this.ready.push(this.frame)
          this.frame = null
          this.headFill = 0
        }
        continue
      }
      const k = Math.min(4 - this.headFill, data.byteLength - at)
      this.head.set(data.subarray(at, at + k), this.headFill)
      this.headFill += k
      at += k
      if (this.headFill === 4) {
        const len = this.headView.getUint32(0, true)
        if (len === 0) throw new Error('cold store writer: a frame of 0 bytes')
        this.frame = new Uint8Array(len)
        this.fill = 0
      }
    }
  }

  next(): Promise<Uint8Array> {
    const r = this.ready.shift()
    if (r) return Promise.resolve(r)
    return new Promise((resolve) => this.waiting.push(resolve))
  }
}

/**
 * Every thread of this process at `nice` (on Linux a thread's priority is its own: V8's helper
 * threads, started before this code runs, are set one by one; threads started later take their
 * creator's). Elsewhere the process's priority. Not permitted: left as it is.
 */
export function niceProcess(nice: number): void {
  let tids: string[]
  try {
    tids = readdirSync('/proc/self/task')
  } catch {
    tids = ['0']
  }
  for (const tid of tids) {
    try {
      setPriority(Number(tid), nice)
    } catch {
      // not permitted, or a thread that ended meanwhile
    }
  }
}

/** DiskColdStore.open, waiting up to `waitMs` for a live holder of its lock to go */
async function openWaiting(dir: string, options: DiskColdStoreOptions, waitMs: number): Promise<DiskColdStore> {
  const until = Date.now() + waitMs
  for (;;) {
    try {
      return await DiskColdStore.open(dir, options)
    } catch (e) {
      // the lock held (DiskColdStore reports it as a ColdStoreError caused by a LockError)
      if (!((e as Error).cause instanceof LockError) || Date.now() >= until) throw e
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

/** the writer process's work (its entry, cold-writer-child.mjs, calls it with argv[2]) */
export async function runColdWriter(setupJson: string): Promise<void> {
  if (!process.send) throw new Error('the cold store writer runs as a child process with an IPC channel')
  const send = process.send.bind(process)
  const { dir, options, nice, lockWaitMs } = JSON.parse(setupJson) as ColdWriterSetup
  if (nice) niceProcess(nice)
  // the parent gone: exit now (the store's crash repair covers a half-written append)
  process.on('disconnect', () => process.exit(1))
  const post = (m: FromColdWriter, then?: () => void): void => void send(m, undefined, {}, then)
  const frames = new FrameReader()
  const pipe = new Socket({ fd: BLOCKS_FD, readable: true, writable: false })
  pipe.on('data', (d: Buffer) => {
    try {
      frames.push(d)
    } catch (e) {
      // a frame this process cannot read: nothing after it can be trusted
      console.error(errorMessage(e))
      process.exit(1)
    }
  })
  pipe.on('error', () => process.exit(1))
  try {
    // nobody waits on this process's event loop but its parent's next append: chunk frames are
    // compressed here, one at a time, instead of two at once on libuv's pool
    const store = await openWaiting(dir, { ...options, compressHere: true }, lockWaitMs ?? LOCK_WAIT_MS)
    // one message at a time, in order (the store queues its appends too)
    let queue: Promise<void> = Promise.resolve()
    process.on('message', (m: ToColdWriter) => {
      queue = queue.then(async () => {
        try {
          if (m.t === 'close') {
            await store.close()
            post({ t: 'done', id: m.id, last: null }, () => process.exit(0))
            return
          }
          // the append's frames all taken before anything can fail: the next append's come after
          const framed: Uint8Array[] = []
          for (let i = 0; i < m.blocks; i++) framed.push(await frames.next())
          await store.append(framed.map((bytes) => unpackBlock(bytes)))
          post({ t: 'done', id: m.id, last: store.lastBlock() })
        } catch (e) {
          // a store whose catalogue write failed midway is repaired by opening it again: this
          // process goes, the parent starts another writer for its next append
          const exit = store.failed ? () => process.exit(1) : undefined
          post({ t: 'failed', id: m.id, message: errorMessage(e) }, exit)
        }
      })
    })
    post({ t: 'ready', last: store.lastBlock() })
  } catch (e) {
    post({ t: 'error', message: errorMessage(e) }, () => process.exit(1))
  }
}
