/**
 * A streamed block's `SubscribeUpdateBlock` message, from its bytes to the normalized block, in one
 * step that runs in a block decoding thread (src/ingest/block-worker.ts, given the message by
 * `BlockWorkerPool.decodeStreamed`): the main thread only reads the update's header
 * (messages.ts `block-frame`) and hands the bytes over.
 *
 * The block is what `blockToRpc` (block.ts) makes of the message and the ingester's normalizer of
 * that, checked intact as the node's answers are (every transaction in the result, only votes
 * left out: src/ingest/block-decode.ts), with the transactions decoded one at a time as the
 * normalizer asks for them, from their offsets in the message (`blockRanges`: no object per
 * transaction before), so that no block-sized list of `getBlock` records lives.
 *
 * `part` (of 2, the two threads of a large message, src/ingest/block-workers.ts): only the
 * transactions of that part are decoded and normalized (the rewards in the last part), each thread
 * reading the whole message's header and transaction list; the parts join as those of a large
 * `getBlock` answer do (src/ingest/block-join.ts).
 *
 * A message that cannot be read (protobuf, the transactions' indexes, a solana-storage message)
 * throws: the source then fetches the block from the node, as it did when the main thread read
 * it. A block that does not normalize intact is `malformed` (the ingester fetches it again from
 * the node, as for a damaged `getBlock` answer).
 */
import type { RpcTransaction } from '../../rpc/types.ts'
import { isVoteTransaction, normalizeBlockFrom, type TransactionSource } from '../../normalize/normalize.ts'
import { packBlock } from '../../store/packed-block.ts'
import { wallNow } from '../../util/wall-clock.ts'
import {
  missingOf,
  type DecodedBlock,
  type DecodeMarks,
  type DecodePart,
  type NormalizeOptions,
} from '../block-decode.ts'
import { blockRanges, headerToRpc, rangeReader } from './block.ts'

/** a transaction's message could not be read (not a normalization failure) */
class Unreadable extends Error {}

/**
 * the normalized block of a SubscribeUpdateBlock message for `slot`; `pack`: packed into one
 * buffer (src/store/packed-block.ts) to be transferred to another thread. Throws when the message
 * cannot be read.
 */
export function decodeStreamedBlock(
  message: Uint8Array,
  slot: number,
  opts: NormalizeOptions = {},
  pack = false,
  marks?: DecodeMarks,
  part?: DecodePart,
): DecodedBlock {
  const m = blockRanges(message)
  const header = headerToRpc(m)
  if (marks) marks.parsed = wallNow()
  const n = m.count
  const votes = new Uint8Array(n)
  const read = rangeReader(message, m.ranges, true)
  const source: TransactionSource = {
    count: n,
    keysRendered: true,
    at(i: number): RpcTransaction {
      let tx: RpcTransaction
      try {
        tx = read(i)
      } catch (e) {
        throw new Unreadable(`transaction ${i}: ${(e as Error).message}`)
      }
      if (isVoteTransaction(tx)) votes[i] = 1
      return tx
    },
  }
  const from = part ? Math.floor((n * part.index) / part.of) : 0
  const to = part ? Math.floor((n * (part.index + 1)) / part.of) : n
  const range = part ? { from, to, rewards: part.index === part.of - 1 } : undefined
  let r: ReturnType<typeof normalizeBlockFrom>
  try {
    r = normalizeBlockFrom({ slot, block: header }, opts, source, range)
  } catch (e) {
    if (e instanceof Unreadable) throw e
    return { kind: 'malformed', problem: `normalization failed: ${(e as Error).message}` }
  }
  if (marks) marks.normalized = wallNow()
  const missing = missingOf(n, (i) => votes[i] === 1 || i < from || i >= to, r.block)
  if (missing !== null) return { kind: 'malformed', problem: missing }
  const ofPart = part ? { part: { ...part, from, to } } : {}
  if (!pack) return { kind: 'normalized', block: r.block, warnings: r.warnings, ...ofPart }
  const block = packBlock(r.block)
  if (marks) marks.packed = wallNow()
  return { kind: 'normalized', block, warnings: r.warnings, marks, ...ofPart }
}
