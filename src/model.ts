/**
 * Normalized Solana block records (docs/query.md §1).
 *
 * These are the in-memory shapes produced by `src/normalize` and consumed by the stores and the
 * query engine. u64 values are `bigint` (never a JS number above 2^53); slots, heights, indexes and
 * decimals are plain numbers (they stay far below 2^53).
 */

export type RecordKind = 'transaction' | 'instruction' | 'log' | 'balance' | 'tokenBalance' | 'reward'

export const RECORD_KINDS: readonly RecordKind[] = [
  'transaction',
  'instruction',
  'log',
  'balance',
  'tokenBalance',
  'reward',
]

export interface BlockHeader {
  number: number
  hash: string
  parentNumber: number
  parentHash: string
  /** null when the node gives none (very old blocks) */
  height: number | null
  /** unix seconds; 0 when the node gives null */
  timestamp: number
}

export interface AddressTableLookup {
  accountKey: string
  writableIndexes: number[]
  readonlyIndexes: number[]
}

export interface LoadedAddresses {
  writable: string[]
  readonly: string[]
}

/**
 * The compute budget a version 1 transaction message declares inline (`message.transactionConfig`,
 * SIMD-0385), in place of the Compute Budget program's instructions of legacy and v0 messages.
 * Each member is null when the message does not set it.
 */
export interface TransactionConfig {
  computeUnitLimit: number | null
  heapSize: number | null
  loadedAccountsDataSizeLimit: number | null
  /** u64 lamports as a decimal string (exact; rendered like the other amounts) */
  priorityFee: string | null
}

export interface Transaction {
  transactionIndex: number
  version: 'legacy' | number
  accountKeys: string[]
  addressTableLookups: AddressTableLookup[]
  numReadonlySignedAccounts: number
  numReadonlyUnsignedAccounts: number
  numRequiredSignatures: number
  recentBlockhash: string
  signatures: string[]
  /** meta.err as is; null on success */
  err: unknown
  fee: bigint
  computeUnitsConsumed: bigint
  loadedAddresses: LoadedAddresses
  feePayer: string
  hasDroppedLogMessages: boolean
  /**
   * version 1 transactions: the message's `transactionConfig`; null for legacy and v0 ones (and
   * absent, read as null, in blocks stored before the field existed)
   */
  transactionConfig?: TransactionConfig | null
}

export interface Instruction {
  transactionIndex: number
  instructionAddress: number[]
  programId: string
  accounts: string[]
  /** base58, as in RPC */
  data: string
  d1: string | null
  d2: string | null
  d4: string | null
  d8: string | null
  /**
   * Internal (not selectable): `0x` + lower-case hex of the first min(16, len) bytes of the data.
   * d3 and `discriminator` filters are prefix matches on it.
   */
  dataPrefix: string
  error: string | null
  computeUnitsConsumed: bigint | null
  isCommitted: boolean
  hasDroppedLogMessages: boolean
}

export type LogKind = 'log' | 'data' | 'other'

export interface Log {
  transactionIndex: number
  logIndex: number
  instructionAddress: number[]
  programId: string
  kind: LogKind
  message: string
}

export interface Balance {
  transactionIndex: number
  account: string
  pre: bigint
  post: bigint
}

export interface TokenBalance {
  transactionIndex: number
  account: string
  preMint: string | null
  postMint: string | null
  preDecimals: number | null
  postDecimals: number | null
  preProgramId: string | null
  postProgramId: string | null
  preOwner: string | null
  postOwner: string | null
  preAmount: bigint | null
  postAmount: bigint | null
}

export interface Reward {
  pubkey: string
  /** signed i64 */
  lamports: bigint
  postBalance: bigint
  rewardType: string | null
  commission: number | null
}

/** One normalized block; every list is sorted in the order of docs/query.md §2. */
export interface Block {
  header: BlockHeader
  transactions: Transaction[]
  instructions: Instruction[]
  logs: Log[]
  balances: Balance[]
  tokenBalances: TokenBalance[]
  rewards: Reward[]
}

/** A problem found while normalizing (never fatal). */
export interface NormalizationWarning {
  slot: number
  transactionIndex?: number
  signature?: string
  message: string
}
