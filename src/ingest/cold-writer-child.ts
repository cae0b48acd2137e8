/**
 * The cold store writer process (cold-writer.ts): owns the DiskColdStore of a live follower as its
 * one writer and appends the finalized blocks its parent sends, so that encoding chunks and merging
 * small ones, seconds of CPU for mainnet-sized blocks, run in a process of their own, every thread
 * of it (V8's collector and compiler threads, libuv's pool) at a lower priority than the server.
 *
 * `runColdWriter(argv[2])`: the setup, JSON (`ColdWriterSetup`). Blocks come on file descriptor 4, a pipe, each as
 * a frame (`frameHeader`: the number of parts, each part's length, then the parts: the block's
 * packed form, src/store/packed-block.ts). Messages on the IPC channel: out first `{ t: 'ready',
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
import { DiskColdStore, type DiskColdStoreOptions } from '../store/cold.ts'
import { compressInThisThread } from '../store/cold/frames.ts'
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

/** the most parts a block's frame may have (a packed block in parts counts them in one byte) */
const MAX_PARTS = 255

/** the head of a block's frame on the pipe: the number of parts, then each part's length (u32 LE) */
export function frameHeader(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 0 || parts.length > MAX_PARTS) throw new Error(`a block in ${parts.length} parts`)
  const head = new Uint8Array(4 + 4 * parts.length)
  const view = new DataView(head.buffer)
  view.setUint32(0, parts.length, true)
  parts.forEach((p, i) => view.setUint32(4 + 4 * i, p.byteLength, true))
  return head
}

/**
 * Cuts the bytes of the pipe into blocks' frames as they arrive, each part copied once into
 * memory of its own; `next` resolves with the parts of the next frame, in order.
 */
export class FrameReader {
  /** bytes of the frame's head read so far */
  private readonly head = new Uint8Array(4 + 4 * MAX_PARTS)
  private readonly headView = new DataView(this.head.buffer)
  private headFill = 0
  private lengths: number[] | null = null
  private parts: Uint8Array[] = []
  private part: Uint8Array | null = null
  private partFill = 0
  private readonly ready: Uint8Array[][] = []
  private readonly waiting: ((parts: Uint8Array[]) => void)[] = []

  push(data: Uint8Array): void {
    let at = 0
    while (at < data.byteLength) {
      if (this.part) {
        const k = Math.min(this.part.byteLength - this.partFill, data.byteLength - at)
        this.part.set(data.subarray(at, at + k), this.partFill)
        this.partFill += k
        at += k
        if (this.partFill === this.part.byteLength) {
          this.parts.push(this.part)
          this.part = null
          this.nextPart()
        }
        continue
      }
      // the head: the count, then the lengths
      const want = this.headFill < 4 ? 4 : 4 + 4 * this.headView.getUint32(0, true)
      const k = Math.min(want - this.headFill, data.byteLength - at)
      this.head.set(data.subarray(at, at + k), this.headFill)
      this.headFill += k
      at += k
      if (this.headFill === 4) {
        const n = this.headView.getUint32(0, true)
        if (n === 0 || n > MAX_PARTS) throw new Error(`cold store writer: a frame of ${n} parts`)
      } else if (this.headFill === want) {
        const view = this.headView
        this.lengths = []
        for (let i = 0; i < view.getUint32(0, true); i++) this.lengths.push(view.getUint32(4 + 4 * i, true))
        this.nextPart()
      }
    }
  }

  /** starts the frame's next part, or delivers the frame when it has them all */
  private nextPart(): void {
    const lengths = this.lengths!
    while (this.parts.length < lengths.length) {
      const len = lengths[this.parts.length]
      if (len > 0) {
        this.part = new Uint8Array(len)
        this.partFill = 0
        return
      }
      this.parts.push(new Uint8Array(0))
    }
    const parts = this.parts
    this.parts = []
    this.lengths = null
    this.headFill = 0
    const w = this.waiting.shift()
    if (w) w(parts)
    else this.ready.push(parts)
  }

  next(): Promise<Uint8Array[]> {
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
  // nobody waits on this process's event loop but its parent's next append: chunk frames are
  // compressed here, one at a time, instead of two at once on libuv's pool
  compressInThisThread()
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
    const store = await openWaiting(dir, options, lockWaitMs ?? LOCK_WAIT_MS)
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
          const framed: Uint8Array[][] = []
          for (let i = 0; i < m.blocks; i++) framed.push(await frames.next())
          await store.append(framed.map((parts) => unpackBlock(parts.length === 1 ? parts[0] : parts)))
          post({ t: 'done', id: m.id, last: store.lastBlock() })
        } catch (e) {
          post({ t: 'failed', id: m.id, message: errorMessage(e) })
        }
      })
    })
    post({ t: 'ready', last: store.lastBlock() })
  } catch (e) {
    post({ t: 'error', message: errorMessage(e) }, () => process.exit(1))
  }
}
