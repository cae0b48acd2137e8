/**
 * RPC `getBlock` result → normalized records (docs/query.md §1), sorted as in docs/query.md §2.
 */
import type {
  Balance,
  Block,
  BlockHeader,
  Instruction,
  Log,
  NormalizationWarning,
  Reward,
  TokenBalance,
  Transaction,
  TransactionConfig,
} from '../model.ts'
import { decodeData, prefixByte, prefixHex, type Discriminators } from './data.ts'
import { isAddress, isBase58Text, isSignature } from '../util/base58.ts'
import { safeJson } from '../util/safe-json.ts'
import { walkTransaction, type WalkInput } from './logwalk.ts'
import type { ArchiveLine, RpcBlock, RpcInstruction, RpcReward, RpcTokenBalance, RpcTransaction } from '../rpc/types.ts'
import { errorMessage } from '../util/errors.ts'

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

const EMPTY: readonly never[] = []

/** Is this a vote transaction: exactly one instruction, whose program is the Vote program? */
export function isVoteTransaction(tx: RpcTransaction): boolean {
  const msg = tx?.transaction?.message
  if (msg == null || !Array.isArray(msg.instructions) || msg.instructions.length !== 1) return false
  const ins = msg.instructions[0]
  return ins != null && msg.accountKeys?.[ins.programIdIndex] === VOTE_PROGRAM
}

const DECIMAL = /^-?\d+$/

/**
 * An exact integer: an integral number, a decimal string (what parseJsonExact makes of a big
 * integer) or a bigint; throws otherwise. Stricter than BigInt(), which reads "", " " as 0 and
 * " 12 ", "0x10" as numbers.
 */
function u64(v: unknown): bigint {
  if (typeof v === 'bigint') return v
  if ((typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && DECIMAL.test(v))) return BigInt(v)
  throw new Error(`not an integer: ${safeJson(v)}`)
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
    const tn = new TxNormalizer(block, warnings, slot)
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

/** a non-negative safe integer (a slot, a height) */
function isSlotNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

/** An integer 0..255 (header counts, lookup-table indexes, decimals, commission). */
function isU8(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 255
}

/**
 * The format checks of the values that are rendered without JSON escaping (src/catalogue.ts type
 * `safeAscii`). A failed check throws: the transaction is skipped with a warning naming the value.
 */
function checkAddress(v: unknown, what: string): void {
  if (!isAddress(v)) throw new Error(`${what} is not a 32-byte base58 address: ${safeJson(v)}`)
}

function checkAddresses(list: readonly unknown[], what: string): void {
  for (let i = 0; i < list.length; i++) if (!isAddress(list[i])) checkAddress(list[i], `${what}[${i}]`)
}

/** instruction data must be base58 text (it is rendered as is) */
function checkData(list: readonly RpcInstruction[], what: string): void {
  for (let i = 0; i < list.length; i++) {
    const data = list[i]?.data
    if (typeof data === 'string' && !isBase58Text(data)) {
      throw new Error(`${what}[${i}].data is not base58: ${safeJson(data)}`)
    }
  }
}

function checkU8s(list: unknown, what: string): void {
  if (!Array.isArray(list)) throw new Error(`${what} is not a list: ${safeJson(list)}`)
  for (let i = 0; i < list.length; i++) {
    if (!isU8(list[i])) throw new Error(`${what}[${i}] is not an integer 0..255: ${safeJson(list[i])}`)
  }
}

const U32_MAX = 0xffffffff
const U64_MAX = (1n << 64n) - 1n

/**
 * `message.transactionConfig` of a version 1 transaction (null when the message has none: legacy
 * and v0 ones); throws for a member that is not null or an integer in its range (u32, priorityFee
 * u64): the values are rendered without escaping.
 */
function transactionConfigOf(c: unknown): TransactionConfig | null {
  if (c === undefined || c === null) return null
  if (typeof c !== 'object' || Array.isArray(c))
    throw new Error(`message.transactionConfig is not an object: ${safeJson(c)}`)
  const m = c as Record<string, unknown>
  const u32 = (k: string): number | null => {
    const v = m[k]
    if (v === undefined || v === null) return null
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > U32_MAX) {
      throw new Error(`message.transactionConfig.${k} is not an integer 0..2^32-1: ${safeJson(v)}`)
    }
    return v
  }
  const fee = m.priorityFee
  let priorityFee: string | null = null
  if (fee !== undefined && fee !== null) {
    let x: bigint | null = null
    try {
      x = u64(fee)
    } catch {
      // below
    }
    if (x === null || x < 0n || x > U64_MAX) {
      throw new Error(`message.transactionConfig.priorityFee is not a u64: ${safeJson(fee)}`)
    }
    priorityFee = x.toString()
  }
  return {
    computeUnitLimit: u32('computeUnitLimit'),
    heapSize: u32('heapSize'),
    loadedAccountsDataSizeLimit: u32('loadedAccountsDataSizeLimit'),
    priorityFee,
  }
}

