/**
 * What the query engine and the HTTP server need from a dataset's storage. Implemented by the
 * static in-memory store (sample, archives), and by the composite of the cold (finalized,
 * columnar on disk) and hot (unfinalized, fork-aware) stores.
 */
import type { Chunk, HeadInfo } from './chunk.ts'

export type { Chunk, HeadInfo }

export interface BlockStore {
  /** lowest available block number, or null when empty */
  firstBlock(): number | null
  /** highest available block (unfinalized included), or null */
  head(): HeadInfo | null
  /** highest finalized block, or null */
  finalizedHead(): HeadInfo | null
  /**
   * Chunks holding the produced blocks of [from, to] (inclusive), ascending, never a block above
   * `to`; chunks may start below `from` (the engine clips). Only finalized blocks when
   * `finalizedOnly`. Each chunk is a consistent snapshot of one chain.
   */
  chunks(from: number, to: number, finalizedOnly: boolean): AsyncIterable<Chunk>
  /**
   * Blocks of the current chain below `n`, ascending, ending with the highest produced block whose
   * number is < n; at most `limit` entries; [] when there is none.
   */
  chainBefore(n: number, limit: number): Promise<HeadInfo[]>
  /**
   * Resolves true as soon as a block with number >= `number` is available (finalized when
   * `finalizedOnly`), false after `timeoutMs` or when `signal` aborts.
   */
  waitFor(number: number, finalizedOnly: boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean>
}

/**
 * The finalized, append-only part of a dataset (columnar chunks on disk, or memory in tests).
 * The real-time pipeline moves blocks here in order once they are finalized; only then do they
 * leave the hot store.
 */
export interface ColdStore {
  firstBlock(): number | null
  /** highest stored block, or null when empty */
  lastBlock(): HeadInfo | null
  /** append finalized blocks: ascending, all above lastBlock(); durable once the promise resolves */
  append(blocks: import('../model.ts').Block[]): Promise<void>
  /** same contract as BlockStore.chunks */
  chunks(from: number, to: number): AsyncIterable<Chunk>
  /** same contract as BlockStore.chainBefore */
  chainBefore(n: number, limit: number): Promise<HeadInfo[]>
  close?(): Promise<void>
}
