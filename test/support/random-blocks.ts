/**
 * Deterministic generator of model-conformant normalized blocks (src/model.ts) for differential
 * tests and benchmarks: nested instruction trees, logs attached to instructions, balances, token
 * balances with pre-only/post-only sides, rewards with null rewardType, u64 values above 2^53,
 * skipped slots, transaction index gaps (removed votes).
 */
import type { Balance, Block, Instruction, Log, Reward, TokenBalance, Transaction } from '../../src/model.ts'
import { base58Encode, BASE58_ALPHABET } from '../../src/util/base58.ts'
import { mulberry32 } from '../../src/util/prng.ts'
import { compareRewards } from '../../src/normalize/normalize.ts'

/** small seeded PRNG, floats in [0, 1) */
export const prng = mulberry32

export class Rng {
  private readonly next: () => number
  constructor(seed: number) {
    this.next = prng(seed)
  }
  float(): number {
    return this.next()
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.next() * a.length)]
  }
  subset<T>(a: readonly T[], n: number): T[] {
    const out: T[] = []
    for (let i = 0; i < n; i++) out.push(this.pick(a))
    return out
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n)
    for (let i = 0; i < n; i++) b[i] = Math.floor(this.next() * 256)
    return b
  }
  base58(len: number): string {
    const A = BASE58_ALPHABET
    let s = ''
    for (let i = 0; i < len; i++) s += A[Math.floor(this.next() * 58)]
    return s
  }
  bigU64(): bigint {
    // mostly small values, sometimes above 2^53, sometimes near 2^64
    const r = this.next()
    if (r < 0.6) return BigInt(this.int(0, 1_000_000))
    if (r < 0.9) return BigInt(this.int(0, 2 ** 31)) * 4_294_967_296n + BigInt(this.int(0, 2 ** 31))
    return 18446744073709551615n - BigInt(this.int(0, 1000))
  }
}

function hex(b: Uint8Array): string {
  let s = '0x'
  for (const x of b) s += x.toString(16).padStart(2, '0')
  return s
}

/** The address pools the generator draws from (random queries draw from the same pools). */
export interface Pools {
  programs: string[]
  accounts: string[]
  mints: string[]
  owners: string[]
  tokenPrograms: string[]
  /** 8-byte discriminators (hex `0x…`) that instruction data often starts with */
  discriminators: string[]
}

export function makePools(seed = 1): Pools {
  const r = new Rng(seed ^ 0x5eed)
  // valid addresses (32 bytes): address filters reject anything else
  const key = () => base58Encode(r.bytes(32))
  return {
    programs: [
      'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc',
      'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4',
      'LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo',
      'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
      '11111111111111111111111111111111',
      'ComputeBudget111111111111111111111111111111',
      ...Array.from({ length: 4 }, key),
    ],
    accounts: Array.from({ length: 40 }, key),
    mints: Array.from({ length: 6 }, key),
    owners: Array.from({ length: 8 }, key),
    tokenPrograms: ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb'],
    discriminators: ['0xf8c69e91e17587c8', '0x2b04ed0b1ac91e62', '0x0a333d2370691855', '0xe445a52e51cb9a1d'],
  }
}

export interface GenOptions {
  blocks: number
  firstSlot?: number
  /** maximum transactions per block */
  maxTx?: number
  /** probability that a slot is skipped before each produced block */
  skipRate?: number
  pools?: Pools
}

const MESSAGES = [
  'Instruction: Swap',
  'Instruction: Transfer',
  'consumed "quoted" text',
  'line\nbreak and tab\t',
  'unicode ✓ café',
  'back\\slash',
  'ctrl \u0001 char',
  'Program return: whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc AQ==',
  'vdt/007mYe4=',
]

const ERRORS = ['custom program error: 0x1771', 'invalid account data for instruction', 'said "no"\n']