function mapReward(r: RpcReward): Reward | null {
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

/** Per-transaction work, with state reused across the block's transactions. */
class TxNormalizer implements WalkInput {
  transactionIndex = 0
  instructions: readonly RpcInstruction[] = EMPTY
  inner: (RpcInstruction[] | undefined)[] = []
  logMessages: readonly string[] | null | undefined = null
  err: unknown = null
  hasInnerInstructions = false
  /** the distinct programs of the transaction's instructions (addresses: checked) */
  programIds: string[] = []

  private accounts: readonly string[] = EMPTY
  private isCommitted = true
  private signature: string | undefined
  private badAccountIndex = false
  private walkWarnings: string[] = []
  /**
   * d1..d8 and dataPrefix by instruction data, for this block: a block repeats much of its data
   * (compute-budget and other fixed instructions, the same call in many transactions; on the
   * mainnet block 44 % of the instructions kept repeat an earlier data string), and decoding
   * base58 costs ~20 times the lookup. Repeats also share the strings instead of allocating them.
   */
  private readonly prefixes = new Map<string, Discriminators>()

  constructor(
    private readonly block: Block,
    private readonly warnings: NormalizationWarning[],
    private readonly slot: number,
  ) {}

  private warn(message: string): void {
    const w: NormalizationWarning = { slot: this.slot, transactionIndex: this.transactionIndex, message }
    if (this.signature !== undefined) w.signature = this.signature
    this.warnings.push(w)
  }

  process(index: number, tx: RpcTransaction): void {
    const block = this.block
    this.transactionIndex = index
    this.signature = undefined
    const cp = {
      transactions: block.transactions.length,
      instructions: block.instructions.length,
      logs: block.logs.length,
      balances: block.balances.length,
      tokenBalances: block.tokenBalances.length,
    }
    try {
      this.processUnsafe(index, tx)
    } catch (e) {
      // an unexpected shape: drop whatever this transaction produced and carry on
      block.transactions.length = cp.transactions
      block.instructions.length = cp.instructions
      block.logs.length = cp.logs
      block.balances.length = cp.balances
      block.tokenBalances.length = cp.tokenBalances
      this.warn(`transaction skipped: ${errorMessage(e)}`)
    }
  }

  private processUnsafe(index: number, tx: RpcTransaction): void {
    const block = this.block
    const message = tx?.transaction?.message
    if (message == null || typeof message !== 'object') throw new Error('no transaction.message')
    const signatures = tx.transaction.signatures
    // a signature that is not one is left out of the warning's signature (the message quotes it)
    this.signature = Array.isArray(signatures) && isSignature(signatures[0]) ? signatures[0] : undefined
    const accountKeys = message.accountKeys
    if (!Array.isArray(accountKeys)) throw new Error('no message.accountKeys')
    const instructions = message.instructions
    if (!Array.isArray(instructions)) throw new Error('no message.instructions')
    if (Array.isArray(signatures)) {
      for (let i = 0; i < signatures.length; i++) {
        if (!isSignature(signatures[i])) {
          throw new Error(`signatures[${i}] is not a 64-byte base58 signature: ${safeJson(signatures[i])}`)
        }
      }
    }
    checkAddresses(accountKeys, 'message.accountKeys')
    if (!isAddress(message.recentBlockhash)) {
      throw new Error(`message.recentBlockhash is not a 32-byte base58 hash: ${safeJson(message.recentBlockhash)}`)
    }
    const txVersion = tx.version
    if (txVersion != null && txVersion !== 'legacy' && !isU8(txVersion)) {
      throw new Error(`version is neither "legacy" nor an integer 0..255: ${safeJson(txVersion)}`)
    }
    const hdr = message.header
    if (hdr != null) {
      for (const k of ['numRequiredSignatures', 'numReadonlySignedAccounts', 'numReadonlyUnsignedAccounts'] as const) {
        if (hdr[k] != null && !isU8(hdr[k]))
          throw new Error(`message.header.${k} is not an integer 0..255: ${safeJson(hdr[k])}`)
      }
    }
    const transactionConfig = transactionConfigOf(message.transactionConfig)
    const lookups = message.addressTableLookups
    if (Array.isArray(lookups)) {
      for (let i = 0; i < lookups.length; i++) {
        const l = lookups[i]
        checkAddress(l?.accountKey, `message.addressTableLookups[${i}].accountKey`)
        checkU8s(l.writableIndexes, `message.addressTableLookups[${i}].writableIndexes`)
        checkU8s(l.readonlyIndexes, `message.addressTableLookups[${i}].readonlyIndexes`)
      }
    }

    let meta = tx.meta
    if (meta == null) {
      this.warn('transaction has no meta: treated as successful, without logs or balances')
      meta = { err: null, fee: 0, preBalances: [], postBalances: [] }
    }
    const version: 'legacy' | number = txVersion === undefined || txVersion === null ? 'legacy' : txVersion

    const la = meta.loadedAddresses
    const writable: string[] = la != null && Array.isArray(la.writable) ? la.writable : []
    const readonly: string[] = la != null && Array.isArray(la.readonly) ? la.readonly : []
    checkAddresses(writable, 'meta.loadedAddresses.writable')
    checkAddresses(readonly, 'meta.loadedAddresses.readonly')
    this.accounts =
      version === 'legacy' || (writable.length === 0 && readonly.length === 0)
        ? accountKeys
        : accountKeys.concat(writable, readonly)
    if (version === 'legacy' && (writable.length > 0 || readonly.length > 0)) {
      this.warn('legacy transaction with loadedAddresses: ignored for account resolution')
    }

    const err = meta.err === undefined ? null : meta.err
    this.err = err
    this.isCommitted = err == null
    this.instructions = instructions
    this.logMessages = meta.logMessages
    this.badAccountIndex = false

    // inner instructions by top-level index
    const innerSrc = meta.innerInstructions
    const inner = this.inner
    inner.length = 0
    this.hasInnerInstructions = false
    if (Array.isArray(innerSrc) && innerSrc.length > 0) {
      this.hasInnerInstructions = true
      for (const pack of innerSrc) {
        const k = pack?.index
        const list = pack?.instructions
        if (typeof k !== 'number' || !Array.isArray(list)) {
          this.warn(`malformed innerInstructions entry ${safeJson(pack)} ignored`)
          continue
        }
        if (k < 0 || k >= instructions.length || !Number.isInteger(k)) {
          this.warn(`innerInstructions for top-level instruction ${k}, which does not exist, ignored`)
          continue
        }
        const prev = inner[k]
        inner[k] = prev === undefined ? list : prev.concat(list)
      }
      // holes must be undefined, not missing, for a predictable length
      if (inner.length < instructions.length) inner.length = instructions.length
    }

    const programIds = this.programIds
    programIds.length = 0
    this.addPrograms(instructions)
    for (let k = 0; k < inner.length; k++) {
      const list = inner[k]
      if (list !== undefined) this.addPrograms(list)
    }

    // instructions and logs; instruction data is checked where it is decoded (makeInstruction)
    const walkWarnings = this.walkWarnings
    walkWarnings.length = 0
    let walk
    try {
      walk = walkTransaction(this, { instructions: block.instructions, logs: block.logs, warnings: walkWarnings })
    } catch (e) {
      // the data checks come first, as if they had run before the walk: their message wins
      checkData(instructions, 'message.instructions')
      for (let k = 0; k < inner.length; k++) {
        const list = inner[k]
        if (list !== undefined) checkData(list, `meta.innerInstructions of instruction ${k}`)
      }
      throw e
    }
    for (const w of walkWarnings) this.warn(w)

    // transaction
    const atl = message.addressTableLookups
    const header = message.header ?? ({} as Partial<typeof message.header>)
    const record: Transaction = {
      transactionIndex: index,
      version,
      accountKeys,
      addressTableLookups: Array.isArray(atl)
        ? atl.map((l) => ({
            accountKey: l.accountKey,
            writableIndexes: l.writableIndexes,
            readonlyIndexes: l.readonlyIndexes,
          }))
        : [],
      numReadonlySignedAccounts: header.numReadonlySignedAccounts ?? 0,
      numReadonlyUnsignedAccounts: header.numReadonlyUnsignedAccounts ?? 0,
      numRequiredSignatures: header.numRequiredSignatures ?? 0,
      recentBlockhash: message.recentBlockhash,
      signatures: Array.isArray(signatures) ? signatures : [],
      err,
      fee: this.safeU64(meta.fee, 'meta.fee'),
      computeUnitsConsumed:
        meta.computeUnitsConsumed == null ? 0n : this.safeU64(meta.computeUnitsConsumed, 'meta.computeUnitsConsumed'),
      loadedAddresses: { writable, readonly },
      feePayer: accountKeys[0] ?? '',
      hasDroppedLogMessages: walk.hasDroppedLogMessages,
      transactionConfig,
    }
    block.transactions.push(record)

    // balances: only changed accounts, sorted by account
    const pre = meta.preBalances
    const post = meta.postBalances
    if (Array.isArray(pre) && Array.isArray(post)) {
      if (pre.length !== post.length) this.warn(`preBalances has ${pre.length} entries, postBalances ${post.length}`)
      const n = Math.min(pre.length, post.length)
      const start = block.balances.length
      for (let i = 0; i < n; i++) {
        const a = pre[i]
        const b = post[i]
        if (a === b) continue
        const x = this.safeU64(a, 'meta.preBalances', i)
        const y = this.safeU64(b, 'meta.postBalances', i)
        if (x === y) continue
        block.balances.push({ transactionIndex: index, account: this.account(i), pre: x, post: y })
      }
      sortTail(block.balances, start)
    }

    // token balances: merged by account, every account, sorted by account
    const preTb = meta.preTokenBalances
    const postTb = meta.postTokenBalances
    const hasPre = Array.isArray(preTb) && preTb.length > 0
    const hasPost = Array.isArray(postTb) && postTb.length > 0
    if (hasPre || hasPost) {
      const byAccount = new Map<string, TokenBalance>()
      const start = block.tokenBalances.length
      const merge = (list: RpcTokenBalance[], side: 'preTokenBalances' | 'postTokenBalances') => {
        for (const tb of list) {
          const amount = this.tokenAmount(tb, side)
          if (amount === null) continue
          const account = this.account(tb.accountIndex)
          let rec = byAccount.get(account)
          if (rec === undefined) {
            rec = emptyTokenBalance(index, account)
            byAccount.set(account, rec)
            block.tokenBalances.push(rec)
          }
          if (side === 'preTokenBalances') setPre(rec, tb, amount)
          else setPost(rec, tb, amount)
        }
      }
      if (hasPre) merge(preTb!, 'preTokenBalances')
      if (hasPost) merge(postTb!, 'postTokenBalances')
      sortTail(block.tokenBalances, start)
    }
    if (this.badAccountIndex) this.warn('account index out of range: resolved to ""')
  }

  /**
   * A u64 field (`what`, or `what[index]` when index is given); 0 with a warning when it is not an
   * integer. The name is only built for the warning.
   */
  private safeU64(v: unknown, what: string, index?: number): bigint {
    try {
      return u64(v)
    } catch {
      // not an integer
    }
    this.warn(`${index === undefined ? what : `${what}[${index}]`} is not an integer (${safeJson(v)}): 0 used`)
    return 0n
  }

  /**
   * The amount of a token balance entry usable for the merge (decoded once here); null, with a
   * warning, when the entry is not usable.
   */
  private tokenAmount(tb: RpcTokenBalance, list: string): bigint | null {
    let amount: bigint | null = null
    if (
      typeof tb?.accountIndex === 'number' &&
      typeof tb.mint === 'string' &&
      typeof tb.uiTokenAmount.decimals === 'number'
    ) {
      try {
        amount = u64(tb.uiTokenAmount.amount)
      } catch {
        // not an integer
      }
    }
    if (amount === null) {
      this.warn(`malformed ${list} entry ${safeJson(tb)} ignored`)
      return null
    }
    if (!isAddress(tb.mint)) checkAddress(tb.mint, `meta.${list}.mint`)
    if (tb.owner != null && !isAddress(tb.owner)) checkAddress(tb.owner, `meta.${list}.owner`)
    if (tb.programId != null && !isAddress(tb.programId)) {
      checkAddress(tb.programId, `meta.${list}.programId`)
    }
    if (!isU8(tb.uiTokenAmount.decimals)) {
      throw new Error(
        `meta.${list}.uiTokenAmount.decimals is not an integer 0..255: ${safeJson(tb.uiTokenAmount.decimals)}`,
      )
    }
    return amount
  }

  private account(i: number): string {
    const a = this.accounts[i]
    if (a === undefined) {
      this.badAccountIndex = true
      return ''
    }
    return a
  }

  /** adds the programs of `list` to `programIds` (the accounts are addresses: checked above) */
  private addPrograms(list: readonly RpcInstruction[]): void {
    const ids = this.programIds
    for (let i = 0; i < list.length; i++) {
      const a = this.accounts[list[i]?.programIdIndex]
      if (a !== undefined && !ids.includes(a)) ids.push(a)
    }
  }

  // --- WalkInput -------------------------------------------------------------------------------

  programIdOf(ins: RpcInstruction): string {
    return this.account(ins.programIdIndex)
  }

  makeInstruction(ins: RpcInstruction, instructionAddress: number[]): Instruction {
    const src = ins.accounts
    const n = Array.isArray(src) ? src.length : 0
    const accounts = new Array<string>(n)
    for (let k = 0; k < n; k++) accounts[k] = this.account(src[k])
    const data = typeof ins.data === 'string' ? ins.data : ''
    let p: Discriminators | undefined
    if (data.length <= CACHE_MIN_LENGTH) p = discriminators(data)
    else {
      p = this.prefixes.get(data)
      if (p === undefined) {
        p = discriminators(data)
        this.prefixes.set(data, p)
      }
    }
    return {
      transactionIndex: this.transactionIndex,
      instructionAddress,
      programId: this.account(ins.programIdIndex),
      accounts,
      data,
      d1: p.d1,
      d2: p.d2,
      d4: p.d4,
      d8: p.d8,
      dataPrefix: p.dataPrefix,
      error: null,
      computeUnitsConsumed: null,
      isCommitted: this.isCommitted,
      hasDroppedLogMessages: false,
    }
  }
}

const BAD_DATA = new Error('instruction data is not base58')

/** Shorter data decodes about as fast as it is looked up: not cached. */
const CACHE_MIN_LENGTH = 32

/** d1..d8 and dataPrefix of base58 data; throws BAD_DATA when it is not base58. */
function discriminators(data: string): Discriminators {
  const len = decodeData(data)
  if (len < 0) throw BAD_DATA // the caller names the instruction (checkData)
  const dataPrefix = prefixHex(len)
  return {
    d1: len >= 1 ? D1[prefixByte(0)] : null,
    d2: len >= 2 ? d2Of((prefixByte(0) << 8) | prefixByte(1)) : null,
    d4: len >= 4 ? dataPrefix.slice(0, 10) : null,
    d8: len >= 8 ? dataPrefix.slice(0, 18) : null,
    dataPrefix,
  }
}

/** d1 values: `0x` + one byte */
const D1: readonly string[] = Array.from({ length: 256 }, (_, b) => '0x' + b.toString(16).padStart(2, '0'))
/** d2 values met so far, by the two bytes (at most 65,536 short strings) */
const D2: (string | undefined)[] = new Array<string | undefined>(65536)

function d2Of(v: number): string {
  return (D2[v] ??= '0x' + v.toString(16).padStart(4, '0'))
}

/** Up to this many entries, `sortTail` sorts by insertion (no copy, no comparator calls). */
const INSERTION_MAX = 24

/** list[start..] sorted by account, stable (a transaction's balances: usually a few). */
function sortTail<T extends { account: string }>(list: T[], start: number): void {
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

function emptyTokenBalance(transactionIndex: number, account: string): TokenBalance {
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

function setPre(rec: TokenBalance, tb: RpcTokenBalance, amount: bigint): void {
  rec.preMint = tb.mint
  rec.preDecimals = tb.uiTokenAmount.decimals
  rec.preProgramId = tb.programId ?? null
  rec.preOwner = tb.owner ?? null
  rec.preAmount = amount
}

function setPost(rec: TokenBalance, tb: RpcTokenBalance, amount: bigint): void {
  rec.postMint = tb.mint
  rec.postDecimals = tb.uiTokenAmount.decimals
  rec.postProgramId = tb.programId ?? null
  rec.postOwner = tb.owner ?? null
  rec.postAmount = amount
}

/** Re-exported for callers that only need the record types. */
export type { Block, Instruction, Log, Balance, TokenBalance, Reward, Transaction, NormalizationWarning }
