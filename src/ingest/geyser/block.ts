/**
 * A Geyser `SubscribeUpdateBlock` as the node's `getBlock` answer (json encoding, full
 * transactions, rewards, `maxSupportedTransactionVersion: 0`), so that streamed blocks go through
 * the same normalizer and checks as fetched ones.
 *
 * Transactions are put in block order by their `index` (servers send them in execution order,
 * which is not the block's); each transaction's `Transaction` and `TransactionStatusMeta` messages
 * are decoded by src/ingest/solana-storage (keys, signatures and data as base58, the version read
 * from the message: v0 and v1 messages both arrive as versioned, v1 with a config and no
 * lookups; `err` from its bincode bytes; the `*_none` flags as null lists). A block whose indexes
 * are not 0..n-1 exactly once is refused (the caller fetches it from the node).
 *
 * `blockUpdateOf` is the inverse, for the fake Geyser server and tests: a `getBlock` answer as a
 * `SubscribeUpdateBlock` (with `executed_transaction_count` set to its number of transactions).
 */
import type { RpcBlock, RpcTransaction } from '../../rpc/types.ts'
import { base58Decode } from '../../util/base58.ts'
import {
  decodeRewards,
  encodeRewards,
  encodeTransaction,
  encodeTransactionStatusMeta,
  StorageDecoder,
} from '../solana-storage/index.ts'
import type { BlockHeader, BlockUpdate, TransactionInfo } from './messages.ts'

function safeNumber(v: bigint | null, what: string): number | null {
  if (v === null) return null
  if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER))
    throw new Error(`${what} ${v} is out of range`)
  return Number(v)
}

export function blockToRpc(m: BlockUpdate): RpcBlock {
  const block = headerToRpc(m)
  const read = transactionReader()
  block.transactions = transactionsInOrder(m).map((t) => read(t))
  return block
}

/**
 * the block's transactions in block order (by `index`); throws unless the indexes are 0..n-1
 * exactly once and each has its `Transaction` message
 */
export function transactionsInOrder(m: BlockUpdate): TransactionInfo[] {
  const n = m.transactions.length
  const byIndex: (TransactionInfo | undefined)[] = new Array(n)
  for (const t of m.transactions) {
    if (t.index >= n) throw new Error(`transaction index ${t.index} in a block of ${n}`)
    if (byIndex[t.index]) throw new Error(`transaction index ${t.index} twice`)
    byIndex[t.index] = t
  }
  for (let i = 0; i < n; i++) if (!byIndex[i]!.transaction) throw new Error(`transaction ${i}: no Transaction message`)
  return byIndex as TransactionInfo[]
}

/**
 * Reads the transactions of one block (from `transactionsInOrder`) as the node's `getBlock` answer
 * has them. The storage messages of a streamed block are views of its one message: they are read
 * by one decoder over that memory, whose cache of base58 text then serves the whole block (the
 * same keys recur from transaction to transaction); messages in memories of their own each get
 * a decoder.
 */
export function transactionReader(): (t: TransactionInfo) => RpcTransaction {
  let d: StorageDecoder | null = null
  const over = (v: Uint8Array): StorageDecoder => {
    if (d === null || d.r.buf.buffer !== v.buffer) d = new StorageDecoder(new Uint8Array(v.buffer))
    d.range(v.byteOffset, v.byteOffset + v.byteLength)
    return d
  }
  const named = (e: unknown, what: string): unknown => {
    if (e instanceof Error && !e.message.includes(what)) e.message = `${what}: ${e.message}`
    return e
  }
  return (t) => {
    let read: ReturnType<StorageDecoder['transaction']>
    let meta: RpcTransaction['meta'] = null
    try {
      read = over(t.transaction!).transaction()
    } catch (e) {
      throw named(e, 'Transaction')
    }
    try {
      if (t.meta) meta = over(t.meta).meta()
    } catch (e) {
      throw named(e, 'TransactionStatusMeta')
    }
    return { transaction: read.transaction, meta, version: read.version }
  }
}

/** the block's `getBlock` answer without its transactions (`transactions` empty) */
export function headerToRpc(m: BlockHeader): RpcBlock {
  const block: RpcBlock = {
    previousBlockhash: m.parentBlockhash,
    blockhash: m.blockhash,
    parentSlot: m.parentSlot,
    transactions: [],
    rewards: [],
  }
  if (m.rewards) {
    const r = decodeRewards(m.rewards)
    block.rewards = r.rewards
    if (r.numPartitions !== null) block.numRewardPartitions = r.numPartitions
  }
  block.blockTime = safeNumber(m.blockTime, 'block_time')
  block.blockHeight = safeNumber(m.blockHeight, 'block_height')
  return block
}

/** a `getBlock` answer of `slot` as a SubscribeUpdateBlock (transactions in block order) */
export function blockUpdateOf(slot: number, b: RpcBlock): BlockUpdate {
  const txs = b.transactions ?? []
  return {
    slot,
    blockhash: b.blockhash,
    parentSlot: b.parentSlot,
    parentBlockhash: b.previousBlockhash,
    blockTime: b.blockTime == null ? null : BigInt(b.blockTime),
    blockHeight: b.blockHeight == null ? null : BigInt(b.blockHeight),
    rewards: encodeRewards(b.rewards ?? [], b.numRewardPartitions ?? null),
    executedTransactionCount: txs.length,
    entriesCount: 0,
    transactions: txs.map((tx, index) => ({
      signature: base58Decode(tx.transaction.signatures[0]),
      isVote: false,
      transaction: encodeTransaction(tx.transaction, tx.version),
      meta: tx.meta ? encodeTransactionStatusMeta(tx.meta) : null,
      index,
    })),
  }
}
