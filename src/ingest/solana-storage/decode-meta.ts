/**
 * solana-storage `TransactionStatusMeta` → getBlock's `meta`, and the `Reward` / `Rewards` messages
 * (transaction and block rewards), as the RPC renders them (this folder's README.md lists the
 * rules): `err` from its bincode bytes, the `*_none` flags as null lists, token balances with
 * `uiAmount` null for 0 and `uiAmountString` recomputed when empty, rewards with their type names.
 */
import type {
  RpcInnerInstructions,
  RpcInstruction,
  RpcReward,
  RpcTokenBalance,
  RpcTransactionMeta,
} from '../../rpc/types.ts'
import { base58Encode } from '../../util/base58.ts'
import { readInnerInstruction } from './decode-transaction.ts'
import type { FieldReader } from './field-reader.ts'
import { F } from './fields.ts'
import { transactionErrorToJson } from './tx-error.ts'
import { FIXED64, VARINT, type U64Value } from './wire.ts'

/** `RewardType` enum values → the RPC's names (0 and unknown values: null, as agave maps them). */
export const REWARD_TYPES: readonly (string | null)[] = [null, 'Fee', 'Rent', 'Staking', 'Voting']

/** the fields of a `TransactionStatusMeta` as read, before they are rendered (`renderMeta`) */
class MetaFields {
  err: unknown = null
  fee: U64Value = 0
  readonly preBalances: U64Value[] = []
  readonly postBalances: U64Value[] = []
  readonly innerInstructions: RpcInnerInstructions[] = []
  innerNone = false
  readonly logMessages: string[] = []
  logsNone = false
  readonly preTokenBalances: RpcTokenBalance[] = []
  readonly postTokenBalances: RpcTokenBalance[] = []
  readonly rewards: RpcReward[] = []
  readonly writable: string[] = []
  readonly readonly: string[] = []
  returnData: RpcTransactionMeta['returnData'] = null
  returnDataNone = false
  computeUnitsConsumed: U64Value | null = null
  costUnits: U64Value | null = null
}

/** `TransactionStatusMeta` → getBlock's `meta` */
export function readMeta(d: FieldReader): RpcTransactionMeta {
  const r = d.r
  const m = new MetaFields()
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.meta.err:
        m.err = readErr(d, t)
        break
      case F.meta.fee:
        m.fee = d.u64Field(t, 'fee')
        break
      case F.meta.preBalances:
        r.packedU64(t & 7, m.preBalances)
        break
      case F.meta.postBalances:
        r.packedU64(t & 7, m.postBalances)
        break
      case F.meta.innerInstructions:
        m.innerInstructions.push(d.sub(t, 'inner_instructions', readInnerInstructions))
        break
      case F.meta.innerInstructionsNone:
        m.innerNone = d.boolField(t, 'inner_instructions_none')
        break
      case F.meta.logMessages:
        m.logMessages.push(d.stringField(t, 'log_messages'))
        break
      case F.meta.logMessagesNone:
        m.logsNone = d.boolField(t, 'log_messages_none')
        break
      case F.meta.preTokenBalances:
        m.preTokenBalances.push(d.sub(t, 'pre_token_balances', readTokenBalance))
        break
      case F.meta.postTokenBalances:
        m.postTokenBalances.push(d.sub(t, 'post_token_balances', readTokenBalance))
        break
      case F.meta.rewards:
        m.rewards.push(d.sub(t, 'rewards', readReward))
        break
      case F.meta.loadedWritableAddresses:
        m.writable.push(d.keyField(t, 'loaded_writable_addresses'))
        break
      case F.meta.loadedReadonlyAddresses:
        m.readonly.push(d.keyField(t, 'loaded_readonly_addresses'))
        break
      case F.meta.returnData:
        m.returnData = d.sub(t, 'return_data', readReturnData)
        break
      case F.meta.returnDataNone:
        m.returnDataNone = d.boolField(t, 'return_data_none')
        break
      case F.meta.computeUnitsConsumed:
        m.computeUnitsConsumed = d.u64Field(t, 'compute_units_consumed')
        break
      case F.meta.costUnits:
        m.costUnits = d.u64Field(t, 'cost_units')
        break
      default:
        r.skip(t & 7)
    }
  }
  return renderMeta(m)
}

/** the `err` field: a `TransactionError` message whose field 1 holds the bincode error */
function readErr(d: FieldReader, tag: number): unknown {
  const r = d.r
  const saved = d.enter(tag, 'err')
  let bytes: Uint8Array = new Uint8Array(0)
  while (r.pos < r.end) {
    const t2 = r.tag()
    if (t2 >>> 3 === 1) bytes = d.bytesField(t2, 'err.err')
    else r.skip(t2 & 7)
  }
  d.leave(saved)
  return transactionErrorToJson(bytes)
}

function renderMeta(m: MetaFields): RpcTransactionMeta {
  const err = m.err
  const meta: RpcTransactionMeta = {
    err,
    status: err === null ? { Ok: null } : { Err: err },
    fee: m.fee,
    preBalances: m.preBalances,
    postBalances: m.postBalances,
    innerInstructions: m.innerNone ? null : m.innerInstructions,
    logMessages: m.logsNone ? null : m.logMessages,
    preTokenBalances: m.preTokenBalances,
    postTokenBalances: m.postTokenBalances,
    rewards: m.rewards,
    loadedAddresses: { writable: m.writable, readonly: m.readonly },
  }
  if (!m.returnDataNone && m.returnData !== null) meta.returnData = m.returnData
  if (m.computeUnitsConsumed !== null) meta.computeUnitsConsumed = m.computeUnitsConsumed
  if (m.costUnits !== null) meta.costUnits = m.costUnits
  return meta
}

