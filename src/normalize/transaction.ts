/**
 * One transaction of a `getBlock` result → its records (docs/query.md §1): checks, account
 * resolution, the instruction tree and logs (`logwalk.ts`), the transaction record, balances and
 * token balances. State is reused across a block's transactions.
 */
import type {
  Block,
  Instruction,
  NormalizationWarning,
  TokenBalance,
  Transaction,
  TransactionConfig,
} from '../model.ts'
import type {
  RpcInnerInstructions,
  RpcInstruction,
  RpcLoadedAddresses,
  RpcTokenBalance,
  RpcTransaction,
  RpcTransactionMeta,
} from '../rpc/types.ts'
import { isAddress, isSignature } from '../util/base58.ts'
import { errorMessage } from '../util/errors.ts'
import { safeJson } from '../util/safe-json.ts'
import { checkAddress, checkAddresses, checkData, checkU8s, isU8, transactionConfigOf, u64 } from './checks.ts'
import { CACHE_MIN_LENGTH, discriminators, type DecodedInstruction, type Discriminators } from './data.ts'
import { walkTransaction, type WalkInput } from './logwalk.ts'
import { emptyTokenBalance, setPost, setPre, sortTail } from './records.ts'

const EMPTY: readonly never[] = []

/** the lookup tables of a v0/v1 message: keys are addresses, indexes are integers 0..255 */
function checkLookups(lookups: unknown): void {
  if (!Array.isArray(lookups)) return
  for (let i = 0; i < lookups.length; i++) {
    const l = lookups[i]
    checkAddress(l?.accountKey, `message.addressTableLookups[${i}].accountKey`)
    checkU8s(l.writableIndexes, `message.addressTableLookups[${i}].writableIndexes`)
    checkU8s(l.readonlyIndexes, `message.addressTableLookups[${i}].readonlyIndexes`)
  }
}

/** Per-transaction work, with state reused across the block's transactions. */
export class TxNormalizer implements WalkInput {
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
    /** signatures, account keys and loaded addresses are known well-formed (`TransactionSource.keysRendered`) */
    private readonly keysRendered = false,
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
    const message = this.checkMessage(tx)
    const transactionConfig = transactionConfigOf(message.transactionConfig)
    checkLookups(message.addressTableLookups)

    let meta = tx.meta
    if (meta == null) {
      this.warn('transaction has no meta: treated as successful, without logs or balances')
      meta = { err: null, fee: 0, preBalances: [], postBalances: [] }
    }
    const txVersion = tx.version
    const version: 'legacy' | number = txVersion === undefined || txVersion === null ? 'legacy' : txVersion
    const loaded = this.resolveAccounts(version, message.accountKeys, meta.loadedAddresses)

    const err = meta.err === undefined ? null : meta.err
    this.err = err
    this.isCommitted = err == null
    this.instructions = message.instructions
    this.logMessages = meta.logMessages
    this.badAccountIndex = false
    this.collectInner(meta.innerInstructions)
    const hasDroppedLogMessages = this.walk()

