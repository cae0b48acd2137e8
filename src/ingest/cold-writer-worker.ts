/**
 * The cold store writer thread (cold-writer.ts): owns the DiskColdStore of a live follower as its
 * one writer and appends the finalized blocks the main thread sends it (packed, as the hot store
 * keeps them: src/store/packed-block.ts), so that encoding chunks and merging small ones, seconds
 * of CPU for mainnet-sized blocks, never run on the thread that serves the streams.
 *
 * workerData: `{ dir, options }` (DiskColdStore.open). Out first: `{ t: 'ready', last }` or
 * `{ t: 'error', message }`. In: `{ t: 'append', id, blocks }` (packed blocks, ascending), answered
 * `{ t: 'done', id, last }` once durable or `{ t: 'failed', id, message }`; `{ t: 'close', id }`,
 * answered `{ t: 'done', id, last: null }` once the store is closed (its lock released).
 */
import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import { installZlibGate } from '../util/zlib-gate.ts'
import type { HeadInfo } from '../store/chunk.ts'
import { DiskColdStore, type DiskColdStoreOptions } from '../store/cold.ts'
import { unpackBlock } from '../store/packed-block.ts'
import { errorMessage } from '../util/errors.ts'

export interface ColdWriterSetup {
  dir: string
  options: DiskColdStoreOptions
  /** the thread's zlib gate (src/util/zlib-gate.ts), one per thread started */
  zlibGate?: Int32Array
  /** the thread's nice value (Linux: a thread's own; 0 leaves it at the process's) */
  nice?: number
}

export type ToColdWriter = { t: 'append'; id: number; blocks: Uint8Array[] } | { t: 'close'; id: number }

export type FromColdWriter =
  | { t: 'ready'; last: HeadInfo | null }
  | { t: 'error'; message: string }
  | { t: 'done'; id: number; last: HeadInfo | null }
  | { t: 'failed'; id: number; message: string }

const port = parentPort
if (port) {
  const { dir, options, zlibGate, nice } = workerData as ColdWriterSetup
  installZlibGate(zlibGate)
  // on Linux a thread's priority is its own: pid 0 is this thread, the others keep theirs
  if (nice) {
    try {
      setPriority(0, nice)
    } catch {
      // not permitted here: the thread runs at the process's priority
    }
  }
  const post = (m: FromColdWriter) => port.postMessage(m)
  try {
    const store = await DiskColdStore.open(dir, options)
    // one message at a time, in order (the store queues its appends too)
    let queue: Promise<void> = Promise.resolve()
    port.on('message', (m: ToColdWriter) => {
      queue = queue.then(async () => {
        try {
          if (m.t === 'close') {
            await store.close()
            return post({ t: 'done', id: m.id, last: null })
          }
          await store.append(m.blocks.map(unpackBlock))
          post({ t: 'done', id: m.id, last: store.lastBlock() })
        } catch (e) {
          post({ t: 'failed', id: m.id, message: errorMessage(e) })
        }
      })
    })
    post({ t: 'ready', last: store.lastBlock() })
  } catch (e) {
    post({ t: 'error', message: errorMessage(e) })
  }
}
