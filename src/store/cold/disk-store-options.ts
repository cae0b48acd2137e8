/**
 * What a `DiskColdStore` is opened with, its errors, the bounds of its size targets, and the
 * chunks a caller encodes itself (`appendEncoded`).
 */
import type { ChunkEntry } from './chunk-index/chunk-index.ts'
import type { FormatVersion } from './chunk-file.ts'

export interface DiskColdStoreOptions {
  /** a chunk holds at most this many blocks (default 10,000) */
  targetBlocks?: number
  /** ... and about this many encoded bytes (estimated while splitting; default 32 MiB) */
  targetBytes?: number
  /** unsealed tail chunks of one level merged at a time (default 8) */
  fanout?: number
  /** budget of the columns, pages, rows and filters kept in memory (default 192 MiB) */
  cacheBytes?: number
  /** deflate column blobs when it saves >= 25% (default false: see the bench) */
  compress?: boolean
  /** chunk file format version to write (default the current one, 5; older ones for compatibility tests) */
  formatVersion?: FormatVersion
  /** format 4 frame size (log2) of every part: tests only (small frames cover reads across frames) */
  frameLog?: number
  /** format 5: text and JSON parts in zstd or brotli (default: by the writing thread, chunk-file.ts `WriteOptions.zstd`) */
  zstd?: boolean
  /**
   * compress chunk frames in the calling thread, also from a main thread (default: on the thread
   * pool from a main thread): for a writer process whose main thread serves nobody
   * (src/ingest/cold-writer-child.ts), which then uses one core at most and less CPU than through
   * the pool; text and JSON parts then take zstd unless `zstd` says otherwise
   */
  compressHere?: boolean
  /** open without writing anything (a server over a directory another process imports into) */
  readOnly?: boolean
  /**
   * on open: 'size' (default) checks every listed file exists with its size; 'full' checks sha256;
   * 'none' checks nothing (chunk files fetched on demand, `acquireChunk`)
   */
  verify?: 'size' | 'full' | 'none'
  /**
   * Called before a chunk's file is read (replicas over object storage: fetch it into the local
   * cache); the returned function is called when the reading is over (the file may be evicted then).
   */
  acquireChunk?: (e: ChunkEntry) => Promise<() => void>
  /** sizes of the chunk index's files (chunk-index/chunk-index.ts; tests make them small) */
  catalogue?: { segmentEntries?: number; logBytes?: number }
  /** fsync files and directories (default true; only tests and benches turn it off) */
  fsync?: boolean
  /**
   * Files dropped by a merge are deleted this long after (default 30 s), so readers in other
   * processes (a server over a directory being imported) can finish reading the chunks of the
   * catalogue state they loaded, and only when no `chunks()` iteration of this process that
   * started on an older state is still running.
   */
  graceMs?: number
  /**
   * decompress on the thread pool, while a range scan renders a chunk, the frames the scan read
   * whole in the chunk before it, for the chunk after it (`prefetch.ts`; default true; never
   * with `acquireChunk`: a chunk file is only read once acquired)
   */
  readAhead?: boolean
}

export class ColdStoreError extends Error {}

/**
 * Bounds of a chunk's size targets. A chunk is encoded in memory and its parts hold u32 offsets,
 * so a chunk must stay well below 4 GiB; the byte target is an estimate that real chunks may
 * exceed by some margin.
 */
export const MAX_TARGET_BYTES = 1024 * 1024 * 1024
export const MAX_TARGET_BLOCKS = 1_000_000

/** What the catalogue records of a chunk besides its file. */
export interface PreparedChunkInfo {
  firstBlock: number
  lastBlock: number
  blockCount: number
  lastHash: string
}

/** An encoded chunk file (`encodeChunk`) with its block range, for `appendEncoded`. */
export interface PreparedChunk extends PreparedChunkInfo {
  parts: Uint8Array[]
  bytes: number
  sha256: string
}
