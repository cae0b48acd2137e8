/**
 * Record helpers of the normalizer: rewards (mapped and ordered), the order of a transaction's
 * balances by account, and token balance records merged from their pre and post entries.
 */
import type { Reward, TokenBalance } from '../model.ts'
import type { RpcReward, RpcTokenBalance } from '../rpc/types.ts'
import { isAddress } from '../util/base58.ts'
import { isU8, u64 } from './checks.ts'

export function mapReward(r: RpcReward): Reward | null {
  if (r == null || !isAddress(r.pubkey)) return null
  if (r.commission != null && !isU8(r.commission)) return null
  let lamports: bigint
  let postBalance: bigint
  try {
    lamports = u64(r.lamports)
    postBalance = u64(r.postBalance)
  } catch {
    return null
  }
  return {
    pubkey: r.pubkey,
    lamports,
    postBalance,
    rewardType: typeof r.rewardType === 'string' && r.rewardType !== '' ? r.rewardType : null,
    commission: typeof r.commission === 'number' ? r.commission : null,
  }
}

/** the order of rewards in a block (docs/query.md §2): pubkey, then rewardType with null first */
export function compareRewards(a: Reward, b: Reward): number {
  if (a.pubkey !== b.pubkey) return a.pubkey < b.pubkey ? -1 : 1
  const x = a.rewardType
  const y = b.rewardType
  if (x === y) return 0
  if (x === null) return -1
  if (y === null) return 1
  return x < y ? -1 : 1
}

function compareAccount(a: { account: string }, b: { account: string }): number {
  return a.account < b.account ? -1 : a.account > b.account ? 1 : 0
}

const INSERTION_MAX = 24

/** list[start..] sorted by account, stable (a transaction's balances: usually a few). */
export function sortTail<T extends { account: string }>(list: T[], start: number): void {
  const n = list.length - start
  if (n < 2) return
  if (n <= INSERTION_MAX) {
    // in place, moving only strictly greater entries: the order of Array.prototype.sort (stable)
    for (let i = start + 1; i < list.length; i++) {
      const x = list[i]
      const key = x.account
      let j = i - 1
      while (j >= start && list[j].account > key) {
        list[j + 1] = list[j]
        j--
      }
      list[j + 1] = x
    }
    return
  }
  const tail = list.slice(start).sort(compareAccount)
  for (let k = 0; k < n; k++) list[start + k] = tail[k]
}

export function emptyTokenBalance(transactionIndex: number, account: string): TokenBalance {
  return {
    transactionIndex,
    account,
    preMint: null,
    postMint: null,
    preDecimals: null,
    postDecimals: null,
    preProgramId: null,
    postProgramId: null,
    preOwner: null,
    postOwner: null,
    preAmount: null,
    postAmount: null,
  }
}

export function setPre(rec: TokenBalance, tb: RpcTokenBalance, amount: bigint): void {
  rec.preMint = tb.mint
  rec.preDecimals = tb.uiTokenAmount.decimals
  rec.preProgramId = tb.programId ?? null
  rec.preOwner = tb.owner ?? null
  rec.preAmount = amount
}

export function setPost(rec: TokenBalance, tb: RpcTokenBalance, amount: bigint): void {
  rec.postMint = tb.mint
  rec.postDecimals = tb.uiTokenAmount.decimals
  rec.postProgramId = tb.programId ?? null
  rec.postOwner = tb.owner ?? null
  rec.postAmount = amount
}
