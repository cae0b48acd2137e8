/** The limits a `PortalServer` enforces, and their defaults (docs/operations.md §11). */
import { DEFAULT_MAX_BODY_BYTES } from './body.ts'

export interface ServerLimits {
  /** largest accepted request body, after gzip decoding (bytes) */
  maxBodyBytes: number
  maxItemRequests: number
  maxFilterValues: number
  /** concurrent stream responses (taken once the body is read and valid); above it: 503 with Retry-After */
  maxConcurrentStreams: number
  /** concurrent stream requests of one client address (body upload included); above it: 429 with Retry-After */
  maxStreamsPerClient: number
  /** a request (headers and body) must arrive within this long, else 408 (ms) */
  bodyTimeoutMs: number
  /** a response whose socket takes no pending byte for this long is destroyed (ms; 0 = never) */
  writeTimeoutMs: number
  /** bytes of responses in flight (written, not yet taken by sockets) across all streams */
  streamBufferBytes: number
  /** streams rendering a block at once (the others wait, smallest response first) */
  renderConcurrency: number
  /** a response that sent less than this renders even when the stream buffer budget is full */
  smallResponseBytes: number
  /**
   * a response asking for fewer blocks than this that sent less than `smallResponseBytes` renders
   * from a reserve of `streamBufferBytes` of its own: point queries are not held up by slow clients
   * filling the budget
   */
  shortResponseBlocks: number
  /** on close(), open streams end on a complete line; after this long the remaining connections are cut (ms) */
  shutdownGraceMs: number
  /** how long a stream request for a block above the head waits before 204 (ms) */
  headWaitMs: number
  /** a response ends (at a block boundary) after this long (ms) ... */
  responseTimeMs: number
  /** ... or after this many bytes of JSON lines (before compression) */
  responseBytes: number
  /** gzip level of responses (1 = fastest) */
  gzipLevel: number
  /**
   * resident memory to stay under (bytes; 0 = no limit): above 3/4 of it streams wait before
   * starting their next chunk (src/server/memory-gate.ts)
   */
  memoryLimitBytes: number
}

export const DEFAULT_LIMITS: ServerLimits = {
  // fits the default 100,000 filter values (src/server/body.ts)
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  maxItemRequests: 100,
  maxFilterValues: 100_000,
  maxConcurrentStreams: 1024,
  maxStreamsPerClient: 64,
  bodyTimeoutMs: 30_000,
  writeTimeoutMs: 20_000,
  streamBufferBytes: 16 * 1024 * 1024,
  shutdownGraceMs: 5_000,
  renderConcurrency: 2,
  smallResponseBytes: 256 * 1024,
  shortResponseBlocks: 100,
  headWaitMs: 5_000,
  responseTimeMs: 10_000,
  responseBytes: 20 * 1024 * 1024,
  memoryLimitBytes: 0,
  gzipLevel: 1,
}
