/**
 * The block decoding threads of the follower by default: here so
 * that `serve` checks its flags without loading the decoding pool.
 */
import { availableParallelism } from 'node:os'

/**
 * threads used by default: the cores left beside the main thread, at most 4, and 2 from 2 cores on
 * (a mainnet-sized answer is then decoded in two halves at once). On the idle 2-core box, blocks of
 * 1,500 transactions with 100 clients streaming (`TAIL_THREADS=1,2,1,2 npm run bench -- tail`):
 * node answer -> hot store p50 90/88 ms with one thread, 78/76 ms with two; client p99 170/174
 * against 166/148 ms; the main thread as busy (the streams and LMDB writes are between blocks).
 */
export function defaultDecodeThreads(): number {
  const cores = availableParallelism()
  return cores < 2 ? 1 : Math.max(2, Math.min(4, cores - 1))
}
