/**
 * RPC `getBlock` result → normalized records (docs/query.md §1), sorted as in docs/query.md §2.
 */
import type { Block, BlockHeader, NormalizationWarning, Reward } from '../model.ts'
import type { ArchiveLine, RpcBlock, RpcTransaction } from '../rpc/types.ts'
import { isAddress } from '../util/base58.ts'
import { safeJson } from '../util/safe-json.ts'
import { isSlotNumber } from './checks.ts'
import { compareRewards, mapReward } from './records.ts'
import { TxNormalizer } from './transaction.ts'

export { compareRewards } from './records.ts'
export type { ArchiveLine } from '../rpc/types.ts'

export const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111'

export interface NormalizeOptions {
  /** keep vote transactions (dropped by default) */
  includeVotes?: boolean
}

export interface NormalizeResult {
  block: Block
  warnings: NormalizationWarning[]
}

/** Is this a vote transaction: exactly one instruction, whose program is the Vote program? */
export function isVoteTransaction(tx: RpcTransaction): boolean {
  const msg = tx?.transaction?.message
  if (msg == null || !Array.isArray(msg.instructions) || msg.instructions.length !== 1) return false
  const ins = msg.instructions[0]
  return ins != null && msg.accountKeys?.[ins.programIdIndex] === VOTE_PROGRAM
}

/**
 * Normalizes one block. Never throws for content problems: it normalizes as far as it can and
 * reports each problem as a warning (with slot, transaction index and signature when known).
 */
export function normalizeBlock(line: ArchiveLine, opts?: NormalizeOptions): NormalizeResult {
  return normalizeBlockFrom(line, opts, null)
}

/**
 * The transactions of a block, given one at a time (`normalizeBlockFrom`): `count` of them,
 * `at(i)` the i-th, parsed on demand. `at` may throw: the exception leaves `normalizeBlockFrom`.
 */
export interface TransactionSource {
  count: number
  at(i: number): RpcTransaction
  /**
   * set when every transaction's signatures, account keys and loaded addresses are base58 text of
   * 64 and 32 bytes by construction (rendered from bytes of those sizes, src/ingest/solana-storage):
   * they are not checked again (the JSON path checks them), and instructions that carry their
   * `discriminators` (src/normalize/data.ts `DecodedInstruction`) are taken with them
   */
  keysRendered?: boolean
}

/**
 * `normalizeBlock`, with the transactions taken from `txs` instead of `line.block.transactions`
 * when it is given (each one is then dropped before the next is asked for). `part`: only the
 * transactions at positions [from, to) are normalized (and asked for), and the rewards only when
 * `rewards` is set: a block normalized in parts (the parts' lists concatenated in order, the
 * rewards of one part) equals the block normalized whole.
 */
export function normalizeBlockFrom(
  line: ArchiveLine,
  opts: NormalizeOptions | undefined,
  txs: TransactionSource | null,
  part?: { from: number; to: number; rewards: boolean },
): NormalizeResult {
  return normalizeInto(line, opts, txs, part, null)
}

/**
 * Where `normalizeBlockInto` hands a block's records over: `take(slice)`, in order, with the
 * block's header and the records of the next transactions (the rewards in the last slice); the
 * slice's lists are the normalizer's no longer once given.
 */
export interface RecordSink {
  /** transactions (of the block's list, votes dropped included) per slice */
  every: number
  take(slice: Block): void
}

/**
 * `normalizeBlockFrom`, with the records handed to `sink` as they are made, a slice of
 * `sink.every` transactions at a time, instead of gathered into one block: a block-sized list of
 * records never lives, so records die young (import, where each slice goes into the chunk's
 * columns at once). The slices' lists concatenated in order are the lists of
 * `normalizeBlockFrom`; the result's block has the header and empty lists. An exception thrown
 * by `txs.at` or `sink.take` leaves, after the slices given so far.
 */
export function normalizeBlockInto(
  line: ArchiveLine,
  opts: NormalizeOptions | undefined,
  txs: TransactionSource | null,
  sink: RecordSink,
): NormalizeResult {
  return normalizeInto(line, opts, txs, undefined, sink)
}

