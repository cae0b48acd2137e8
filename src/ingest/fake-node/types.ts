/**
 * The fake node's options (with their defaults), the blocks of its chain, the faults a block's
 * answer can be given, and the counters of what it served.
 */

export interface FakeNodeOptions {
  /** archive files with template blocks (default: the bundled whole mainnet block 254170887) */
  templates?: string[]
  /** raw archive lines instead of files */
  templateLines?: string[]
  /** transactions per produced block, a rotating window over the template's list (default: all) */
  txPerBlock?: number
  /** slot of the first block (default 300 000 000) */
  startSlot?: number
  /** blockHeight of the first block (default 280 000 000) */
  startHeight?: number
  /** blocks produced at creation, before start() (default 1) */
  initialBlocks?: number
  /** produce a block every N ms once started; 0 = only by calling produce() (default 400) */
  intervalMs?: number
  /** probability that a slot is skipped (default 0.1) */
  skipRate?: number
  /** finalized = highest block at or below confirmed − lag (slots; default 32) */
  finalityLag?: number
  /** scripted forks: every N produced blocks (0 = never, default) ... */
  forkEvery?: number
  /** ... replace the newest `forkDepth` unfinalized blocks (default 3) */
  forkDepth?: number
  /** fraction of HTTP requests answered 429 (default 0) */
  rate429?: number
  /** Retry-After of the 429 answers, seconds (default 0) */
  retryAfterSec?: number
  /** fraction of HTTP requests whose connection is dropped (before or in the middle of the answer; default 0) */
  dropRate?: number
  /** fraction of getBlock calls for a produced slot answered -32014 "not available yet" (default 0) */
  notYetRate?: number
  /** PRNG seed (production and faults are deterministic per seed and call order) */
  seed?: number
  /** listen address (default 127.0.0.1, port 0 = any free port) */
  host?: string
  port?: number
  /** seconds between slots in blockTime (default 0.4) */
  slotSeconds?: number
  /**
   * assemble each block's transaction list (signatures, JSON text) when the block is produced
   * instead of on its first full getBlock request (default false): a node serving the block from
   * its store has it at hand; this keeps the fake node's own assembly (~30 ms of JS for 1,500
   * transactions) out of a latency measured from the block's production
   */
  prerender?: boolean
  /**
   * gzip on the wire (default false): answers gzip-compressed when the request accepts it, and
   * gzip-compressed request bodies read (without it they get HTTP 415, as from a node that does
   * not read them)
   */
  gzip?: boolean
  /** with `gzip`: gzip-compressed request bodies refused all the same (HTTP 415), answers still compressed */
  refuseGzipRequests?: boolean
  /** headers every request must carry (name → value), else HTTP 401: a provider's API key */
  requireHeaders?: Record<string, string>
  /** fraction of getBlock calls for a produced slot answered -32004 "not available" (default 0) */
  notAvailableRate?: number
}

/** A damaged answer to a full getBlock request (see `injectBlockFault`). */
export type BlockFault =
  /** a valid header, every transaction replaced by `{"junk":i}` */
  | { kind: 'junk-transactions' }
  /** `"transactions"` an object instead of a list */
  | { kind: 'transactions-not-list' }
  /** every transaction without its `meta` member */
  | { kind: 'no-meta' }
  /** every transaction's `message.instructions` is `[null]` (well-formed shape, not normalizable) */
  | { kind: 'null-instructions' }
  /** the real answer padded (an extra member) to at least `bytes` bytes */
  | { kind: 'oversize'; bytes: number }
  /** headers and the first bytes of the answer, then nothing until the client gives up */
  | { kind: 'stall' }
  /** `blockhash` (or `previousBlockhash`) replaced by `text`, which is not a 32-byte base58 hash */
  | { kind: 'bad-hash'; member: 'blockhash' | 'previousBlockhash'; text: string }

/** A produced block of the fake chain. */
export interface FakeBlockInfo {
  slot: number
  hash: string
  parentSlot: number
  parentHash: string
  height: number
  time: number
  /** distinguishes re-productions of one slot on different branches */
  variant: number
  template: number
}

export type Commitment = 'processed' | 'confirmed' | 'finalized'

/** the options with their defaults (mutable: `setFaults`, `setFinalityLag`) */
export type ResolvedOptions = Required<Omit<FakeNodeOptions, 'templates' | 'templateLines' | 'txPerBlock'>> & {
  txPerBlock: number | undefined
}

export function resolveOptions(opts: FakeNodeOptions): ResolvedOptions {
  return {
    txPerBlock: opts.txPerBlock,
    startSlot: opts.startSlot ?? 300_000_000,
    startHeight: opts.startHeight ?? 280_000_000,
    initialBlocks: opts.initialBlocks ?? 1,
    intervalMs: opts.intervalMs ?? 400,
    skipRate: opts.skipRate ?? 0.1,
    finalityLag: opts.finalityLag ?? 32,
    forkEvery: opts.forkEvery ?? 0,
    forkDepth: opts.forkDepth ?? 3,
    rate429: opts.rate429 ?? 0,
    retryAfterSec: opts.retryAfterSec ?? 0,
    dropRate: opts.dropRate ?? 0,
    notYetRate: opts.notYetRate ?? 0,
    seed: opts.seed ?? 1,
    host: opts.host ?? '127.0.0.1',
    port: opts.port ?? 0,
    slotSeconds: opts.slotSeconds ?? 0.4,
    prerender: opts.prerender ?? false,
    gzip: opts.gzip ?? false,
    refuseGzipRequests: opts.refuseGzipRequests ?? false,
    requireHeaders: opts.requireHeaders ?? {},
    notAvailableRate: opts.notAvailableRate ?? 0,
  }
}

/** counters of what was served / injected */
export function newStats() {
  return {
    requests: 0,
    injected429: 0,
    dropped: 0,
    notYet: 0,
    getBlock: 0,
    forks: 0,
    orphaned: 0,
    blockFaults: 0,
    stalls: 0,
    /** blocks whose transaction list was assembled (signatures and JSON text) */
    assembled: 0,
    /** requests read gzip-compressed, answers sent gzip-compressed, requests refused 401 */
    gzipRequests: 0,
    gzipAnswers: 0,
    /** gzip-compressed requests answered 415 */
    refusedGzip: 0,
    unauthorized: 0,
    /** getBlock answers -32004 injected (`notAvailableRate`), slots answered skipped (`answerSkipped`) */
    notAvailable: 0,
    skippedAnswers: 0,
  }
}

export type FakeNodeStats = ReturnType<typeof newStats>
