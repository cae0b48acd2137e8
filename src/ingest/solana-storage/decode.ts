/**
 * solana-storage protobuf messages (`confirmed_block.proto`) → the `getBlock` JSON shapes of
 * src/rpc/types.ts (encoding "json", transactionDetails "full", rewards true,
 * maxSupportedTransactionVersion 1), field for field as the RPC renders them. Field numbers are in
 * `fields.ts`; the rendering rules are listed in this folder's README.md.
 */
import type {
  RpcBlock,
  RpcInnerInstructions,
  RpcInstruction,
  RpcMessage,
  RpcReward,
  RpcTokenBalance,
  RpcTransaction,
  RpcTransactionConfig,
  RpcTransactionMeta,
} from '../../rpc/types.ts'
import { base58Encode } from '../../util/base58.ts'
import { F } from './fields.ts'
import { transactionErrorToJson } from './tx-error.ts'
import { FIXED64, LEN, ProtoError, ProtoReader, VARINT, type U64Value } from './wire.ts'

/** `RewardType` enum values → the RPC's names (0 and unknown values: null, as agave maps them). */
export const REWARD_TYPES: readonly (string | null)[] = [null, 'Fee', 'Rent', 'Staking', 'Voting']

/** A `ConfirmedBlock` decoded: the getBlock JSON, plus the one value the JSON may lack. */
export interface DecodedBlock {
  block: RpcBlock
  /** `num_partitions` (also rendered as the block's `numRewardPartitions`); null when absent */
  numPartitions: U64Value | null
}

