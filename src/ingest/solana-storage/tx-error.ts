/**
 * bincode `TransactionError` bytes (the `err` of a solana-storage `TransactionStatusMeta`) ↔ the JSON
 * form the RPC's `getBlock` gives (serde's externally tagged enums): a unit variant is its name
 * (`"AccountInUse"`), a tuple variant `{"Name": value}` or `{"Name": [a, b]}`, a struct variant
 * `{"Name": {"field": value}}`. bincode (fixint, little-endian): an enum tag is a u32, u8 one byte,
 * u32 four, a String a u64 length and its UTF-8 bytes.
 *
 * Variants in declaration order (agave's solana-transaction-error and solana-instruction-error).
 */

/** TransactionError variants by tag (8, 30, 31 and 35 carry fields: handled below). */
export const TRANSACTION_ERRORS: readonly string[] = [
  'AccountInUse', // 0
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee', // 5
  'AlreadyProcessed',
  'BlockhashNotFound',
  'InstructionError', // 8: (u8, InstructionError)
  'CallChainTooDeep',
  'MissingSignatureForFee', // 10
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance', // 15
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit', // 20
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData', // 25
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'DuplicateInstruction', // 30: (u8)
  'InsufficientFundsForRent', // 31: { account_index: u8 }
  'MaxLoadedAccountsDataSizeExceeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'ResanitizationNeeded',
  'ProgramExecutionTemporarilyRestricted', // 35: { account_index: u8 }
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled', // 38
]

const TX_INSTRUCTION_ERROR = 8
const TX_DUPLICATE_INSTRUCTION = 30
const TX_INSUFFICIENT_FUNDS_FOR_RENT = 31
const TX_PROGRAM_EXECUTION_RESTRICTED = 35

/** InstructionError variants by tag. */
export const INSTRUCTION_ERRORS: readonly string[] = [
  'GenericError', // 0
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds', // 5
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction', // 10
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified', // 15
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged', // 20
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'Custom', // 25: (u32)
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId', // 30
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds', // 35
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete', // 40
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'BorshIoError', // 44: (String) in older releases, a unit variant since; rendered as the unit
  'AccountNotRentExempt', // 45
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded', // 50
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits', // 53
]

const IX_CUSTOM = 25
const IX_BORSH_IO = 44

export class TransactionErrorFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TransactionErrorFormatError'
  }
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex')
}

/**
 * The RPC JSON form of bincode `TransactionError` bytes, e.g. `{"InstructionError":[0,{"Custom":1}]}`
 * or `"AccountInUse"`, as agave's getBlock renders them today: what it reads (its bincode ignores
 * trailing bytes, so an old `BorshIoError(String)` renders as the unit `"BorshIoError"`). Throws
 * `TransactionErrorFormatError` (naming the bytes) on an unknown tag or truncated bytes.
 */
export function transactionErrorToJson(bytes: Uint8Array): unknown {
  let p = 0
  const bad = (what: string): never => {
    throw new TransactionErrorFormatError(`TransactionError bincode: ${what} (bytes ${hex(bytes.subarray(0, 64))})`)
  }
  const need = (n: number) => {
    if (p + n > bytes.length) bad(`truncated at byte ${p}`)
  }
  const u32 = (): number => {
    need(4)
    const v = (bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24)) >>> 0
    p += 4
    return v
  }
  const u8 = (): number => {
    need(1)
    return bytes[p++]
  }
  const tag = u32()
  let out: unknown
  if (tag === TX_INSTRUCTION_ERROR) {
    const index = u8()
    const ie = u32()
    let inner: unknown
    if (ie === IX_CUSTOM) inner = { Custom: u32() }
    // BorshIoError's old String payload (if any) is left unread, as agave's bincode does today
    else if (ie < INSTRUCTION_ERRORS.length) inner = INSTRUCTION_ERRORS[ie]
    else bad(`unknown InstructionError tag ${ie}`)
    out = { InstructionError: [index, inner] }
  } else if (tag === TX_DUPLICATE_INSTRUCTION) out = { DuplicateInstruction: u8() }
  else if (tag === TX_INSUFFICIENT_FUNDS_FOR_RENT || tag === TX_PROGRAM_EXECUTION_RESTRICTED)
    out = { [TRANSACTION_ERRORS[tag]]: { account_index: u8() } }
  else if (tag < TRANSACTION_ERRORS.length) out = TRANSACTION_ERRORS[tag]
  else bad(`unknown TransactionError tag ${tag}`)
  // trailing bytes are ignored, as bincode::deserialize does
  return out
}

function u8Of(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 255)
    throw new TransactionErrorFormatError(`${what} is not an integer 0..255: ${JSON.stringify(v)}`)
  return v
}

/** The bincode bytes of a `TransactionError` given in its RPC JSON form (inverse of transactionErrorToJson). */
export function transactionErrorFromJson(err: unknown): Uint8Array {
  const out: number[] = []
  const u32 = (v: number) => out.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff)
  const fail = (): never => {
    throw new TransactionErrorFormatError(`not a TransactionError: ${JSON.stringify(err)}`)
  }
  if (typeof err === 'string') {
    const tag = TRANSACTION_ERRORS.indexOf(err)
    if (tag < 0 || tag === TX_INSTRUCTION_ERROR || tag === TX_DUPLICATE_INSTRUCTION) fail()
    if (tag === TX_INSUFFICIENT_FUNDS_FOR_RENT || tag === TX_PROGRAM_EXECUTION_RESTRICTED) fail()
    u32(tag)
    return Uint8Array.from(out)
  }
  if (err === null || typeof err !== 'object' || Array.isArray(err)) return fail()
  const keys = Object.keys(err)
  if (keys.length !== 1) fail()
  const name = keys[0]
  const value = (err as Record<string, unknown>)[name]
  const tag = TRANSACTION_ERRORS.indexOf(name)
  if (tag === TX_INSTRUCTION_ERROR) {
    if (!Array.isArray(value) || value.length !== 2) fail()
    const [index, ie] = value as [unknown, unknown]
    u32(tag)
    out.push(u8Of(index, 'InstructionError index'))
    if (typeof ie === 'string') {
      const t = INSTRUCTION_ERRORS.indexOf(ie)
      if (t < 0 || t === IX_CUSTOM) fail()
      u32(t)
    } else if (ie !== null && typeof ie === 'object' && !Array.isArray(ie) && Object.keys(ie).length === 1) {
      const [k] = Object.keys(ie)
      const v = (ie as Record<string, unknown>)[k]
      if (k === 'Custom' && typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff) {
        u32(IX_CUSTOM)
        u32(v)
      } else if (k === 'BorshIoError' && typeof v === 'string') {
        u32(IX_BORSH_IO)
        const s = Buffer.from(v, 'utf8')
        u32(s.length)
        u32(0)
        out.push(...s)
      } else fail()
    } else fail()
  } else if (tag === TX_DUPLICATE_INSTRUCTION) {
    u32(tag)
    out.push(u8Of(value, name))
  } else if (tag === TX_INSUFFICIENT_FUNDS_FOR_RENT || tag === TX_PROGRAM_EXECUTION_RESTRICTED) {
    if (value === null || typeof value !== 'object') fail()
    u32(tag)
    out.push(u8Of((value as { account_index?: unknown }).account_index, `${name}.account_index`))
  } else fail()
  return Uint8Array.from(out)
}
