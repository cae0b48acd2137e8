/**
 * solana-storage protobuf (`confirmed_block.proto`) ↔ getBlock JSON: the decoders, the encoders, the
 * bincode TransactionError codec and the low-level wire reader/writer (for wrapper messages such as
 * Geyser's SubscribeUpdate). See README.md in this folder.
 */
export {
  decodeConfirmedBlock,
  decodeConfirmedBlockFull,
  decodeConfirmedTransaction,
  decodeRewards,
  decodeTransaction,
  decodeTransactionStatusMeta,
  realNumberStringTrimmed,
  REWARD_TYPES,
  StorageDecoder,
  type DecodedBlock,
} from './decode.ts'
export {
  encodeConfirmedBlock,
  encodeConfirmedTransaction,
  encodeRewards,
  encodeTransaction,
  encodeTransactionStatusMeta,
  writeConfirmedTransaction,
  writeReward,
  writeTransaction,
  writeTransactionStatusMeta,
  type EncodeBlockOptions,
} from './encode.ts'
export { F as STORAGE_FIELDS } from './fields.ts'
export {
  INSTRUCTION_ERRORS,
  TRANSACTION_ERRORS,
  TransactionErrorFormatError,
  transactionErrorFromJson,
  transactionErrorToJson,
} from './tx-error.ts'
export {
  FIXED32,
  FIXED64,
  i64FromHalves,
  LEN,
  ProtoError,
  ProtoReader,
  ProtoWriter,
  u64FromHalves,
  VARINT,
  varintSize,
  type U64Value,
} from './wire.ts'