/** Decoding state: a reader and a cache of the base58 text of keys and instruction data (blocks repeat them a lot). */
export class StorageDecoder {
  readonly r: ProtoReader
  /** open-addressing table of base58 text by bytes: slot → start + 1 of the bytes in the buffer (0: empty), length, text */
  private cacheAt = new Int32Array(1024)
  private cacheLen = new Int32Array(1024)
  private cacheText: string[] = new Array<string>(1024)
  private cacheCount = 0

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.r = new ProtoReader(bytes, start, end)
  }

  private fail(what: string): never {
    throw new ProtoError(`protobuf: ${what} at byte ${this.r.pos}`)
  }

  /**
   * Points the decoder at the message in bytes[start, end) of its buffer, for the next call of a
   * message method: one decoder (one key cache) serves every message embedded in a larger one,
   * e.g. `d.range(a, b).transaction()` then `d.range(c, e).meta()` per transaction of a Geyser block.
   */
  range(start: number, end: number): this {
    if (start < 0 || end > this.r.buf.length || start > end)
      throw new ProtoError(`protobuf: bad range [${start}, ${end})`)
    this.r.pos = start
    this.r.end = end
    return this
  }

  /**
   * One getBlock transaction from a `Transaction` at bytes[txStart, txEnd) and a
   * `TransactionStatusMeta` at bytes[metaStart, metaEnd) (metaStart < 0: none) of the buffer, as
   * `ConfirmedTransaction` gives it.
   */
  transactionWithMeta(txStart: number, txEnd: number, metaStart = -1, metaEnd = -1): RpcTransaction {
    const { transaction, version } = this.range(txStart, txEnd).transaction()
    if (metaStart < 0) return { transaction, meta: null }
    return { transaction, meta: this.range(metaStart, metaEnd).meta(), version }
  }

  /** enters a length-delimited field: returns the enclosing end to pass to `leave` */
  private enter(tag: number, field: string): number {
    this.r.expect(tag, LEN, field)
    const e = this.r.lenEnd()
    const saved = this.r.end
    this.r.end = e
    return saved
  }

  private leave(saved: number): void {
    this.r.end = saved
  }

  /** reads the nested message of a length-delimited field with \`read\` (a method of this decoder) */
  private sub<T>(tag: number, field: string, read: (this: StorageDecoder) => T): T {
    const saved = this.enter(tag, field)
    const v = read.call(this)
    this.leave(saved)
    return v
  }

  private topInstruction(): RpcInstruction {
    return this.instruction(false)
  }

  private innerInstruction(): RpcInstruction {
    return this.instruction(true)
  }

  /**
   * base58 of a length-delimited bytes field; `size` > 0: the field must have that many bytes (keys
   * 32, signatures 64)
   */
  private base58Field(tag: number, field: string, size = 0): string {
    this.r.expect(tag, LEN, field)
    const r = this.r
    const e = r.lenEnd()
    const a = r.pos
    if (size > 0 && e - a !== size) this.fail(`${field}: ${e - a} bytes, expected ${size}`)
    r.pos = e
    // keys and much instruction data repeat within a block; signatures (64 bytes) never do
    if (e - a === 64 || e - a < 2) return base58Encode(r.buf, a, e)
    return this.cached(a, e)
  }

  /** the base58 text of buf[a..e), from the table when the same bytes were seen before */
  private cached(a: number, e: number): string {
    const i = this.slotOf(a, e)
    if (i >= 0) return this.cacheText[i]
    const text = base58Encode(this.r.buf, a, e)
    this.put(~i, a, e, text)
    return text
  }

  /** the table slot holding buf[a..e), or ~(the free slot where it belongs) */
  private slotOf(a: number, e: number): number {
    const buf = this.r.buf
    const len = e - a
    // hash: the length, up to 16 leading and 8 trailing bytes (keys are random; data may share a prefix)
    let h = 0x811c9dc5 ^ len
    const head = Math.min(e, a + 16)
    for (let p = a; p < head; p++) h = Math.imul(h ^ buf[p], 0x01000193)
    for (let p = Math.max(head, e - 8); p < e; p++) h = Math.imul(h ^ buf[p], 0x01000193)
    const mask = this.cacheAt.length - 1
    for (let i = (h ^ (h >>> 15)) & mask; ; i = (i + 1) & mask) {
      const at = this.cacheAt[i]
      if (at === 0) return ~i
      if (this.cacheLen[i] !== len) continue
      const b = at - 1
      let p = 0
      while (p < len && buf[b + p] === buf[a + p]) p++
      if (p === len) return i
    }
  }

  private put(i: number, a: number, e: number, text: string): void {
    this.cacheAt[i] = a + 1
    this.cacheLen[i] = e - a
    this.cacheText[i] = text
    if (++this.cacheCount * 2 <= this.cacheAt.length) return
    // grow: twice the slots, every entry placed again
    const at = this.cacheAt
    const lens = this.cacheLen
    const texts = this.cacheText
    this.cacheAt = new Int32Array(at.length * 2)
    this.cacheLen = new Int32Array(at.length * 2)
    this.cacheText = new Array<string>(at.length * 2)
    this.cacheCount = 0
    for (let j = 0; j < at.length; j++) {
      if (at[j] === 0) continue
      const start = at[j] - 1
      this.put(~this.slotOf(start, start + lens[j]), start, start + lens[j], texts[j])
    }
  }

  /** a 32-byte key field (account keys, loaded addresses, return data program) as base58 */
  private keyField(tag: number, field: string): string {
    return this.base58Field(tag, field, 32)
  }

  private bytesField(tag: number, field: string): Uint8Array {
    this.r.expect(tag, LEN, field)
    return this.r.bytes()
  }

  /** a bytes field as a list of numbers (instruction accounts, lookup indexes) */
  private u8List(tag: number, field: string): number[] {
    this.r.expect(tag, LEN, field)
    const r = this.r
    const e = r.lenEnd()
    const out: number[] = []
    for (let p = r.pos; p < e; p++) out.push(r.buf[p])
    r.pos = e
    return out
  }

  private stringField(tag: number, field: string): string {
    this.r.expect(tag, LEN, field)
    return this.r.string()
  }

  private u32Field(tag: number, field: string): number {
    this.r.expect(tag, VARINT, field)
    return this.r.uint32()
  }

  /** a uint32 that agave narrows to a u8 (`as u8`: the low 8 bits) before rendering */
  private u8Field(tag: number, field: string): number {
    return this.u32Field(tag, field) & 0xff
  }

  private u64Field(tag: number, field: string): U64Value {
    this.r.expect(tag, VARINT, field)
    return this.r.u64()
  }

  private boolField(tag: number, field: string): boolean {
    this.r.expect(tag, VARINT, field)
    return this.r.bool()
  }

  /** a message of one uint64/int64 field (UnixTimestamp, BlockHeight, NumPartitions) */
  private wrappedU64(tag: number, field: string, signed: boolean): U64Value {
    const saved = this.enter(tag, field)
    let v: U64Value = 0
    while (this.r.pos < this.r.end) {
      const t = this.r.tag()
      if (t >>> 3 === 1) {
        this.r.expect(t, VARINT, field)
        v = signed ? this.r.i64() : this.r.u64()
      } else this.r.skip(t & 7)
    }
    this.leave(saved)
    return v
  }

  /** `ConfirmedBlock` from the reader's position to its end */
  block(): DecodedBlock {
    const r = this.r
    let previousBlockhash = ''
    let blockhash = ''
    let parentSlot: U64Value = 0
    const transactions: RpcTransaction[] = []
    const rewards: RpcReward[] = []
    let blockTime: U64Value | null = null
    let blockHeight: U64Value | null = null
    let numPartitions: U64Value | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.block.previousBlockhash:
          previousBlockhash = this.stringField(t, 'previous_blockhash')
          break
        case F.block.blockhash:
          blockhash = this.stringField(t, 'blockhash')
          break
        case F.block.parentSlot:
          parentSlot = this.u64Field(t, 'parent_slot')
          break
        case F.block.transactions:
          transactions.push(this.sub(t, 'transactions', this.confirmedTransaction))
          break
        case F.block.rewards:
          rewards.push(this.sub(t, 'rewards', this.reward))
          break
        case F.block.blockTime:
          blockTime = this.wrappedU64(t, 'block_time', true)
          break
        case F.block.blockHeight:
          blockHeight = this.wrappedU64(t, 'block_height', false)
          break
        case F.block.numPartitions:
          numPartitions = this.wrappedU64(t, 'num_partitions', false)
          break
        default:
          r.skip(t & 7)
      }
    }
    if (typeof parentSlot !== 'number') this.fail(`parent_slot ${parentSlot} is not a safe integer`)
    if (blockHeight !== null && typeof blockHeight !== 'number') this.fail(`block_height ${blockHeight} too large`)
    if (blockTime !== null && typeof blockTime !== 'number') this.fail(`block_time ${blockTime} too large`)
    const block: RpcBlock = { previousBlockhash, blockhash, parentSlot, transactions, rewards }
    if (numPartitions !== null) block.numRewardPartitions = numPartitions
    block.blockTime = blockTime
    block.blockHeight = blockHeight
    return { block, numPartitions }
  }

  /** `ConfirmedTransaction` (transaction + optional meta) */
  confirmedTransaction(): RpcTransaction {
    const r = this.r
    let tx: { transaction: RpcTransaction['transaction']; version: 'legacy' | number } | null = null
    let meta: RpcTransactionMeta | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.confirmedTransaction.transaction:
          tx = this.sub(t, 'transaction', this.transaction)
          break
        case F.confirmedTransaction.meta:
          meta = this.sub(t, 'meta', this.meta)
          break
        default:
          r.skip(t & 7)
      }
    }
    if (tx === null) this.fail('ConfirmedTransaction without a transaction')
    // without metadata agave renders no version (it serves such a transaction as a legacy one)
    if (meta === null) return { transaction: tx.transaction, meta }
    return { transaction: tx.transaction, meta, version: tx.version }
  }

  /** `Transaction`: signatures and message; the version is read from the message */
  transaction(): { transaction: RpcTransaction['transaction']; version: 'legacy' | number } {
    const r = this.r
    const signatures: string[] = []
    let message: RpcMessage | null = null
    let version: 'legacy' | number = 'legacy'
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.transaction.signatures:
          signatures.push(this.base58Field(t, 'signatures', 64))
          break
        case F.transaction.message: {
          const saved = this.enter(t, 'message')
          const m = this.message()
          message = m.message
          version = m.version
          this.leave(saved)
          break
        }
        default:
          r.skip(t & 7)
      }
    }
    if (message === null) this.fail('Transaction without a message')
    return { transaction: { signatures, message }, version }
  }

  /** `Message`: legacy when not `versioned`; versioned with a `config`: 1; else 0 */
  message(): { message: RpcMessage; version: 'legacy' | number } {
    const r = this.r
    let header = { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 }
    const accountKeys: string[] = []
    let recentBlockhash = ''
    const instructions: RpcInstruction[] = []
    let versioned = false
    const lookups: NonNullable<RpcMessage['addressTableLookups']> = []
    let config: RpcTransactionConfig | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.message.header:
          header = this.sub(t, 'header', this.header)
          break
        case F.message.accountKeys:
          accountKeys.push(this.keyField(t, 'account_keys'))
          break
        case F.message.recentBlockhash:
          recentBlockhash = this.keyField(t, 'recent_blockhash')
          break
        case F.message.instructions:
          instructions.push(this.sub(t, 'instructions', this.topInstruction))
          break
        case F.message.versioned:
          versioned = this.boolField(t, 'versioned')
          break
        case F.message.addressTableLookups:
          lookups.push(this.sub(t, 'address_table_lookups', this.lookup))
          break
        case F.message.config:
          config = this.sub(t, 'config', this.config)
          break
        default:
          r.skip(t & 7)
      }
    }
    const message: RpcMessage = { header, accountKeys, recentBlockhash, instructions }
    if (!versioned) return { message, version: 'legacy' }
    if (config !== null) {
      message.transactionConfig = config
      return { message, version: 1 }
    }
    message.addressTableLookups = lookups
    return { message, version: 0 }
  }

  private header(): RpcMessage['header'] {
    const r = this.r
    const h = { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 }
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.header.numRequiredSignatures:
          h.numRequiredSignatures = this.u8Field(t, 'num_required_signatures')
          break
        case F.header.numReadonlySignedAccounts:
          h.numReadonlySignedAccounts = this.u8Field(t, 'num_readonly_signed_accounts')
          break
        case F.header.numReadonlyUnsignedAccounts:
          h.numReadonlyUnsignedAccounts = this.u8Field(t, 'num_readonly_unsigned_accounts')
          break
        default:
          r.skip(t & 7)
      }
    }
    return h
  }

  private config(): RpcTransactionConfig {
    const r = this.r
    const c: RpcTransactionConfig = {
      priorityFee: null,
      computeUnitLimit: null,
      loadedAccountsDataSizeLimit: null,
      heapSize: null,
    }
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.config.priorityFee:
          c.priorityFee = this.u64Field(t, 'priority_fee')
          break
        case F.config.computeUnitLimit:
          c.computeUnitLimit = this.u32Field(t, 'compute_unit_limit')
          break
        case F.config.loadedAccountsDataSizeLimit:
          c.loadedAccountsDataSizeLimit = this.u32Field(t, 'loaded_accounts_data_size_limit')
          break
        case F.config.heapSize:
          c.heapSize = this.u32Field(t, 'heap_size')
          break
        default:
          r.skip(t & 7)
      }
    }
    return c
  }

  /** `CompiledInstruction` (top level: stackHeight null) or `InnerInstruction` (stack_height when present) */
  private instruction(inner: boolean): RpcInstruction {
    const r = this.r
    let programIdIndex = 0
    let accounts: number[] = []
    let data = ''
    let stackHeight: number | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.instruction.programIdIndex:
          programIdIndex = this.u8Field(t, 'program_id_index')
          break
        case F.instruction.accounts:
          accounts = this.u8List(t, 'accounts')
          break
        case F.instruction.data:
          data = this.base58Field(t, 'data')
          break
        case F.instruction.stackHeight:
          if (!inner) r.skip(t & 7)
          else stackHeight = this.u32Field(t, 'stack_height')
          break
        default:
          r.skip(t & 7)
      }
    }
    return { programIdIndex, accounts, data, stackHeight }
  }

  private lookup(): NonNullable<RpcMessage['addressTableLookups']>[number] {
    const r = this.r
    let accountKey = ''
    let writableIndexes: number[] = []
    let readonlyIndexes: number[] = []
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.lookup.accountKey:
          accountKey = this.keyField(t, 'account_key')
          break
        case F.lookup.writableIndexes:
          writableIndexes = this.u8List(t, 'writable_indexes')
          break
        case F.lookup.readonlyIndexes:
          readonlyIndexes = this.u8List(t, 'readonly_indexes')
          break
        default:
          r.skip(t & 7)
      }
    }
    return { accountKey, writableIndexes, readonlyIndexes }
  }

  /** `TransactionStatusMeta` → getBlock's `meta` */
  meta(): RpcTransactionMeta {
    const r = this.r
    let err: unknown = null
    let fee: U64Value = 0
    const preBalances: U64Value[] = []
    const postBalances: U64Value[] = []
    const innerInstructions: RpcInnerInstructions[] = []
    let innerNone = false
    const logMessages: string[] = []
    let logsNone = false
    const preTokenBalances: RpcTokenBalance[] = []
    const postTokenBalances: RpcTokenBalance[] = []
    const rewards: RpcReward[] = []
    const writable: string[] = []
    const readonly: string[] = []
    let returnData: RpcTransactionMeta['returnData'] = null
    let returnDataNone = false
    let computeUnitsConsumed: U64Value | null = null
    let costUnits: U64Value | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.meta.err: {
          const saved = this.enter(t, 'err')
          let bytes: Uint8Array = new Uint8Array(0)
          while (r.pos < r.end) {
            const t2 = r.tag()
            if (t2 >>> 3 === 1) bytes = this.bytesField(t2, 'err.err')
            else r.skip(t2 & 7)
          }
          this.leave(saved)
          err = transactionErrorToJson(bytes)
          break
        }
        case F.meta.fee:
          fee = this.u64Field(t, 'fee')
          break
        case F.meta.preBalances:
          r.packedU64(t & 7, preBalances)
          break
        case F.meta.postBalances:
          r.packedU64(t & 7, postBalances)
          break
        case F.meta.innerInstructions:
          innerInstructions.push(this.sub(t, 'inner_instructions', this.innerInstructions))
          break
        case F.meta.innerInstructionsNone:
          innerNone = this.boolField(t, 'inner_instructions_none')
          break
        case F.meta.logMessages:
          logMessages.push(this.stringField(t, 'log_messages'))
          break
        case F.meta.logMessagesNone:
          logsNone = this.boolField(t, 'log_messages_none')
          break
        case F.meta.preTokenBalances:
          preTokenBalances.push(this.sub(t, 'pre_token_balances', this.tokenBalance))
          break
        case F.meta.postTokenBalances:
          postTokenBalances.push(this.sub(t, 'post_token_balances', this.tokenBalance))
          break
        case F.meta.rewards:
          rewards.push(this.sub(t, 'rewards', this.reward))
          break
        case F.meta.loadedWritableAddresses:
          writable.push(this.keyField(t, 'loaded_writable_addresses'))
          break
        case F.meta.loadedReadonlyAddresses:
          readonly.push(this.keyField(t, 'loaded_readonly_addresses'))
          break
        case F.meta.returnData:
          returnData = this.sub(t, 'return_data', this.returnData)
          break
        case F.meta.returnDataNone:
          returnDataNone = this.boolField(t, 'return_data_none')
          break
        case F.meta.computeUnitsConsumed:
          computeUnitsConsumed = this.u64Field(t, 'compute_units_consumed')
          break
        case F.meta.costUnits:
          costUnits = this.u64Field(t, 'cost_units')
          break
        default:
          r.skip(t & 7)
      }
    }
    const meta: RpcTransactionMeta = {
      err,
      status: err === null ? { Ok: null } : { Err: err },
      fee,
      preBalances,
      postBalances,
      innerInstructions: innerNone ? null : innerInstructions,
      logMessages: logsNone ? null : logMessages,
      preTokenBalances,
      postTokenBalances,
      rewards,
      loadedAddresses: { writable, readonly },
    }
    if (!returnDataNone && returnData !== null) meta.returnData = returnData
    if (computeUnitsConsumed !== null) meta.computeUnitsConsumed = computeUnitsConsumed
    if (costUnits !== null) meta.costUnits = costUnits
    return meta
  }

  private innerInstructions(): RpcInnerInstructions {
    const r = this.r
    let index = 0
    const instructions: RpcInstruction[] = []
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.innerInstructions.index:
          index = this.u8Field(t, 'index')
          break
        case F.innerInstructions.instructions:
          instructions.push(this.sub(t, 'instructions', this.innerInstruction))
          break
        default:
          r.skip(t & 7)
      }
    }
    return { index, instructions }
  }

  private tokenBalance(): RpcTokenBalance {
    const r = this.r
    let accountIndex = 0
    let mint = ''
    let uiAmount = 0
    let decimals = 0
    let amount = ''
    let uiAmountString = ''
    let owner = ''
    let programId = ''
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.tokenBalance.accountIndex:
          accountIndex = this.u8Field(t, 'account_index')
          break
        case F.tokenBalance.mint:
          mint = this.stringField(t, 'mint')
          break
        case F.tokenBalance.uiTokenAmount: {
          const saved = this.enter(t, 'ui_token_amount')
          while (r.pos < r.end) {
            const t2 = r.tag()
            switch (t2 >>> 3) {
              case F.uiTokenAmount.uiAmount:
                r.expect(t2, FIXED64, 'ui_amount')
                uiAmount = r.double()
                break
              case F.uiTokenAmount.decimals:
                decimals = this.u8Field(t2, 'decimals')
                break
              case F.uiTokenAmount.amount:
                amount = this.stringField(t2, 'amount')
                break
              case F.uiTokenAmount.uiAmountString:
                uiAmountString = this.stringField(t2, 'ui_amount_string')
                break
              default:
                r.skip(t2 & 7)
            }
          }
          this.leave(saved)
          break
        }
        case F.tokenBalance.owner:
          owner = this.stringField(t, 'owner')
          break
        case F.tokenBalance.programId:
          programId = this.stringField(t, 'program_id')
          break
        default:
          r.skip(t & 7)
      }
    }
    const tb: RpcTokenBalance = {
      accountIndex,
      mint,
      uiTokenAmount: {
        uiAmount: Math.abs(uiAmount) > Number.EPSILON ? uiAmount : null,
        decimals,
        amount,
        uiAmountString: uiAmountString !== '' ? uiAmountString : realNumberStringTrimmed(amount, decimals),
      },
    }
    if (owner !== '') tb.owner = owner
    if (programId !== '') tb.programId = programId
    return tb
  }

  /** `Reward` */
  reward(): RpcReward {
    const r = this.r
    let pubkey = ''
    let lamports: U64Value = 0
    let postBalance: U64Value = 0
    let rewardType = 0
    let commission = ''
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.reward.pubkey:
          pubkey = this.stringField(t, 'pubkey')
          break
        case F.reward.lamports:
          r.expect(t, VARINT, 'lamports')
          lamports = r.i64()
          break
        case F.reward.postBalance:
          postBalance = this.u64Field(t, 'post_balance')
          break
        case F.reward.rewardType:
          rewardType = this.u32Field(t, 'reward_type')
          break
        case F.reward.commission:
          commission = this.stringField(t, 'commission')
          break
        default:
          r.skip(t & 7)
      }
    }
    return {
      pubkey,
      lamports,
      postBalance,
      rewardType: REWARD_TYPES[rewardType] ?? null,
      commission: parseU8(commission),
    }
  }

  private returnData(): NonNullable<RpcTransactionMeta['returnData']> {
    const r = this.r
    let programId = ''
    let data: Uint8Array = new Uint8Array(0)
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.returnData.programId:
          programId = this.keyField(t, 'program_id')
          break
        case F.returnData.data:
          data = this.bytesField(t, 'data')
          break
        default:
          r.skip(t & 7)
      }
    }
    if (programId === '') programId = base58Encode(new Uint8Array(32))
    return { programId, data: [Buffer.from(data.buffer, data.byteOffset, data.length).toString('base64'), 'base64'] }
  }

  /** `Rewards` (a block's rewards as Old Faithful stores them): the rewards and num_partitions */
  rewards(): { rewards: RpcReward[]; numPartitions: U64Value | null } {
    const r = this.r
    const rewards: RpcReward[] = []
    let numPartitions: U64Value | null = null
    while (r.pos < r.end) {
      const t = r.tag()
      switch (t >>> 3) {
        case F.rewards.rewards:
          rewards.push(this.sub(t, 'rewards', this.reward))
          break
        case F.rewards.numPartitions:
          numPartitions = this.wrappedU64(t, 'num_partitions', false)
          break
        default:
          r.skip(t & 7)
      }
    }
    return { rewards, numPartitions }
  }
}

