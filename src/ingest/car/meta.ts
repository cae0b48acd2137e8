/**
 * Transaction metadata and block rewards of Old Faithful files, to the `getBlock` JSON shapes.
 *
 * Metadata is zstd-compressed, and is either protobuf `TransactionStatusMeta` (solana-storage;
 * decoded by src/ingest/solana-storage) or, in older epochs, legacy bincode
 * `StoredTransactionStatusMeta`, which may end after any field from `postBalances` on (the later
 * fields then absent). The two are told apart by the first byte: bincode begins with the u32
 * variant of the status (00 or 01), which no protobuf message begins with (field number 0).
 *
 * Legacy bincode (little-endian; Vec = u64 count; String = u64 length + UTF-8; Option = u8 0/1):
 *   status Result<(), TransactionError> (u32 variant: 0 Ok, 1 Err + bincode TransactionError)
 *   fee u64 · preBalances Vec<u64> · postBalances Vec<u64>
 *   innerInstructions Option<Vec<{index u8, instructions Vec<{programIdIndex u8,
 *     accounts short-vec u8, data short-vec u8}>}>>
 *   logMessages Option<Vec<String>>
 *   preTokenBalances, postTokenBalances Option<Vec<{accountIndex u8, mint String,
 *     uiTokenAmount {uiAmount f64, decimals u8, amount String}, owner String?, programId String?}>>
 *   rewards Option<Vec<{pubkey String, lamports i64, postBalance u64,
 *     rewardType Option<u32: Fee, Rent, Staking, Voting>, commission Option<u8>}>>
 * (bytes after the rewards are not read: no file of the bincode epochs holds later fields).
 *
 * Block rewards: zstd of protobuf `Rewards` (with `num_partitions`), or in older files bincode
 * `Vec<Reward>` (the reward above) or `Vec<{pubkey String, lamports i64}>`.
 */
import type { RpcInnerInstructions, RpcReward, RpcTokenBalance, RpcTransactionMeta } from '../../rpc/types.ts'
import { base58Encode } from '../../util/base58.ts'
import { zstdDecompressSync } from '../../util/zstd.mjs'
import { decodeTransactionErrorAt, decodeProtoMeta, decodeProtoRewards } from './proto-meta.ts'

const utf8 = new TextDecoder('utf-8', { fatal: true })
const REWARD_TYPES = ['Fee', 'Rent', 'Staking', 'Voting']

/** zstd bytes (possibly a view of shared memory) decompressed */
function unzstd(parts: Uint8Array): Uint8Array {
  // the native binding takes no views of a SharedArrayBuffer: a copy of its own
  const own = parts.buffer instanceof SharedArrayBuffer ? new Uint8Array(parts) : parts
  return zstdDecompressSync(own)
}

/** A transaction's metadata payload (zstd) to the RPC's `meta`; null when the payload is empty. */
export function decodeMetadata(payload: Uint8Array, withDiscriminators = false): RpcTransactionMeta | null {
  if (payload.length === 0) return null
  const b = unzstd(payload)
  if (b.length > 0 && b[0] <= 1) return decodeLegacyMeta(b)
  return decodeProtoMeta(b, withDiscriminators)
}

/** A block's rewards payload (zstd) to the RPC's `rewards`. */
export function decodeRewards(payload: Uint8Array): RpcReward[] {
  if (payload.length === 0) return []
  const b = unzstd(payload)
  if (b.length === 0) return []
  for (const full of [true, false]) {
    try {
      const r = new Bincode(b)
      const out = r.vec(() => (full ? r.reward() : { pubkey: r.str(), lamports: r.i64(), postBalance: 0 }))
      if (r.pos === b.length) return out
    } catch {
      // not this form
    }
  }
  return decodeProtoRewards(b)
}

/** Reads bincode; throws BincodeEnd when the bytes end inside a value. */
export class BincodeEnd extends Error {}