    block.transactions.push(
      this.transactionRecord(index, tx, meta, version, loaded, hasDroppedLogMessages, transactionConfig),
    )
    this.pushBalances(index, meta)
    this.pushTokenBalances(index, meta)
    if (this.badAccountIndex) this.warn('account index out of range: resolved to ""')
  }

  /**
   * The message of `tx`, its signatures, account keys, recent blockhash, version and header
   * checked (throws naming the first bad value); sets the signature warnings name.
   */
  private checkMessage(tx: RpcTransaction): RpcTransaction['transaction']['message'] {
    const message = tx?.transaction?.message
    if (message == null || typeof message !== 'object') throw new Error('no transaction.message')
    const signatures = tx.transaction.signatures
    // a signature that is not one is left out of the warning's signature (the message quotes it)
    this.signature =
      Array.isArray(signatures) && (this.keysRendered ? signatures.length > 0 : isSignature(signatures[0]))
        ? signatures[0]
        : undefined
    const accountKeys = message.accountKeys
    if (!Array.isArray(accountKeys)) throw new Error('no message.accountKeys')
    if (!Array.isArray(message.instructions)) throw new Error('no message.instructions')
    // signatures and keys rendered from bytes of their sizes (keysRendered) would pass these checks
    if (!this.keysRendered) {
      if (Array.isArray(signatures)) {
        for (let i = 0; i < signatures.length; i++) {
          if (!isSignature(signatures[i])) {
            throw new Error(`signatures[${i}] is not a 64-byte base58 signature: ${safeJson(signatures[i])}`)
          }
        }
      }
      checkAddresses(accountKeys, 'message.accountKeys')
    }
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
    return message
  }

  /**
   * The transaction's accounts: its keys, then (v0 and later) the loaded addresses, checked;
   * returns the loaded addresses as the record shows them.
   */
  private resolveAccounts(
    version: 'legacy' | number,
    accountKeys: string[],
    la: RpcLoadedAddresses | null | undefined,
  ): { writable: string[]; readonly: string[] } {
    const writable: string[] = la != null && Array.isArray(la.writable) ? la.writable : []
    const readonly: string[] = la != null && Array.isArray(la.readonly) ? la.readonly : []
    if (!this.keysRendered) {
      checkAddresses(writable, 'meta.loadedAddresses.writable')
      checkAddresses(readonly, 'meta.loadedAddresses.readonly')
    }
    this.accounts =
      version === 'legacy' || (writable.length === 0 && readonly.length === 0)
        ? accountKeys
        : accountKeys.concat(writable, readonly)
    if (version === 'legacy' && (writable.length > 0 || readonly.length > 0)) {
      this.warn('legacy transaction with loadedAddresses: ignored for account resolution')
    }
    return { writable, readonly }
  }

  /** `inner`: the inner instructions by top-level index; `programIds`: every program called */
  private collectInner(innerSrc: RpcInnerInstructions[] | null | undefined): void {
    const instructions = this.instructions
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
  }

  /**
   * Instructions and logs into the block (instruction data is checked where it is decoded,
   * `makeInstruction`); returns whether log messages were dropped.
   */
  private walk(): boolean {
    const block = this.block
    const inner = this.inner
    const walkWarnings = this.walkWarnings
    walkWarnings.length = 0
    let walk
    try {
      walk = walkTransaction(this, { instructions: block.instructions, logs: block.logs, warnings: walkWarnings })
    } catch (e) {
      // the data checks come first, as if they had run before the walk: their message wins
      checkData(this.instructions, 'message.instructions')
      for (let k = 0; k < inner.length; k++) {
        const list = inner[k]
        if (list !== undefined) checkData(list, `meta.innerInstructions of instruction ${k}`)
      }
      throw e
    }
    for (const w of walkWarnings) this.warn(w)
    return walk.hasDroppedLogMessages
  }

  private transactionRecord(
    index: number,
    tx: RpcTransaction,
    meta: RpcTransactionMeta,
    version: 'legacy' | number,
    loadedAddresses: { writable: string[]; readonly: string[] },
    hasDroppedLogMessages: boolean,
    transactionConfig: TransactionConfig | null,
  ): Transaction {
    const message = tx.transaction.message
    const signatures = tx.transaction.signatures
    const accountKeys = message.accountKeys
    const atl = message.addressTableLookups
    const header = message.header ?? ({} as Partial<typeof message.header>)
    return {
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
      err: this.err,
      fee: this.safeU64(meta.fee, 'meta.fee'),
      computeUnitsConsumed:
        meta.computeUnitsConsumed == null ? 0n : this.safeU64(meta.computeUnitsConsumed, 'meta.computeUnitsConsumed'),
      loadedAddresses,
      feePayer: accountKeys[0] ?? '',
      hasDroppedLogMessages,
      transactionConfig,
    }
  }

  /** native balances: only changed accounts, sorted by account */
  private pushBalances(index: number, meta: RpcTransactionMeta): void {
    const block = this.block
    const pre = meta.preBalances
    const post = meta.postBalances
    if (!Array.isArray(pre) || !Array.isArray(post)) return
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

  /** token balances: merged by account, every account, sorted by account */
  private pushTokenBalances(index: number, meta: RpcTransactionMeta): void {
    const block = this.block
    const preTb = meta.preTokenBalances
    const postTb = meta.postTokenBalances
    const hasPre = Array.isArray(preTb) && preTb.length > 0
    const hasPost = Array.isArray(postTb) && postTb.length > 0
    if (!hasPre && !hasPost) return
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
    // given by a decoder that read the data's bytes (src/ingest/solana-storage); not looked for
    // on the JSON path's objects (a missing member's load is not free on their many shapes)
    let p = this.keysRendered ? (ins as DecodedInstruction).discriminators : undefined
    if (p === undefined) {
      if (data.length <= CACHE_MIN_LENGTH) p = discriminators(data)
      else {
        p = this.prefixes.get(data)
        if (p === undefined) {
          p = discriminators(data)
          this.prefixes.set(data, p)
        }
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
