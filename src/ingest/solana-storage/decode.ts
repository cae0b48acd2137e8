/**
 * solana-storage protobuf messages (`confirmed_block.proto`) → the `getBlock` JSON shapes of
 * src/rpc/types.ts (encoding "json", transactionDetails "full", rewards true,
 * maxSupportedTransactionVersion 1), field for field as the RPC renders them. Field numbers are in
 * `fields.ts`; the rendering rules are listed in this folder's README.md. This file: the
 * `StorageDecoder` and the whole messages (`ConfirmedBlock`, `ConfirmedTransaction`); the
 * transaction is read by decode-transaction.ts, the metadata and rewards by decode-meta.ts, the
 * fields by field-reader.ts.
 */
import type { RpcBlock, RpcMessage, RpcReward, RpcTransaction, RpcTransactionMeta } from '../../rpc/types.ts'
import { readMeta, readReward, readRewards } from './decode-meta.ts'
import { readMessage, readTransaction, type DecodedTransaction } from './decode-transaction.ts'
import { FieldReader } from './field-reader.ts'
import { F } from './fields.ts'
import type { U64Value } from './wire.ts'

export { REWARD_TYPES, realNumberStringTrimmed } from './decode-meta.ts'

/** A `ConfirmedBlock` decoded: the getBlock JSON, plus the one value the JSON may lack. */
export interface DecodedBlock {
  block: RpcBlock
  /** `num_partitions` (also rendered as the block's `numRewardPartitions`); null when absent */
  numPartitions: U64Value | null
}

/**
 * Decoding state: a reader over a buffer holding one or more messages (`range`). Base58 and
 * address text come from the thread's caches (text-cache.ts), shared by every decoder.
 */
export class StorageDecoder extends FieldReader {
  /**
   * One getBlock transaction from a `Transaction` at bytes[txStart, txEnd) and a
   * `TransactionStatusMeta` at bytes[metaStart, metaEnd) (metaStart < 0: none) of the buffer, as
   * `ConfirmedTransaction` gives it.
   */
  transactionWithMeta(txStart: number, txEnd: number, metaStart = -1, metaEnd = -1): RpcTransaction {
    const { transaction, version } = this.range(txStart, txEnd).transaction()
    if (metaStart < 0) return { transaction, meta: null }
    return { transaction, meta: this.range(metaStart, metaEnd).meta(), version }
  }