export class Bincode {
  pos = 0
  private readonly view: DataView
  constructor(readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  }
  get done(): boolean {
    return this.pos >= this.b.length
  }
  need(n: number): void {
    if (this.pos + n > this.b.length) throw new BincodeEnd(`bincode ends early (at ${this.pos} of ${this.b.length})`)
  }
  u8(): number {
    this.need(1)
    return this.b[this.pos++]
  }
  u32(): number {
    this.need(4)
    this.pos += 4
    return this.view.getUint32(this.pos - 4, true)
  }
  /** u64 as the JSON parser gives it: a number below 10^15, a decimal string above */
  u64(): number | string {
    this.need(8)
    const lo = this.view.getUint32(this.pos, true)
    const hi = this.view.getUint32(this.pos + 4, true)
    this.pos += 8
    const v = hi * 4294967296 + lo
    return v < 1e15 ? v : ((BigInt(hi) << 32n) | BigInt(lo)).toString()
  }
  i64(): number | string {
    this.need(8)
    const v = this.view.getBigInt64(this.pos, true)
    this.pos += 8
    return v > -1000000000000000n && v < 1000000000000000n ? Number(v) : v.toString()
  }
  f64(): number {
    this.need(8)
    this.pos += 8
    return this.view.getFloat64(this.pos - 8, true)
  }
  /** a count (u64) of items taking at least `min` bytes each, checked against what is left */
  count(min = 1): number {
    const n = this.u64()
    if (typeof n !== 'number' || n * min > this.b.length - this.pos)
      throw new Error(`bincode list of ${n} items beyond the bytes`)
    return n
  }
  vec<T>(item: () => T, min = 1): T[] {
    const n = this.count(min)
    const out = new Array<T>(n)
    for (let i = 0; i < n; i++) out[i] = item()
    return out
  }
  option<T>(item: () => T): T | null {
    const tag = this.u8()
    if (tag === 0) return null
    if (tag !== 1) throw new Error(`bad bincode option tag ${tag}`)
    return item()
  }
  str(): string {
    const n = this.count()
    this.pos += n
    return utf8.decode(this.b.subarray(this.pos - n, this.pos))
  }
  shortVec(): number[] {
    let n = 0
    for (let i = 0; ; i++) {
      const x = this.u8()
      n |= (x & 0x7f) << (7 * i)
      if (x < 0x80) break
      if (i === 2) throw new Error('bad short-vec length')
    }
    this.need(n)
    const out = Array.from(this.b.subarray(this.pos, this.pos + n))
    this.pos += n
    return out
  }
  reward(): RpcReward {
    const pubkey = this.str()
    const lamports = this.i64()
    const postBalance = this.u64()
    const t = this.option(() => this.u32())
    if (t !== null && t >= REWARD_TYPES.length) throw new Error(`bad reward type ${t}`)
    const commission = this.option(() => this.u8())
    return { pubkey, lamports, postBalance, rewardType: t === null ? null : REWARD_TYPES[t], commission }
  }
}

/** Legacy bincode `StoredTransactionStatusMeta` (decompressed) to the RPC's `meta`. */
export function decodeLegacyMeta(b: Uint8Array): RpcTransactionMeta {
  const r = new Bincode(b)
  const variant = r.u32()
  let err: unknown = null
  if (variant === 1) {
    const e = decodeTransactionErrorAt(b, r.pos)
    err = e.value
    r.pos = e.end
  } else if (variant !== 0) throw new Error(`bad status variant ${variant}`)
  const meta: RpcTransactionMeta = {
    err,
    status: err === null ? { Ok: null } : { Err: err },
    fee: r.u64(),
    preBalances: [],
    postBalances: [],
  }
  // from here on the bytes may end between fields (older writers): the rest is then absent
  const fields: [keyof RpcTransactionMeta, () => unknown][] = [
    ['preBalances', () => r.vec(() => r.u64(), 8)],
    ['postBalances', () => r.vec(() => r.u64(), 8)],
    ['innerInstructions', () => r.option(() => r.vec(() => innerInstructions(r)))],
    ['logMessages', () => r.option(() => r.vec(() => r.str(), 8))],
    ['preTokenBalances', () => r.option(() => r.vec(() => tokenBalance(r)))],
    ['postTokenBalances', () => r.option(() => r.vec(() => tokenBalance(r)))],
    ['rewards', () => r.option(() => r.vec(() => r.reward()))],
  ]
  for (const [k, read] of fields) {
    if (r.done) break
    ;(meta as unknown as Record<string, unknown>)[k] = read()
  }
  return meta
}

function innerInstructions(r: Bincode): RpcInnerInstructions {
  const index = r.u8()
  const instructions = r.vec(() => ({
    programIdIndex: r.u8(),
    accounts: r.shortVec(),
    data: base58Encode(Uint8Array.from(r.shortVec())),
    stackHeight: null,
  }))
  return { index, instructions }
}

function tokenBalance(r: Bincode): RpcTokenBalance {
  const accountIndex = r.u8()
  const mint = r.str()
  const uiAmount = r.f64()
  const decimals = r.u8()
  const amount = r.str()
  const tb: RpcTokenBalance = {
    accountIndex,
    mint,
    uiTokenAmount: {
      amount,
      decimals,
      uiAmount: uiAmount === 0 ? null : uiAmount,
      uiAmountString: uiAmountString(amount, decimals),
    },
  }
  // owner and program id: absent in the oldest writers' bytes, empty when unknown
  const start = r.pos
  try {
    const owner = r.str()
    if (owner) tb.owner = owner
    const start2 = r.pos
    try {
      const programId = r.str()
      if (programId) tb.programId = programId
    } catch (e) {
      if (!(e instanceof BincodeEnd)) throw e
      r.pos = start2
    }
  } catch (e) {
    if (!(e instanceof BincodeEnd)) throw e
    r.pos = start
  }
  return tb
}

/** the RPC's `uiAmountString`: the amount with `decimals` decimals, trailing zeros trimmed */
export function uiAmountString(amount: string, decimals: number): string {
  if (decimals === 0) return amount
  const s = amount.padStart(decimals + 1, '0')
  const int = s.slice(0, s.length - decimals)
  const frac = s.slice(s.length - decimals).replace(/0+$/, '')
  return frac ? `${int}.${frac}` : int
}