function normalizeInto(
  line: ArchiveLine,
  opts: NormalizeOptions | undefined,
  txs: TransactionSource | null,
  part: { from: number; to: number; rewards: boolean } | undefined,
  sink: RecordSink | null,
): NormalizeResult {
  const warnings: NormalizationWarning[] = []
  const slot = line.slot
  const src: RpcBlock = line.block ?? ({} as RpcBlock)
  const warn = (message: string, transactionIndex?: number, signature?: string): void => {
    const w: NormalizationWarning = { slot, message }
    if (transactionIndex !== undefined) w.transactionIndex = transactionIndex
    if (signature !== undefined) w.signature = signature
    warnings.push(w)
  }

  if (typeof src !== 'object' || src === null) warn('block is not an object')

  const hash = line.hash ?? src.blockhash
  if (typeof hash !== 'string') warn('block has no blockhash')
  else if (!isAddress(hash)) warn(`blockhash ${safeJson(hash)} is not a 32-byte base58 hash: "" used`)
  if (!isSlotNumber(src.parentSlot)) warn(`block has no parentSlot (${safeJson(src.parentSlot)}): 0 used`)
  if (typeof src.previousBlockhash !== 'string') warn('block has no previousBlockhash')
  else if (!isAddress(src.previousBlockhash)) {
    warn(`previousBlockhash ${safeJson(src.previousBlockhash)} is not a 32-byte base58 hash: "" used`)
  }
  const height = line.height !== undefined ? line.height : src.blockHeight
  const header: BlockHeader = {
    number: slot,
    hash: isAddress(hash) ? hash : '',
    parentNumber: isSlotNumber(src.parentSlot) ? src.parentSlot : 0,
    parentHash: isAddress(src.previousBlockhash) ? src.previousBlockhash : '',
    height: isSlotNumber(height) ? height : null,
    timestamp: Number.isSafeInteger(src.blockTime) ? (src.blockTime as number) : 0,
  }

  const block: Block = {
    header,
    transactions: [],
    instructions: [],
    logs: [],
    balances: [],
    tokenBalances: [],
    rewards: [],
  }

  const list = src.transactions
  if (txs === null && list != null && !Array.isArray(list)) warn('block.transactions is not a list')
  if (txs !== null || Array.isArray(list)) {
    const includeVotes = opts?.includeVotes === true
    const tn = new TxNormalizer(block, warnings, slot, txs?.keysRendered === true)
    const n = txs !== null ? txs.count : list!.length
    // the transactions to go before the next slice is given (+1: counted down as each one comes)
    const every = sink === null ? 0 : Math.max(1, sink.every)
    let left = sink === null ? -1 : every + 1
    for (let i = part?.from ?? 0, end = Math.min(n, part?.to ?? n); i < end; i++) {
      const tx = txs !== null ? txs.at(i) : list![i]
      if (--left === 0) {
        left = every
        flush(sink!, block)
      }
      if (!includeVotes && isVoteTransaction(tx)) continue
      tn.process(i, tx)
    }
  }

  const rewards = src.rewards
  if (Array.isArray(rewards) && (part === undefined || part.rewards)) {
    for (const r of rewards) {
      const m = mapReward(r)
      if (m) block.rewards.push(m)
      else warn(`reward skipped: malformed ${safeJson(r)}`)
    }
    block.rewards.sort(compareRewards)
  }
  if (sink !== null) flush(sink, block)

  return { block, warnings }
}

/** give the records made so far to `sink`, and start new lists */
function flush(sink: RecordSink, block: Block): void {
  sink.take({ ...block })
  block.transactions = []
  block.instructions = []
  block.logs = []
  block.balances = []
  block.tokenBalances = []
  block.rewards = []
}

/** Re-exported for callers that only need the record types. */
export type {
  Balance,
  Block,
  Instruction,
  Log,
  NormalizationWarning,
  Reward,
  TokenBalance,
  Transaction,
} from '../model.ts'