export function randomBlocks(seed: number, opts: GenOptions): Block[] {
  const r = new Rng(seed)
  const P = opts.pools ?? makePools()
  const maxTx = opts.maxTx ?? 6
  const skipRate = opts.skipRate ?? 0.25
  const blocks: Block[] = []
  let slot = opts.firstSlot ?? 1000
  let parentNumber = slot - 1
  let parentHash = r.base58(44)
  for (let bi = 0; bi < opts.blocks; bi++) {
    while (r.chance(skipRate)) slot++
    const hash = r.base58(r.int(43, 44))
    const block: Block = {
      header: {
        number: slot,
        hash,
        parentNumber,
        parentHash,
        height: r.chance(0.1) ? null : slot - 500,
        timestamp: 1_700_000_000 + slot,
      },
      transactions: [],
      instructions: [],
      logs: [],
      balances: [],
      tokenBalances: [],
      rewards: [],
    }
    const txCount = r.int(0, maxTx)
    let txIndex = -1
    for (let t = 0; t < txCount; t++) {
      txIndex += r.chance(0.2) ? 2 : 1
      genTransaction(r, P, block, txIndex)
    }
    const rewards: Reward[] = []
    const nRewards = r.chance(0.3) ? r.int(1, 3) : 0
    for (let i = 0; i < nRewards; i++) {
      rewards.push({
        pubkey: r.pick(P.accounts.slice(0, 10)),
        lamports: r.chance(0.2) ? -r.bigU64() / 2n : r.bigU64() / 2n,
        postBalance: r.bigU64(),
        rewardType: r.chance(0.4) ? null : r.pick(['Fee', 'Rent', 'Voting', 'Staking']),
        commission: r.chance(0.5) ? null : r.int(0, 100),
      })
    }
    rewards.sort(compareRewards)
    block.rewards = rewards
    blocks.push(block)
    parentNumber = slot
    parentHash = hash
    slot++
  }
  return blocks
}

