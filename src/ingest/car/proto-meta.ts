/**
 * The protobuf side of Old Faithful metadata, through the solana-storage decoders
 * (src/ingest/solana-storage): `TransactionStatusMeta`, `Rewards`, and the bincode
 * `TransactionError` inside legacy bincode metadata (whose length is found here: the error is
 * followed by the other fields there).
 */
import type { RpcReward, RpcTransactionMeta } from '../../rpc/types.ts'
import {
  decodeRewards,
  decodeTransactionStatusMeta,
  INSTRUCTION_ERRORS,
  TRANSACTION_ERRORS,
  transactionErrorToJson,
} from '../solana-storage/index.ts'

/** `withDiscriminators`: inner instructions carry their data's d1..d8 / dataPrefix (FieldReader) */
export function decodeProtoMeta(b: Uint8Array, withDiscriminators = false): RpcTransactionMeta {
  return decodeTransactionStatusMeta(b, withDiscriminators)
}

export function decodeProtoRewards(b: Uint8Array): RpcReward[] {
  return decodeRewards(b).rewards
}

const TX_INSTRUCTION_ERROR = TRANSACTION_ERRORS.indexOf('InstructionError')
/** transaction errors carrying a u8 */
const TX_WITH_U8 = new Set(
  ['DuplicateInstruction', 'InsufficientFundsForRent', 'ProgramExecutionTemporarilyRestricted'].map((n) =>
    TRANSACTION_ERRORS.indexOf(n),
  ),
)
const IX_CUSTOM = INSTRUCTION_ERRORS.indexOf('Custom')
const IX_BORSH_IO = INSTRUCTION_ERRORS.indexOf('BorshIoError')

/**
 * The bincode TransactionError at `pos` of `b` (followed by more fields): its RPC JSON and where
 * it ends. `BorshIoError` carries its String there (the releases that wrote bincode metadata).
 */
export function decodeTransactionErrorAt(b: Uint8Array, pos: number): { value: unknown; end: number } {
  const u32 = (p: number) => {
    if (p + 4 > b.length) throw new Error('bincode ends inside the TransactionError')
    return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16)) + b[p + 3] * 0x1000000
  }
  const tag = u32(pos)
  let end = pos + 4
  if (tag === TX_INSTRUCTION_ERROR) {
    const ie = u32(pos + 5)
    end = pos + 9
    if (ie === IX_CUSTOM) end += 4
    else if (ie === IX_BORSH_IO) end += 8 + u32(end) + u32(end + 4) * 0x100000000
  } else if (TX_WITH_U8.has(tag)) end += 1
  if (end > b.length) throw new Error('bincode ends inside the TransactionError')
  return { value: transactionErrorToJson(b.subarray(pos, end)), end }
}
