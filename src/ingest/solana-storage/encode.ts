/**
 * getBlock JSON (src/rpc/types.ts) → solana-storage protobuf messages: the inverse of decode.ts, for
 * tests, the fake Geyser server and the test CAR writer. Writes what agave writes: fields in field
 * number order, proto3 defaults omitted, `optional` fields written whenever set, the `*_none` flags for
 * null lists, `err` as bincode.
 */
import type * as Rpc from '../../rpc/types.ts'
import { decodeBase58Scratch } from './b58.ts'
import { F } from './fields.ts'
import { transactionErrorFromJson } from './tx-error.ts'
import { ProtoWriter } from './wire.ts'

const REWARD_TYPE_VALUES: Record<string, number> = { Fee: 1, Rent: 2, Staking: 3, Voting: 4 }

/** the bytes of base58 text, valid until the next call (the writer copies them at once) */
function b58(s: string, what: string): Uint8Array {
  try {
    return decodeBase58Scratch(s)
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`)
  }
}

/** writes `Reward` as field `field` of the current message */
export function writeReward(w: ProtoWriter, field: number, r: Rpc.RpcReward): void {
  const s = w.begin()
  w.stringField(F.reward.pubkey, r.pubkey)
  w.u64Field(F.reward.lamports, r.lamports)
  w.u64Field(F.reward.postBalance, r.postBalance)
  const type = r.rewardType == null ? 0 : REWARD_TYPE_VALUES[r.rewardType]
  if (type === undefined) throw new Error(`unknown rewardType ${JSON.stringify(r.rewardType)}`)
  w.u32Field(F.reward.rewardType, type)
  if (r.commission != null) w.stringField(F.reward.commission, String(r.commission))
  w.end(field, s)
}

function writeInstruction(w: ProtoWriter, field: number, ix: Rpc.RpcInstruction, inner: boolean): void {
  const s = w.begin()
  w.u32Field(F.instruction.programIdIndex, ix.programIdIndex)
  w.bytesField(F.instruction.accounts, Uint8Array.from(ix.accounts))
  w.bytesField(F.instruction.data, b58(ix.data, 'instruction data'))
  if (inner && ix.stackHeight != null) {
    w.tag(F.instruction.stackHeight, 0)
    w.varint32(ix.stackHeight)
  }
  w.end(field, s)
}

function writeMessage(w: ProtoWriter, field: number, m: Rpc.RpcMessage, version: 'legacy' | number): void {
  const s = w.begin()
  const h = w.begin()
  w.u32Field(F.header.numRequiredSignatures, m.header.numRequiredSignatures)
  w.u32Field(F.header.numReadonlySignedAccounts, m.header.numReadonlySignedAccounts)
  w.u32Field(F.header.numReadonlyUnsignedAccounts, m.header.numReadonlyUnsignedAccounts)
  w.end(F.message.header, h)
  for (const k of m.accountKeys) w.bytesPresent(F.message.accountKeys, b58(k, 'account key'))
  w.bytesField(F.message.recentBlockhash, b58(m.recentBlockhash, 'recentBlockhash'))
  for (const ix of m.instructions) writeInstruction(w, F.message.instructions, ix, false)
  w.boolField(F.message.versioned, version !== 'legacy')
  for (const l of m.addressTableLookups ?? []) {
    const ls = w.begin()
    w.bytesField(F.lookup.accountKey, b58(l.accountKey, 'lookup table key'))
    w.bytesField(F.lookup.writableIndexes, Uint8Array.from(l.writableIndexes))
    w.bytesField(F.lookup.readonlyIndexes, Uint8Array.from(l.readonlyIndexes))
    w.end(F.message.addressTableLookups, ls)
  }
  const config = m.transactionConfig
  if (version === 1 || config != null) {
    const cs = w.begin()
    if (config?.priorityFee != null) w.u64Present(F.config.priorityFee, config.priorityFee)
    if (config?.computeUnitLimit != null) w.u64Present(F.config.computeUnitLimit, config.computeUnitLimit)
    if (config?.loadedAccountsDataSizeLimit != null)
      w.u64Present(F.config.loadedAccountsDataSizeLimit, config.loadedAccountsDataSizeLimit)
    if (config?.heapSize != null) w.u64Present(F.config.heapSize, config.heapSize)
    w.end(F.message.config, cs)
  }
  w.end(field, s)
}

/** writes `Transaction` (signatures + message) as field `field` */
export function writeTransaction(
  w: ProtoWriter,
  field: number,
  tx: Rpc.RpcTransaction['transaction'],
  version: 'legacy' | number | undefined,
): void {
  const s = w.begin()
  for (const sig of tx.signatures) w.bytesPresent(F.transaction.signatures, b58(sig, 'signature'))
  writeMessage(w, F.transaction.message, tx.message, version ?? 'legacy')
  w.end(field, s)
}

function writeTokenBalance(w: ProtoWriter, field: number, tb: Rpc.RpcTokenBalance): void {
  const s = w.begin()
  w.u32Field(F.tokenBalance.accountIndex, tb.accountIndex)
  w.stringField(F.tokenBalance.mint, tb.mint)
  const a = w.begin()
  const u = tb.uiTokenAmount
  w.doubleField(F.uiTokenAmount.uiAmount, u.uiAmount ?? 0)
  w.u32Field(F.uiTokenAmount.decimals, u.decimals)
  w.stringField(F.uiTokenAmount.amount, u.amount)
  w.stringField(F.uiTokenAmount.uiAmountString, u.uiAmountString ?? '')
  w.end(F.tokenBalance.uiTokenAmount, a)
  w.stringField(F.tokenBalance.owner, tb.owner ?? '')
  w.stringField(F.tokenBalance.programId, tb.programId ?? '')
  w.end(field, s)
}

/** writes `TransactionStatusMeta` as field `field` */
export function writeTransactionStatusMeta(w: ProtoWriter, field: number, m: Rpc.RpcTransactionMeta): void {
  const s = w.begin()
  if (m.err != null) {
    const e = w.begin()
    w.bytesField(1, transactionErrorFromJson(m.err))
    w.end(F.meta.err, e)
  }
  w.u64Field(F.meta.fee, m.fee)
  w.packedU64(F.meta.preBalances, m.preBalances)
  w.packedU64(F.meta.postBalances, m.postBalances)
  for (const ii of m.innerInstructions ?? []) {
    const is = w.begin()
    w.u32Field(F.innerInstructions.index, ii.index)
    for (const ix of ii.instructions) writeInstruction(w, F.innerInstructions.instructions, ix, true)
    w.end(F.meta.innerInstructions, is)
  }
  for (const line of m.logMessages ?? []) w.stringPresent(F.meta.logMessages, line)
  for (const tb of m.preTokenBalances ?? []) writeTokenBalance(w, F.meta.preTokenBalances, tb)
  for (const tb of m.postTokenBalances ?? []) writeTokenBalance(w, F.meta.postTokenBalances, tb)
  for (const r of m.rewards ?? []) writeReward(w, F.meta.rewards, r)
  w.boolField(F.meta.innerInstructionsNone, m.innerInstructions == null)
  w.boolField(F.meta.logMessagesNone, m.logMessages == null)
  for (const k of m.loadedAddresses?.writable ?? [])
    w.bytesPresent(F.meta.loadedWritableAddresses, b58(k, 'loaded address'))
  for (const k of m.loadedAddresses?.readonly ?? [])
    w.bytesPresent(F.meta.loadedReadonlyAddresses, b58(k, 'loaded address'))
  if (m.returnData != null) {
    const r = w.begin()
    w.bytesField(F.returnData.programId, b58(m.returnData.programId, 'returnData.programId'))
    w.bytesField(F.returnData.data, Buffer.from(m.returnData.data[0], 'base64'))
    w.end(F.meta.returnData, r)
  }
  w.boolField(F.meta.returnDataNone, m.returnData == null)
  if (m.computeUnitsConsumed != null) w.u64Present(F.meta.computeUnitsConsumed, m.computeUnitsConsumed)
  if (m.costUnits != null) w.u64Present(F.meta.costUnits, m.costUnits)
  w.end(field, s)
}

/** writes `ConfirmedTransaction` as field `field` */
export function writeConfirmedTransaction(w: ProtoWriter, field: number, tx: Rpc.RpcTransaction): void {
  const s = w.begin()
  writeTransaction(w, F.confirmedTransaction.transaction, tx.transaction, tx.version)
  if (tx.meta != null) writeTransactionStatusMeta(w, F.confirmedTransaction.meta, tx.meta)
  w.end(field, s)
}

function writeWrappedU64(w: ProtoWriter, field: number, v: Rpc.U64): void {
  const s = w.begin()
  w.u64Field(1, v)
  w.end(field, s)
}

/** Options of encodeConfirmedBlock. */
export interface EncodeBlockOptions {
  /** `num_partitions` (default: the block's `numRewardPartitions`, absent when that is) */
  numPartitions?: Rpc.U64 | null
}

/** getBlock JSON → protobuf `ConfirmedBlock`. */
export function encodeConfirmedBlock(block: Rpc.RpcBlock, opts: EncodeBlockOptions = {}): Uint8Array {
  const w = new ProtoWriter(64 * 1024)
  w.stringField(F.block.previousBlockhash, block.previousBlockhash)
  w.stringField(F.block.blockhash, block.blockhash)
  w.u64Field(F.block.parentSlot, block.parentSlot)
  for (const tx of block.transactions ?? []) writeConfirmedTransaction(w, F.block.transactions, tx)
  for (const r of block.rewards ?? []) writeReward(w, F.block.rewards, r)
  if (block.blockTime != null) writeWrappedU64(w, F.block.blockTime, block.blockTime)
  if (block.blockHeight != null) writeWrappedU64(w, F.block.blockHeight, block.blockHeight)
  const np = opts.numPartitions !== undefined ? opts.numPartitions : block.numRewardPartitions
  if (np != null) writeWrappedU64(w, F.block.numPartitions, np)
  return w.finish()
}

/** getBlock `transactions[i]` → protobuf `ConfirmedTransaction`. */
export function encodeConfirmedTransaction(tx: Rpc.RpcTransaction): Uint8Array {
  const w = new ProtoWriter()
  writeConfirmedTransaction(w, 1, tx)
  return stripOuter(w)
}

/** getBlock `transaction` (+ `version`) → protobuf `Transaction`. */
export function encodeTransaction(tx: Rpc.RpcTransaction['transaction'], version?: 'legacy' | number): Uint8Array {
  const w = new ProtoWriter()
  writeTransaction(w, 1, tx, version)
  return stripOuter(w)
}

/** getBlock `meta` → protobuf `TransactionStatusMeta`. */
export function encodeTransactionStatusMeta(meta: Rpc.RpcTransactionMeta): Uint8Array {
  const w = new ProtoWriter()
  writeTransactionStatusMeta(w, 1, meta)
  return stripOuter(w)
}

/** block rewards (+ num_partitions) → protobuf `Rewards` (what Old Faithful Rewards nodes hold). */
export function encodeRewards(rewards: readonly Rpc.RpcReward[], numPartitions?: Rpc.U64 | null): Uint8Array {
  const w = new ProtoWriter()
  for (const r of rewards) writeReward(w, F.rewards.rewards, r)
  if (numPartitions != null) writeWrappedU64(w, F.rewards.numPartitions, numPartitions)
  return w.finish()
}

/** the content of the single field a writer holds (drops its tag and length) */
function stripOuter(w: ProtoWriter): Uint8Array {
  const all = w.finish()
  let p = 1 // tag of field 1, wire type 2: one byte
  while (all[p] >= 0x80) p++
  return all.subarray(p + 1)
}