function genTransaction(r: Rng, P: Pools, block: Block, txIndex: number): void {
  const version: 'legacy' | 0 = r.chance(0.5) ? 'legacy' : 0
  const accountKeys = r.subset(P.accounts, r.int(1, 8))
  const loaded =
    version === 0 && r.chance(0.7)
      ? { writable: r.subset(P.accounts, r.int(0, 3)), readonly: r.subset(P.accounts, r.int(0, 3)) }
      : { writable: [], readonly: [] }
  const failed = r.chance(0.2)
  const tx: Transaction = {
    transactionIndex: txIndex,
    version,
    accountKeys,
    addressTableLookups:
      loaded.writable.length + loaded.readonly.length > 0
        ? [
            {
              accountKey: r.pick(P.accounts),
              writableIndexes: loaded.writable.map((_, i) => i),
              readonlyIndexes: loaded.readonly.map((_, i) => i + 10),
            },
          ]
        : [],
    numReadonlySignedAccounts: r.int(0, 1),
    numReadonlyUnsignedAccounts: r.int(0, 4),
    numRequiredSignatures: r.int(1, 2),
    recentBlockhash: r.base58(44),
    signatures: Array.from({ length: r.int(1, 2) }, () => r.base58(r.int(86, 88))),
    err: failed
      ? { InstructionError: [r.int(0, 3), r.chance(0.5) ? { Custom: r.int(0, 7000) } : 'InvalidAccountData'] }
      : null,
    fee: r.chance(0.9) ? BigInt(5000 * r.int(1, 3)) : r.bigU64(),
    computeUnitsConsumed: r.bigU64(),
    loadedAddresses: loaded,
    feePayer: accountKeys[0],
    hasDroppedLogMessages: r.chance(0.05),
    // legacy and v0 only (test/v1-transactions.test.ts has version 1 ones)
    transactionConfig: null,
  }
  block.transactions.push(tx)

  // instruction tree in depth-first order, logs in execution order
  const all = [...accountKeys, ...loaded.writable, ...loaded.readonly]
  let logIndex = 0
  const visit = (address: number[], depth: number) => {
    const programId = r.chance(0.7) ? r.pick(P.programs.slice(0, 6)) : r.pick(P.programs)
    const dataLen = r.int(0, 24)
    const data = r.bytes(dataLen)
    if (dataLen >= 8 && r.chance(0.5)) {
      const d = r.pick(P.discriminators)
      for (let k = 0; k < 8; k++) data[k] = parseInt(d.slice(2 + 2 * k, 4 + 2 * k), 16)
    }
    const ins: Instruction = {
      transactionIndex: txIndex,
      instructionAddress: address,
      programId,
      accounts: r.subset(all, r.int(0, r.chance(0.1) ? 20 : 6)),
      data: base58Encode(data),
      d1: dataLen >= 1 ? hex(data.subarray(0, 1)) : null,
      d2: dataLen >= 2 ? hex(data.subarray(0, 2)) : null,
      d4: dataLen >= 4 ? hex(data.subarray(0, 4)) : null,
      d8: dataLen >= 8 ? hex(data.subarray(0, 8)) : null,
      dataPrefix: hex(data.subarray(0, Math.min(16, dataLen))),
      error: failed && r.chance(0.3) ? r.pick(ERRORS) : null,
      computeUnitsConsumed: r.chance(0.3) ? null : r.bigU64(),
      isCommitted: !failed,
      hasDroppedLogMessages: r.chance(0.05),
    }
    block.instructions.push(ins)
    const nLogs = r.int(0, 2)
    for (let k = 0; k < nLogs; k++) {
      logIndex += r.int(1, 2)
      const log: Log = {
        transactionIndex: txIndex,
        logIndex,
        instructionAddress: address,
        programId,
        kind: r.pick(['log', 'data', 'other'] as const),
        message: r.pick(MESSAGES),
      }
      block.logs.push(log)
    }
    if (depth < 4) {
      const children = r.chance(0.5) ? r.int(1, 3) : 0
      for (let c = 0; c < children; c++) visit([...address, c], depth + 1)
    }
    if (r.chance(0.3)) {
      logIndex += 1
      block.logs.push({
        transactionIndex: txIndex,
        logIndex,
        instructionAddress: address,
        programId,
        kind: 'other',
        message: `Program ${programId} success`,
      })
    }
  }
  const top = r.int(0, 4)
  for (let i = 0; i < top; i++) visit([i], 1)

  const balAccounts = [...new Set(r.subset(accountKeys, r.int(0, 3)))].sort()
  for (const account of balAccounts) {
    const b: Balance = { transactionIndex: txIndex, account, pre: r.bigU64(), post: r.bigU64() }
    block.balances.push(b)
  }
  const tokAccounts = [...new Set(r.subset(P.accounts, r.int(0, 3)))].sort()
  for (const account of tokAccounts) {
    const side = r.int(0, 2) // 0 both, 1 pre only, 2 post only
    const mint = r.pick(P.mints)
    const program = r.pick(P.tokenPrograms)
    const decimals = r.int(0, 9)
    const hasPre = side !== 2
    const hasPost = side !== 1
    const tb: TokenBalance = {
      transactionIndex: txIndex,
      account,
      preMint: hasPre ? mint : null,
      postMint: hasPost ? mint : null,
      preDecimals: hasPre ? decimals : null,
      postDecimals: hasPost ? decimals : null,
      preProgramId: hasPre && r.chance(0.9) ? program : null,
      postProgramId: hasPost && r.chance(0.9) ? program : null,
      preOwner: hasPre && r.chance(0.9) ? r.pick(P.owners) : null,
      postOwner: hasPost && r.chance(0.9) ? r.pick(P.owners) : null,
      preAmount: hasPre ? r.bigU64() : null,
      postAmount: hasPost ? r.bigU64() : null,
    }
    block.tokenBalances.push(tb)
  }
}