function readInnerInstructions(d: FieldReader): RpcInnerInstructions {
  const r = d.r
  let index = 0
  const instructions: RpcInstruction[] = []
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.innerInstructions.index:
        index = d.u8Field(t, 'index')
        break
      case F.innerInstructions.instructions:
        instructions.push(d.sub(t, 'instructions', readInnerInstruction))
        break
      default:
        r.skip(t & 7)
    }
  }
  return { index, instructions }
}

function readTokenBalance(d: FieldReader): RpcTokenBalance {
  const r = d.r
  let accountIndex = 0
  let mint = ''
  // fields of a repeated ui_token_amount merge, as protobuf merges a repeated message field
  const amount: UiAmount = { uiAmount: 0, decimals: 0, amount: '', uiAmountString: '' }
  let owner = ''
  let programId = ''
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.tokenBalance.accountIndex:
        accountIndex = d.u8Field(t, 'account_index')
        break
      case F.tokenBalance.mint:
        mint = d.stringField(t, 'mint')
        break
      case F.tokenBalance.uiTokenAmount: {
        const saved = d.enter(t, 'ui_token_amount')
        readUiTokenAmount(d, amount)
        d.leave(saved)
        break
      }
      case F.tokenBalance.owner:
        owner = d.stringField(t, 'owner')
        break
      case F.tokenBalance.programId:
        programId = d.stringField(t, 'program_id')
        break
      default:
        r.skip(t & 7)
    }
  }
  const { uiAmount, decimals } = amount
  const tb: RpcTokenBalance = {
    accountIndex,
    mint,
    uiTokenAmount: {
      uiAmount: Math.abs(uiAmount) > Number.EPSILON ? uiAmount : null,
      decimals,
      amount: amount.amount,
      uiAmountString:
        amount.uiAmountString !== '' ? amount.uiAmountString : realNumberStringTrimmed(amount.amount, decimals),
    },
  }
  if (owner !== '') tb.owner = owner
  if (programId !== '') tb.programId = programId
  return tb
}

/** a `UiTokenAmount` as stored */
interface UiAmount {
  uiAmount: number
  decimals: number
  amount: string
  uiAmountString: string
}

/** a `UiTokenAmount`'s fields into `a` */
function readUiTokenAmount(d: FieldReader, a: UiAmount): void {
  const r = d.r
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.uiTokenAmount.uiAmount:
        r.expect(t, FIXED64, 'ui_amount')
        a.uiAmount = r.double()
        break
      case F.uiTokenAmount.decimals:
        a.decimals = d.u8Field(t, 'decimals')
        break
      case F.uiTokenAmount.amount:
        a.amount = d.stringField(t, 'amount')
        break
      case F.uiTokenAmount.uiAmountString:
        a.uiAmountString = d.stringField(t, 'ui_amount_string')
        break
      default:
        r.skip(t & 7)
    }
  }
}

/** `Reward` */
export function readReward(d: FieldReader): RpcReward {
  const r = d.r
  let pubkey = ''
  let lamports: U64Value = 0
  let postBalance: U64Value = 0
  let rewardType = 0
  let commission = ''
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.reward.pubkey:
        pubkey = d.stringField(t, 'pubkey')
        break
      case F.reward.lamports:
        r.expect(t, VARINT, 'lamports')
        lamports = r.i64()
        break
      case F.reward.postBalance:
        postBalance = d.u64Field(t, 'post_balance')
        break
      case F.reward.rewardType:
        rewardType = d.u32Field(t, 'reward_type')
        break
      case F.reward.commission:
        commission = d.stringField(t, 'commission')
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

function readReturnData(d: FieldReader): NonNullable<RpcTransactionMeta['returnData']> {
  const r = d.r
  let programId = ''
  let data: Uint8Array = new Uint8Array(0)
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.returnData.programId:
        programId = d.keyField(t, 'program_id')
        break
      case F.returnData.data:
        data = d.bytesField(t, 'data')
        break
      default:
        r.skip(t & 7)
    }
  }
  if (programId === '') programId = base58Encode(new Uint8Array(32))
  return { programId, data: [Buffer.from(data.buffer, data.byteOffset, data.length).toString('base64'), 'base64'] }
}

/** `Rewards` (a block's rewards as Old Faithful stores them): the rewards and num_partitions */
export function readRewards(d: FieldReader): { rewards: RpcReward[]; numPartitions: U64Value | null } {
  const r = d.r
  const rewards: RpcReward[] = []
  let numPartitions: U64Value | null = null
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.rewards.rewards:
        rewards.push(d.sub(t, 'rewards', readReward))
        break
      case F.rewards.numPartitions:
        numPartitions = d.wrappedU64(t, 'num_partitions', false)
        break
      default:
        r.skip(t & 7)
    }
  }
  return { rewards, numPartitions }
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