/** Rust's `str::parse::<u8>()`: a decimal 0..255 (a leading `+` allowed), else null */
function parseU8(s: string): number | null {
  if (!/^\+?\d{1,3}$/.test(s)) return null
  const v = Number(s.startsWith('+') ? s.slice(1) : s)
  return v <= 255 ? v : null
}

/**
 * agave's `real_number_string_trimmed(amount, decimals)`: the amount with the decimal point put in,
 * trailing zeros (and a trailing point) removed. An amount that is not a u64 counts as 0.
 */
export function realNumberStringTrimmed(amount: string, decimals: number): string {
  let digits = /^\d+$/.test(amount) && BigInt(amount) < 1n << 64n ? BigInt(amount).toString() : '0'
  if (decimals === 0) return digits
  if (digits.length <= decimals) digits = '0'.repeat(decimals + 1 - digits.length) + digits
  const s = digits.slice(0, digits.length - decimals) + '.' + digits.slice(digits.length - decimals)
  return s.replace(/0+$/, '').replace(/\.$/, '')
}

function whole<T>(bytes: Uint8Array, what: string, fn: (d: StorageDecoder) => T): T {
  const d = new StorageDecoder(bytes)
  try {
    return fn(d)
  } catch (e) {
    if (e instanceof Error && !e.message.includes(what)) e.message = `${what}: ${e.message}`
    throw e
  }
}