  /** `ConfirmedBlock` from the reader's position to its end */
  block(): DecodedBlock {
    const r = this.r
    let previousBlockhash = ''
    let blockhash = ''
    let parentSlot: U64Value = 0
    const transactions: RpcTransaction[] = []
    const rewards: RpcReward[] = []
    let blockTime: U64Value | null = null
    let blockHeight: U64Value | null = null
    let numPartitions: U64Value | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.block.previousBlockhash:
          previousBlockhash = this.stringField(t, 'previous_blockhash')
          break
        case F.block.blockhash:
          blockhash = this.stringField(t, 'blockhash')
          break
        case F.block.parentSlot:
          parentSlot = this.u64Field(t, 'parent_slot')
          break
        case F.block.transactions:
          transactions.push(this.sub(t, 'transactions', readConfirmed))
          break
        case F.block.rewards:
          rewards.push(this.sub(t, 'rewards', readReward))
          break
        case F.block.blockTime:
          blockTime = this.wrappedU64(t, 'block_time', true)
          break
        case F.block.blockHeight:
          blockHeight = this.wrappedU64(t, 'block_height', false)
          break
        case F.block.numPartitions:
          numPartitions = this.wrappedU64(t, 'num_partitions', false)
          break
        default:
          r.skip(t & 7)
      }
    }
    if (typeof parentSlot !== 'number') this.fail(`parent_slot ${parentSlot} is not a safe integer`)
    if (blockHeight !== null && typeof blockHeight !== 'number') this.fail(`block_height ${blockHeight} too large`)
    if (blockTime !== null && typeof blockTime !== 'number') this.fail(`block_time ${blockTime} too large`)
    const block: RpcBlock = { previousBlockhash, blockhash, parentSlot, transactions, rewards }
    if (numPartitions !== null) block.numRewardPartitions = numPartitions
    block.blockTime = blockTime
    block.blockHeight = blockHeight
    return { block, numPartitions }
  }

  /** `ConfirmedTransaction` (transaction + optional meta) */
  confirmedTransaction(): RpcTransaction {
    const r = this.r
    let tx: DecodedTransaction | null = null
    let meta: RpcTransactionMeta | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.confirmedTransaction.transaction:
          tx = this.sub(t, 'transaction', readTransaction)
          break
        case F.confirmedTransaction.meta:
          meta = this.sub(t, 'meta', readMeta)
          break
        default:
          r.skip(t & 7)
      }
    }
    if (tx === null) this.fail('ConfirmedTransaction without a transaction')
    // without metadata agave renders no version (it serves such a transaction as a legacy one)
    if (meta === null) return { transaction: tx.transaction, meta }
    return { transaction: tx.transaction, meta, version: tx.version }
  }

  /** `Transaction`: signatures and message; the version is read from the message */
  transaction(): DecodedTransaction {
    return readTransaction(this)
  }

  /** `Message`: legacy when not `versioned`; versioned with a `config`: 1; else 0 */
  message(): { message: RpcMessage; version: 'legacy' | number } {
    return readMessage(this)
  }

  /** `TransactionStatusMeta` → getBlock's `meta` */
  meta(): RpcTransactionMeta {
    return readMeta(this)
  }

  /** `Reward` */
  reward(): RpcReward {
    return readReward(this)
  }

  /** `Rewards` (a block's rewards as Old Faithful stores them): the rewards and num_partitions */
  rewards(): { rewards: RpcReward[]; numPartitions: U64Value | null } {
    return readRewards(this)
  }
}

function readConfirmed(d: StorageDecoder): RpcTransaction {
  return d.confirmedTransaction()
}

function whole<T>(bytes: Uint8Array, what: string, fn: (d: StorageDecoder) => T): T {
  const d = new StorageDecoder(bytes)
  try {
    return fn(d)
  } catch (e) {
    if (e instanceof Error && !e.message.includes(what)) e.message = `${what}: ${e.message}`
    throw e
  }
}

/** A protobuf `ConfirmedBlock` → getBlock JSON (and num_partitions). */
export function decodeConfirmedBlockFull(bytes: Uint8Array): DecodedBlock {
  return whole(bytes, 'ConfirmedBlock', (d) => d.block())
}

/** A protobuf `ConfirmedBlock` → the getBlock JSON result. */
export function decodeConfirmedBlock(bytes: Uint8Array): RpcBlock {
  return decodeConfirmedBlockFull(bytes).block
}

/** A protobuf `ConfirmedTransaction` → one entry of getBlock's `transactions`. */
export function decodeConfirmedTransaction(bytes: Uint8Array): RpcTransaction {
  return whole(bytes, 'ConfirmedTransaction', (d) => d.confirmedTransaction())
}

/** A protobuf `Transaction` → getBlock's `transaction` and the `version` read from its message. */
export function decodeTransaction(bytes: Uint8Array): DecodedTransaction {
  return whole(bytes, 'Transaction', (d) => d.transaction())
}

/** A protobuf `TransactionStatusMeta` → getBlock's `meta`. */
export function decodeTransactionStatusMeta(bytes: Uint8Array, withDiscriminators = false): RpcTransactionMeta {
  return whole(bytes, 'TransactionStatusMeta', (d) => {
    d.withDiscriminators = withDiscriminators
    return d.meta()
  })
}

/** A protobuf `Rewards` → the rewards (getBlock's block `rewards`) and num_partitions. */
export function decodeRewards(bytes: Uint8Array): { rewards: RpcReward[]; numPartitions: U64Value | null } {
  return whole(bytes, 'Rewards', (d) => d.rewards())
}
