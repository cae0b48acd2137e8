/**
 * The fake Geyser server's `SubscribeUpdateBlock` of a fake node's block (fake-server.ts), built
 * from the node's `getBlock` text at the cost of a node that has its blocks' protobuf at hand.
 *
 * The fake node re-slots template blocks whose copies differ only by their signatures
 * (src/ingest/fake-node/). Each transaction's text without its `signatures` list keys the
 * protobuf of its message and meta, encoded once (`blockUpdateOf`'s encoding, block.ts): a block
 * then costs a split of its text (src/rpc/split.ts) and the decoding of its signatures, not a parse
 * and an encoding of every transaction (for 1,500 transactions, ~180 ms of the node process's CPU
 * per block: it competed for the cores with the follower the tail bench measures). A text that
 * does not split, or a transaction whose signatures are not found, is encoded whole.
 */
import { parseJsonExact } from '../../rpc/json.ts'
import { parseElement, splitTransactions, type SplitBlock } from '../../rpc/split.ts'
import type { RpcBlock, RpcTransaction } from '../../rpc/types.ts'
import { base58Decode } from '../../util/base58.ts'
import { encodeTransaction, encodeTransactionStatusMeta } from '../solana-storage/index.ts'
import { blockUpdateOf } from './block.ts'
import type { BlockUpdate, TransactionInfo } from './messages.ts'

/** a transaction's `signatures` list in its text (the first: the meta, which comes first, has none) */
const SIGNATURES = /"signatures":\s*\[([^\]]*)\]/

interface Encoded {
  /** the Transaction message's `message` field (field 2), with its tag */
  message: Uint8Array
  meta: Uint8Array | null
}

export class FakeBlockEncoder {
  private readonly cache = new Map<string, Encoded>()

  /** `maxCached`: transactions whose encoding is kept (the templates' count, at most) */
  constructor(private readonly maxCached = 50_000) {}

  /** the block of `slot` whose `getBlock` result (json, full transactions) is `text` */
  update(slot: number, text: string): BlockUpdate {
    const split = splitTransactions(text, [])
    if (split === null) return blockUpdateOf(slot, parseJsonExact(text) as RpcBlock)
    const m = blockUpdateOf(slot, parseJsonExact(split.skeleton) as RpcBlock)
    const n = split.spans.length / 2
    const txs: TransactionInfo[] = new Array(n)
    for (let i = 0; i < n; i++) txs[i] = this.transaction(text, split, i)
    m.transactions = txs
    m.executedTransactionCount = n
    return m
  }

  private transaction(text: string, split: SplitBlock, i: number): TransactionInfo {
    const start = split.spans[2 * i]
    const end = split.spans[2 * i + 1]
    const element = text.slice(start, end)
    const found = SIGNATURES.exec(element)
    if (found === null) return whole(text, split, i)
    const key = element.slice(0, found.index) + element.slice(found.index + found[0].length)
    let enc = this.cache.get(key)
    if (!enc) {
      const tx = parseElement(text, split, i) as RpcTransaction
      const message = encodeTransaction({ ...tx.transaction, signatures: [] }, tx.version)
      enc = { message, meta: tx.meta ? encodeTransactionStatusMeta(tx.meta) : null }
      if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value!)
      this.cache.set(key, enc)
    }
    const sigs = (JSON.parse(`[${found[1]}]`) as string[]).map((s) => base58Decode(s))
    if (sigs.length === 0) return whole(text, split, i)
    // Transaction: its signatures (field 1), then its message (field 2, kept encoded)
    let size = enc.message.length
    for (const s of sigs) size += 1 + varintSize(s.length) + s.length
    const out = new Uint8Array(size)
    let p = 0
    for (const s of sigs) {
      out[p++] = 0x0a
      p = writeVarint(out, p, s.length)
      out.set(s, p)
      p += s.length
    }
    out.set(enc.message, p)
    return { signature: sigs[0], isVote: false, transaction: out, meta: enc.meta, index: i }
  }
}

/** transaction `i` parsed and encoded whole (`blockUpdateOf`'s way) */
function whole(text: string, split: SplitBlock, i: number): TransactionInfo {
  const tx = parseElement(text, split, i) as RpcTransaction
  return {
    signature: base58Decode(tx.transaction.signatures[0]),
    isVote: false,
    transaction: encodeTransaction(tx.transaction, tx.version),
    meta: tx.meta ? encodeTransactionStatusMeta(tx.meta) : null,
    index: i,
  }
}

function varintSize(v: number): number {
  let n = 1
  while (v >= 0x80) {
    v >>>= 7
    n++
  }
  return n
}

function writeVarint(out: Uint8Array, p: number, v: number): number {
  while (v >= 0x80) {
    out[p++] = (v & 0x7f) | 0x80
    v >>>= 7
  }
  out[p++] = v
  return p
}
