/**
 * Shapes of the Solana RPC `getBlock` result requested with
 * `{encoding: "json", transactionDetails: "full", rewards: true, maxSupportedTransactionVersion: 0}`.
 *
 * u64 values are typed `U64`: a JS number when small, a decimal string when `parseJsonExact` met an
 * integer with more than 15 digits, or a bigint when built in code. Convert them with `BigInt(x)`.
 */

export type U64 = number | string | bigint

/** An instruction as it appears in `message.instructions` and in `meta.innerInstructions`. */
export interface RpcInstruction {
  programIdIndex: number
  accounts: number[]
  /** base58 */
  data: string
  /** 1 for top-level; present on inner instructions since Solana 1.14; null or absent otherwise */
  stackHeight?: number | null
}

export interface RpcMessageHeader {
  numRequiredSignatures: number
  numReadonlySignedAccounts: number
  numReadonlyUnsignedAccounts: number
}

export interface RpcAddressTableLookup {
  accountKey: string
  writableIndexes: number[]
  readonlyIndexes: number[]
}

/** The compute budget a version 1 message declares (`message.transactionConfig`); null: not set. */
export interface RpcTransactionConfig {
  priorityFee: U64 | null
  computeUnitLimit: number | null
  loadedAccountsDataSizeLimit: number | null
  heapSize: number | null
}

export interface RpcMessage {
  accountKeys: string[]
  header: RpcMessageHeader
  recentBlockhash: string
  instructions: RpcInstruction[]
  /** v0 transactions only */
  addressTableLookups?: RpcAddressTableLookup[] | null
  /** version 1 transactions only */
  transactionConfig?: RpcTransactionConfig | null
}

export interface RpcInnerInstructions {
  /** index of the top-level instruction */
  index: number
  instructions: RpcInstruction[]
}

export interface RpcUiTokenAmount {
  /** u64 as a decimal string */
  amount: string
  decimals: number
  uiAmount?: number | null
  uiAmountString?: string
}

export interface RpcTokenBalance {
  accountIndex: number
  mint: string
  owner?: string | null
  programId?: string | null
  uiTokenAmount: RpcUiTokenAmount
}

export interface RpcLoadedAddresses {
  writable: string[]
  readonly: string[]
}

export interface RpcReward {
  pubkey: string
  /** signed */
  lamports: U64
  postBalance: U64
  rewardType?: string | null
  commission?: number | null
}

export interface RpcTransactionMeta {
  err: unknown
  status?: unknown
  fee: U64
  preBalances: U64[]
  postBalances: U64[]
  innerInstructions?: RpcInnerInstructions[] | null
  logMessages?: string[] | null
  preTokenBalances?: RpcTokenBalance[] | null
  postTokenBalances?: RpcTokenBalance[] | null
  rewards?: RpcReward[] | null
  loadedAddresses?: RpcLoadedAddresses | null
  returnData?: { programId: string; data: [string, string] } | null
  computeUnitsConsumed?: U64 | null
  /** total cost-model units (newer nodes) */
  costUnits?: U64 | null
}

export interface RpcTransaction {
  transaction: {
    signatures: string[]
    message: RpcMessage
  }
  /** null when the node has no status metadata for the transaction */
  meta: RpcTransactionMeta | null
  /** absent in responses to requests without maxSupportedTransactionVersion */
  version?: 'legacy' | number
}

export interface RpcBlock {
  blockhash: string
  previousBlockhash: string
  parentSlot: number
  /** null for very old blocks */
  blockHeight?: number | null
  /** unix seconds; null when unknown */
  blockTime?: number | null
  transactions?: RpcTransaction[] | null
  rewards?: RpcReward[] | null
  /** the number of partitions of the epoch's partitioned rewards (newer nodes, when set) */
  numRewardPartitions?: U64 | null
}

/** One line of an archive file (docs/query.md §1). */
export interface ArchiveLine {
  slot: number
  /** defaults to block.blockhash */
  hash?: string
  /** defaults to block.blockHeight (null when absent) */
  height?: number | null
  block: RpcBlock
}
