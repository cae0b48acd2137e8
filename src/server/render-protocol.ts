/**
 * The messages between the render pool (render-pool.ts, pool-stream.ts) and its worker threads
 * (render-worker.ts), and the block a pooled range yields to the response loop.
 */
import type { QueryLimits } from '../query/index.ts'

/** What the response loop takes from a pooled range: an engine block with its line as bytes. */
export interface PooledBlock {
  number: number
  hash: string
  empty: boolean
  /** the JSON line and its newline */
  data: Buffer
}

export interface WorkerSetup {
  cacheBytes: number
  /** the thread's zlib gate (src/util/zlib-gate.ts), one per thread */
  zlibGate?: Int32Array
}

export interface RenderRequest {
  type: 'render'
  id: number
  stream: number
  /** the cold store's directory */
  dir: string
  from: number
  to: number
}

/** a whole range rendered in one pass, sent in batches as credits allow (`PoolStream.blocks`, streamed) */
export interface StreamRequest {
  type: 'stream'
  id: number
  stream: number
  dir: string
  from: number
  to: number
  /** output per batch (bytes, a block more at most) */
  batchBytes: number
  /** bytes it may have sent and not taken by the stream (see `credit`; a batch at least) */
  aheadBytes: number
}

export type WorkerMessage =
  | {
      type: 'open'
      stream: number
      body: unknown
      limits: Partial<QueryLimits>
      bigintsAsNumbers: boolean
    }
  | { type: 'close'; stream: number }
  | RenderRequest
  | StreamRequest
  /** `n` more bytes of a streamed range taken by its stream */
  | { type: 'credit'; id: number; n: number }
  | { type: 'cancel'; id: number }
  /** memory of batches the main thread wrote out, for the worker's next ones */
  | { type: 'spare'; buffers: ArrayBuffer[] }

export type RenderResult =
  | {
      type: 'done'
      id: number
      /**
       * the lines: a big line in a buffer of its own (moved, not copied, from the worker), the
       * small ones together in one
       */
      buffers: ArrayBuffer[]
      /** bytes of the lines (with their newlines) */
      size: number
      numbers: number[]
      hashes: string[]
      /** each block's line: the buffer it is in, and where */
      buffer: number[]
      starts: number[]
      ends: number[]
      empty: boolean[]
      /** a streamed range's last batch */
      last?: boolean
    }
  | { type: 'error'; id: number; message: string }
  /** a streamed range's worker waits for a credit */
  | { type: 'blocked'; id: number }

export type Done = Extract<RenderResult, { type: 'done' }>