/** A protobuf `ConfirmedBlock` → getBlock JSON (and num_partitions). */
export function decodeConfirmedBlockFull(bytes: Uint8Array): DecodedBlock {
  return whole(bytes, 'ConfirmedBlock', (d) => d.block())
}

/** A protobuf `ConfirmedBlock` → the getBlock JSON result. */
export function decodeConfirmedBlock(bytes: Uint8Array): RpcBlock {
  return decodeConfirmedBlockFull(bytes).block
}

/** A protobuf `ConfirmedTransaction` → one entry of getBlock's `transactions`. */
export function decodeConfirmedTransaction(bytes: Uint8Array): RpcTransaction {
  return whole(bytes, 'ConfirmedTransaction', (d) => d.confirmedTransaction())
}

/** A protobuf `Transaction` → getBlock's `transaction` and the `version` read from its message. */
export function decodeTransaction(bytes: Uint8Array): {
  transaction: RpcTransaction['transaction']
  version: 'legacy' | number
} {
  return whole(bytes, 'Transaction', (d) => d.transaction())
}

/** A protobuf `TransactionStatusMeta` → getBlock's `meta`. */
export function decodeTransactionStatusMeta(bytes: Uint8Array): RpcTransactionMeta {
  return whole(bytes, 'TransactionStatusMeta', (d) => d.meta())
}

/** A protobuf `Rewards` → the rewards (getBlock's block `rewards`) and num_partitions. */
export function decodeRewards(bytes: Uint8Array): { rewards: RpcReward[]; numPartitions: U64Value | null } {
  return whole(bytes, 'Rewards', (d) => d.rewards())
}
