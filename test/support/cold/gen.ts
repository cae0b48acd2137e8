/**
 * Seeded random normalized blocks for the cold store's tests and bench (no dependency on the
 * normalizer). Shapes follow src/model.ts and the orders of docs/query.md §2; values exercise every
 * column type: u64 above 2^53, i64 negatives and extremes, nulls in every nullable column, empty
 * lists, unicode (incl. astral and lone surrogates) messages, skipped slots, null heights.
 */
import type { Balance, Block, Instruction, Log, Reward, TokenBalance, Transaction } from '../../../src/model.ts'
import { base58Encode } from '../../../src/util/base58.ts'
import { mulberry32 } from '../../../src/util/prng.ts'
import { compareRewards } from '../../../src/normalize/normalize.ts'

/** seeded PRNG, floats in [0, 1) */
export const rng = mulberry32

export interface GenOptions {
  seed?: number
  count?: number
  startSlot?: number
  /** average transactions per block (default 12) */
  txPerBlock?: number
  /** distinct accounts in the pool (default 2,000) */
  accounts?: number
}

const PROGRAMS = [
  'ComputeBudget111111111111111111111111111111',
  '11111111111111111111111111111111',
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4',
  'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc',
  'CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK',
  '675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8',
  'LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo',
  'Vote111111111111111111111111111111111111111',
]

export function makeAddressPool(r: () => number, n: number): string[] {
  const out: string[] = []
  const bytes = new Uint8Array(32)
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 32; j++) bytes[j] = (r() * 256) | 0
    out.push(base58Encode(bytes))
  }
  return out
}

const HEX = (b: Uint8Array, n: number) => '0x' + Buffer.from(b.subarray(0, n)).toString('hex')

const MESSAGES = [
  'Instruction: Transfer',
  'Instruction: Swap',
  'Instruction: InitializeAccount3',
  'Please upgrade to SPL Token 2022 for immutable owner support',
  'héllo wörld ✓',
  '日本語のログ 🚀🚀',
  'emoji \u{1F600} and a lone surrogate \ud800 end',
  'line one\nline two',
  'quote " backslash \\ tab \t nul \u0000',
  '',
]

