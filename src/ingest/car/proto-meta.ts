/**
 * The protobuf side of Old Faithful metadata: solana-storage `TransactionStatusMeta` and
 * `Rewards`, and bincode `TransactionError` (inside legacy metadata), through the solana-storage
 * decoders (src/ingest/solana-storage).
 */
import type { RpcReward, RpcTransactionMeta } from '../../rpc/types.ts'

export function decodeProtoMeta(_b: Uint8Array): RpcTransactionMeta {
  throw new Error('protobuf transaction metadata: not supported yet')
}

export function decodeProtoRewards(_b: Uint8Array): RpcReward[] {
  throw new Error('protobuf rewards: not supported yet')
}

/** the bincode TransactionError at `pos`: its RPC JSON and where it ends */
export function decodeTransactionErrorAt(_b: Uint8Array, _pos: number): { value: unknown; end: number } {
  throw new Error('bincode TransactionError: not supported yet')
}
