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
import { LEN, ProtoError, VARINT, type ProtoReader } from '../solana-storage/wire.ts'
import {
  decodeBlockUpdateWith,
  emptyBlockHeader,
  type BlockHeader,
  type BlockUpdate,
  type TransactionInfo,
} from './messages.ts'

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
  const ts = m.transactions
  const order = blockOrder(
    ts.length,
    (k) => ts[k].index,
    (k) => ts[k].transaction !== null,
  )
  return Array.from(order, (k) => ts[k])
}

/**
 * For each index 0..n-1 in block order, the position in arrival order of its transaction, given
 * each arrival's index (`indexAt`) and whether it holds its `Transaction` message; throws unless
 * the indexes are 0..n-1 exactly once and each holds it (`transactionsInOrder`, `blockRanges`)
 */
function blockOrder(n: number, indexAt: (k: number) => number, hasTransaction: (k: number) => boolean): Int32Array {
  const at = new Int32Array(n).fill(-1)
  for (let k = 0; k < n; k++) {
    const index = indexAt(k)
    if (index >= n) throw new Error(`transaction index ${index} in a block of ${n}`)
    if (at[index] !== -1) throw new Error(`transaction index ${index} twice`)
    at[index] = k
  }
  for (let i = 0; i < n; i++) if (!hasTransaction(at[i])) throw new Error(`transaction ${i}: no Transaction message`)
  return at
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

/**
 * A SubscribeUpdateBlock's header and where its transactions' messages are, without an object or
 * a view per transaction (a block decoding thread reads them from these offsets:
 * block-decode.ts): `ranges` holds, for the transaction of each index in block order, the
 * offsets in the message of its `Transaction` [start, end) and `TransactionStatusMeta` [start,
 * end) (-1, -1: none).
 */
export interface BlockRanges extends BlockHeader {
  count: number
  ranges: Int32Array
}

/**
 * the header and transaction ranges of a SubscribeUpdateBlock message; throws as
 * `decodeBlockUpdate` + `transactionsInOrder` do (indexes not 0..n-1 exactly once, a transaction
 * without its `Transaction` message, a field of the wrong wire type)
 */
export function blockRanges(message: Uint8Array): BlockRanges {
  // per transaction in arrival order: index, transaction start, end, meta start, end
  let found = new Int32Array(5 * 2048)
  let n = 0
  const h = decodeBlockUpdateWith(message, { ...emptyBlockHeader(), count: 0, ranges: new Int32Array(0) }, (r) => {
    if (5 * n + 5 > found.length) {
      const more = new Int32Array(found.length * 2)
      more.set(found)
      found = more
    }
    transactionInfoRange(r, found, 5 * n++)
  })
  const order = blockOrder(
    n,
    (k) => found[5 * k],
    (k) => found[5 * k + 1] >= 0,
  )
  const ranges = new Int32Array(4 * n)
  for (let i = 0; i < n; i++) ranges.set(found.subarray(5 * order[i] + 1, 5 * order[i] + 5), 4 * i)
  h.count = n
  h.ranges = ranges
  return h
}

/** a SubscribeUpdateTransactionInfo's index and message ranges into out[at, at + 5) (see blockRanges) */
function transactionInfoRange(r: ProtoReader, out: Int32Array, at: number): void {
  out[at] = 0
  out[at + 1] = out[at + 2] = out[at + 3] = out[at + 4] = -1
  while (r.pos < r.end) {
    const t = r.tag()
    const no = t >>> 3
    const wt = t & 7
    if (no === 3 || no === 4) {
      if (wt !== LEN)
        throw new ProtoError(`protobuf: ${no === 3 ? 'transaction' : 'meta'}: wire type ${wt}, expected ${LEN}`)
      const e = r.lenEnd()
      const k = no === 3 ? at + 1 : at + 3
      out[k] = r.pos
      out[k + 1] = e
      r.pos = e
    } else if (no === 5 || no === 2) {
      if (wt !== VARINT)
        throw new ProtoError(`protobuf: ${no === 5 ? 'index' : 'is_vote'}: wire type ${wt}, expected ${VARINT}`)
      if (no === 2) r.bool()
      else {
        const v = r.u64()
        if (typeof v !== 'number' || v > 0x7fffffff) throw new ProtoError(`protobuf: index ${v} is out of range`)
        out[at] = v
      }
    } else if (no === 1 && wt !== LEN) throw new ProtoError(`protobuf: signature: wire type ${wt}, expected ${LEN}`)
    else r.skip(wt)
  }
}

/**
 * Reads the transactions of a block's message by their `blockRanges` as the node's `getBlock`
 * answer has them (one decoder over the message: its cache of base58 text serves the whole block);
 * `withDiscriminators`: the instructions with their `discriminators` too (`FieldReader`)
 */
export function rangeReader(
  message: Uint8Array,
  ranges: Int32Array,
  withDiscriminators = false,
): (i: number) => RpcTransaction {
  const d = new StorageDecoder(message)
  d.withDiscriminators = withDiscriminators
  return (i) => {
    const at = 4 * i
    let read: ReturnType<StorageDecoder['transaction']>
    let meta: RpcTransaction['meta'] = null
    try {
      read = d.range(ranges[at], ranges[at + 1]).transaction()
    } catch (e) {
      throw named(e, 'Transaction')
    }
    try {
      if (ranges[at + 2] >= 0) meta = d.range(ranges[at + 2], ranges[at + 3]).meta()
    } catch (e) {
      throw named(e, 'TransactionStatusMeta')
    }
    return { transaction: read.transaction, meta, version: read.version }
  }
}

/** an error's message with `what` in front (unless it names it already) */
function named(e: unknown, what: string): unknown {
  if (e instanceof Error && !e.message.includes(what)) e.message = `${what}: ${e.message}`
  return e
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