export function generateBlocks(opts: GenOptions = {}): Block[] {
  const r = rng(opts.seed ?? 1)
  const int = (n: number) => Math.floor(r() * n)
  const pool = makeAddressPool(r, opts.accounts ?? 2000)
  const pick = () => pool[Math.floor(pool.length * r() ** 3)] // skewed: a few hot accounts
  const program = () => PROGRAMS[Math.floor(PROGRAMS.length * r() ** 2)]
  const hash = () => {
    const b = new Uint8Array(32)
    for (let j = 0; j < 32; j++) b[j] = int(256)
    return base58Encode(b)
  }
  const u64 = (): bigint => {
    const x = r()
    if (x < 0.1) return (1n << 64n) - 1n - BigInt(int(1000))
    if (x < 0.3) return (1n << 53n) + BigInt(int(1e9)) // above 2^53: exactness
    if (x < 0.35) return 0n
    return BigInt(int(1e12))
  }
  const count = opts.count ?? 20
  const txAvg = opts.txPerBlock ?? 12
  let slot = opts.startSlot ?? 1000
  let parent = slot - 1
  let parentHash = hash()
  const blocks: Block[] = []
  for (let bi = 0; bi < count; bi++) {
    const number = slot
    const blockHash = hash()
    const transactions: Transaction[] = []
    const instructions: Instruction[] = []
    const logs: Log[] = []
    const balances: Balance[] = []
    const tokenBalances: TokenBalance[] = []
    const ntx = bi % 7 === 3 ? 0 : Math.max(0, Math.round(txAvg * (0.5 + r())))
    let txIndex = 0
    for (let t = 0; t < ntx; t++) {
      txIndex += 1 + (r() < 0.3 ? int(5) : 0) // gaps: vote transactions removed
      const v0 = r() < 0.4
      const nkeys = 1 + int(14)
      const keys = Array.from({ length: nkeys }, pick)
      const loaded = v0
        ? { writable: Array.from({ length: int(4) }, pick), readonly: Array.from({ length: int(3) }, pick) }
        : { writable: [], readonly: [] }
      const all = [...keys, ...loaded.writable, ...loaded.readonly]
      const failed = r() < 0.2
      const nsig = 1 + (r() < 0.1 ? 1 : 0)
      transactions.push({
        transactionIndex: txIndex,
        version: v0 ? 0 : 'legacy',
        accountKeys: keys,
        addressTableLookups: v0
          ? [{ accountKey: pick(), writableIndexes: [int(200), int(200)], readonlyIndexes: [int(200)] }]
          : [],
        numReadonlySignedAccounts: int(2),
        numReadonlyUnsignedAccounts: int(6),
        numRequiredSignatures: nsig,
        recentBlockhash: hash(),
        signatures: Array.from({ length: nsig }, () => hash() + hash().slice(0, 20)),
        err: failed ? (r() < 0.7 ? { InstructionError: [int(3), { Custom: int(7000) }] } : 'BlockhashNotFound') : null,
        fee: r() < 0.05 ? (1n << 60n) + BigInt(int(1000)) : 5000n + BigInt(int(100000)),
        computeUnitsConsumed: u64(),
        loadedAddresses: loaded,
        feePayer: keys[0],
        hasDroppedLogMessages: r() < 0.05,
        transactionConfig: null,
      })
      // instruction tree
      const ntop = int(5)
      let logIndex = 0
      for (let top = 0; top < ntop; top++) {
        const addrs: number[][] = [[top]]
        const ninner = r() < 0.5 ? int(6) : 0
        let cur = [top]
        for (let k = 0; k < ninner; k++) {
          const d = Math.min(cur.length + 1, 1 + int(4)) // depth 2..4, at most one deeper than cur
          const cut = cur.slice(0, d)
          let next: number[]
          if (cut.length === d) next = [...cut.slice(0, -1), cut[d - 1] + 1]
          else next = [...cut, 0]
          if (next.length < 2) next = [top, 0]
          addrs.push(next)
          cur = next
        }
        addrs.sort((a, b) => {
          for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i]
          return a.length - b.length
        })
        const seen = new Set<string>()
        for (const addr of addrs) {
          const key = addr.join('.')
          if (seen.has(key)) continue
          seen.add(key)
          const len = r() < 0.1 ? int(8) : int(120)
          const data = new Uint8Array(len)
          for (let j = 0; j < len; j++) data[j] = r() < 0.5 ? int(4) : int(256)
          const pid = program()
          const nacc = r() < 0.05 ? 17 + int(10) : int(10)
          instructions.push({
            transactionIndex: txIndex,
            instructionAddress: addr,
            programId: pid,
            accounts: Array.from({ length: nacc }, () => all[int(all.length)]),
            data: base58Encode(data),
            d1: len >= 1 ? HEX(data, 1) : null,
            d2: len >= 2 ? HEX(data, 2) : null,
            d4: len >= 4 ? HEX(data, 4) : null,
            d8: len >= 8 ? HEX(data, 8) : null,
            dataPrefix: HEX(data, Math.min(16, len)),
            error: failed && r() < 0.3 ? `custom program error: 0x${int(9999).toString(16)}` : null,
            computeUnitsConsumed: r() < 0.4 ? null : r() < 0.1 ? (1n << 63n) + 7n : BigInt(int(200000)),
            isCommitted: !failed,
            hasDroppedLogMessages: r() < 0.03,
          })
          const nl = int(4)
          for (let l = 0; l < nl; l++) {
            logIndex += 1 + int(3)
            const x = r()
            logs.push({
              transactionIndex: txIndex,
              logIndex,
              instructionAddress: addr,
              programId: pid,
              kind: x < 0.6 ? 'log' : x < 0.85 ? 'data' : 'other',
              message:
                x < 0.6
                  ? MESSAGES[int(MESSAGES.length)] + (r() < 0.5 ? ` ${int(1e6)}` : '')
                  : x < 0.85
                    ? Buffer.from(hash()).toString('base64')
                    : `Program return: ${pid} AQ==`,
            })
          }
        }
      }
      // balances: distinct accounts, sorted
      const bacc = [...new Set(Array.from({ length: int(5) }, () => all[int(all.length)]))].sort()
      for (const account of bacc) balances.push({ transactionIndex: txIndex, account, pre: u64(), post: u64() })
      const tacc = [...new Set(Array.from({ length: int(4) }, () => all[int(all.length)]))].sort()
      for (const account of tacc) {
        const side = int(3) // 0 both, 1 pre only, 2 post only
        const mint = pick()
        const owner = pick()
        const prog = r() < 0.8 ? PROGRAMS[2] : PROGRAMS[3]
        const pre = side !== 2
        const post = side !== 1
        tokenBalances.push({
          transactionIndex: txIndex,
          account,
          preMint: pre ? mint : null,
          postMint: post ? mint : null,
          preDecimals: pre ? int(10) : null,
          postDecimals: post ? int(10) : null,
          preProgramId: pre && r() < 0.9 ? prog : null,
          postProgramId: post && r() < 0.9 ? prog : null,
          preOwner: pre && r() < 0.9 ? owner : null,
          postOwner: post && r() < 0.9 ? owner : null,
          preAmount: pre ? u64() : null,
          postAmount: post ? u64() : null,
        })
      }
    }
    const rewards: Reward[] = []
    if (bi % 3 === 0) {
      const types = [null, 'Fee', 'Rent', 'Voting', 'Staking']
      const n = int(6)
      for (let k = 0; k < n; k++) {
        const x = r()
        rewards.push({
          pubkey: pick(),
          lamports:
            x < 0.1 ? -(1n << 63n) : x < 0.2 ? (1n << 63n) - 1n : x < 0.5 ? -BigInt(int(1e9)) : BigInt(int(1e12)),
          postBalance: u64(),
          rewardType: types[int(types.length)],
          commission: r() < 0.5 ? null : int(101),
        })
      }
      rewards.sort(compareRewards)
    }
    blocks.push({
      header: {
        number,
        hash: blockHash,
        parentNumber: parent,
        parentHash,
        height: bi % 11 === 5 ? null : number - 50,
        timestamp: 1_700_000_000 + number,
      },
      transactions,
      instructions,
      logs,
      balances,
      tokenBalances,
      rewards,
    })
    parent = number
    parentHash = blockHash
    slot += 1 + (r() < 0.1 ? 1 + int(3) : 0) // skipped slots
  }
  return blocks
}
