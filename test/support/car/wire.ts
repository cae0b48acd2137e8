/**
 * Test-only encoders: a `getBlock` JSON transaction to its wire format (legacy, v0, v1), and
 * metadata and rewards to legacy bincode (`StoredTransactionStatusMeta` through `rewards`).
 */
import type { RpcReward, RpcTransaction, RpcTransactionMeta } from '../../../src/rpc/types.ts'
import { base58Decode } from '../../../src/util/base58.ts'
import { transactionErrorFromJson } from '../../../src/ingest/solana-storage/index.ts'

class Out {
  readonly b: number[] = []
  u8(n: number): this {
    this.b.push(n & 0xff)
    return this
  }
  u16(n: number): this {
    return this.u8(n).u8(n >> 8)
  }
  u32(n: number): this {
    return this.u16(n & 0xffff).u16(n >>> 16)
  }
  u64(n: number | string | bigint): this {
    const v = BigInt.asUintN(64, BigInt(n))
    return this.u32(Number(v & 0xffffffffn)).u32(Number(v >> 32n))
  }
  f64(n: number): this {
    const x = Buffer.alloc(8)
    x.writeDoubleLE(n)
    return this.raw(x)
  }
  raw(x: Uint8Array): this {
    for (const c of x) this.b.push(c)
    return this
  }
  shortVec(n: number): this {
    while (n >= 0x80) {
      this.u8((n & 0x7f) | 0x80)
      n >>= 7
    }
    return this.u8(n)
  }
  str(s: string): this {
    const x = Buffer.from(s, 'utf8')
    return this.u64(x.length).raw(x)
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.b)
  }
}

/** the wire bytes of a JSON transaction (`version` as given: legacy, 0 or 1) */
export function encodeWireTransaction(tx: RpcTransaction): Uint8Array {
  const { signatures, message: m } = tx.transaction
  const o = new Out()
  const h = m.header
  if (tx.version === 1) {
    const cfg = m.transactionConfig
    let mask = 0
    if (cfg?.priorityFee != null) mask |= 3
    if (cfg?.computeUnitLimit != null) mask |= 4
    if (cfg?.loadedAccountsDataSizeLimit != null) mask |= 8
    if (cfg?.heapSize != null) mask |= 16
    o.u8(0x81).u8(h.numRequiredSignatures).u8(h.numReadonlySignedAccounts).u8(h.numReadonlyUnsignedAccounts)
    o.u32(mask).raw(base58Decode(m.recentBlockhash)).u8(m.instructions.length).u8(m.accountKeys.length)
    for (const k of m.accountKeys) o.raw(base58Decode(k))
    if (cfg?.priorityFee != null) o.u64(cfg.priorityFee)
    if (cfg?.computeUnitLimit != null) o.u32(cfg.computeUnitLimit)
    if (cfg?.loadedAccountsDataSizeLimit != null) o.u32(cfg.loadedAccountsDataSizeLimit)
    if (cfg?.heapSize != null) o.u32(cfg.heapSize)
    const datas = m.instructions.map((ix) => base58Decode(ix.data))
    m.instructions.forEach((ix, i) => o.u8(ix.programIdIndex).u8(ix.accounts.length).u16(datas[i].length))
    m.instructions.forEach((ix, i) => {
      for (const a of ix.accounts) o.u8(a)
      o.raw(datas[i])
    })
    for (const s of signatures) o.raw(base58Decode(s))
    return o.bytes()
  }
  o.shortVec(signatures.length)
  for (const s of signatures) o.raw(base58Decode(s))
  if (tx.version === 0) o.u8(0x80)
  o.u8(h.numRequiredSignatures).u8(h.numReadonlySignedAccounts).u8(h.numReadonlyUnsignedAccounts)
  o.shortVec(m.accountKeys.length)
  for (const k of m.accountKeys) o.raw(base58Decode(k))
  o.raw(base58Decode(m.recentBlockhash))
  o.shortVec(m.instructions.length)
  for (const ix of m.instructions) {
    const d = base58Decode(ix.data)
    o.u8(ix.programIdIndex).shortVec(ix.accounts.length)
    for (const a of ix.accounts) o.u8(a)
    o.shortVec(d.length).raw(d)
  }
  if (tx.version === 0) {
    const l = m.addressTableLookups ?? []
    o.shortVec(l.length)
    for (const t of l) {
      o.raw(base58Decode(t.accountKey)).shortVec(t.writableIndexes.length)
      for (const x of t.writableIndexes) o.u8(x)
      o.shortVec(t.readonlyIndexes.length)
      for (const x of t.readonlyIndexes) o.u8(x)
    }
  }
  return o.bytes()
}

const REWARD_TYPES = ['Fee', 'Rent', 'Staking', 'Voting']

function reward(o: Out, r: RpcReward): void {
  o.str(r.pubkey).u64(r.lamports).u64(r.postBalance)
  const t = r.rewardType ? REWARD_TYPES.indexOf(r.rewardType) : -1
  if (t < 0) o.u8(0)
  else o.u8(1).u32(t)
  if (r.commission == null) o.u8(0)
  else o.u8(1).u8(r.commission)
}

/** legacy bincode rewards (`Vec<Reward>`) */
export function encodeLegacyRewards(rewards: RpcReward[]): Uint8Array {
  const o = new Out().u64(rewards.length)
  for (const r of rewards) reward(o, r)
  return o.bytes()
}

/**
 * legacy bincode `StoredTransactionStatusMeta` of a transaction's meta, through the
 * field `upTo` (the bytes end there, as older writers' do)
 */
export function encodeLegacyMeta(
  meta: RpcTransactionMeta,
  upTo: 'postBalances' | 'innerInstructions' | 'logMessages' | 'postTokenBalances' | 'rewards' = 'rewards',
): Uint8Array {
  const o = new Out()
  if (meta.err == null) o.u32(0)
  else o.u32(1).raw(transactionErrorFromJson(meta.err))
  o.u64(meta.fee)
  o.u64(meta.preBalances.length)
  for (const x of meta.preBalances) o.u64(x)
  o.u64(meta.postBalances.length)
  for (const x of meta.postBalances) o.u64(x)
  if (upTo === 'postBalances') return o.bytes()
  const opt = <T>(v: T[] | null | undefined, each: (x: T) => void) => {
    if (v == null) o.u8(0)
    else {
      o.u8(1).u64(v.length)
      for (const x of v) each(x)
    }
  }
  opt(meta.innerInstructions, (ii) => {
    o.u8(ii.index).u64(ii.instructions.length)
    for (const ix of ii.instructions) {
      const d = base58Decode(ix.data)
      o.u8(ix.programIdIndex).shortVec(ix.accounts.length)
      for (const a of ix.accounts) o.u8(a)
      o.shortVec(d.length).raw(d)
    }
  })
  if (upTo === 'innerInstructions') return o.bytes()
  opt(meta.logMessages, (l) => o.str(l))
  if (upTo === 'logMessages') return o.bytes()
  for (const list of [meta.preTokenBalances, meta.postTokenBalances]) {
    opt(list, (tb) => {
      o.u8(tb.accountIndex)
        .str(tb.mint)
        .f64(tb.uiTokenAmount.uiAmount ?? 0)
        .u8(tb.uiTokenAmount.decimals)
      o.str(tb.uiTokenAmount.amount)
        .str(tb.owner ?? '')
        .str(tb.programId ?? '')
    })
  }
  if (upTo === 'postTokenBalances') return o.bytes()
  opt(meta.rewards, (r) => reward(o, r))
  return o.bytes()
}
