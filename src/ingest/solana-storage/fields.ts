/**
 * Field numbers of the solana-storage protobuf messages (package `solana.storage.ConfirmedBlock`,
 * `confirmed_block.proto` of agave's storage-proto, also published as `solana-storage.proto` in
 * yellowstone-grpc). Written from the published numbers.
 */
export const F = {
  block: {
    previousBlockhash: 1, // string
    blockhash: 2, // string
    parentSlot: 3, // uint64
    transactions: 4, // repeated ConfirmedTransaction
    rewards: 5, // repeated Reward
    blockTime: 6, // UnixTimestamp { int64 timestamp = 1 }
    blockHeight: 7, // BlockHeight { uint64 block_height = 1 }
    numPartitions: 8, // NumPartitions { uint64 num_partitions = 1 }
  },
  confirmedTransaction: { transaction: 1, meta: 2 },
  transaction: { signatures: 1, message: 2 }, // repeated bytes, Message
  message: {
    header: 1,
    accountKeys: 2, // repeated bytes
    recentBlockhash: 3, // bytes
    instructions: 4, // repeated CompiledInstruction
    versioned: 5, // bool
    addressTableLookups: 6, // repeated MessageAddressTableLookup
    config: 7, // TransactionConfig (version 1 messages)
  },
  header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 2, numReadonlyUnsignedAccounts: 3 },
  lookup: { accountKey: 1, writableIndexes: 2, readonlyIndexes: 3 }, // bytes each
  config: { priorityFee: 1, computeUnitLimit: 2, loadedAccountsDataSizeLimit: 3, heapSize: 4 }, // all optional
  /** CompiledInstruction (1-3) and InnerInstruction (1-4) */
  instruction: { programIdIndex: 1, accounts: 2, data: 3, stackHeight: 4 },
  meta: {
    err: 1, // TransactionError { bytes err = 1 }: bincode
    fee: 2,
    preBalances: 3, // repeated uint64 (packed)
    postBalances: 4,
    innerInstructions: 5,
    logMessages: 6,
    preTokenBalances: 7,
    postTokenBalances: 8,
    rewards: 9,
    innerInstructionsNone: 10,
    logMessagesNone: 11,
    loadedWritableAddresses: 12,
    loadedReadonlyAddresses: 13,
    returnData: 14,
    returnDataNone: 15,
    computeUnitsConsumed: 16, // optional uint64
    costUnits: 17, // optional uint64
  },
  innerInstructions: { index: 1, instructions: 2 },
  tokenBalance: { accountIndex: 1, mint: 2, uiTokenAmount: 3, owner: 4, programId: 5 },
  uiTokenAmount: { uiAmount: 1, decimals: 2, amount: 3, uiAmountString: 4 }, // double, uint32, string, string
  returnData: { programId: 1, data: 2 },
  reward: { pubkey: 1, lamports: 2, postBalance: 3, rewardType: 4, commission: 5 }, // string, int64, uint64, enum, string
  rewards: { rewards: 1, numPartitions: 2 },
} as const
