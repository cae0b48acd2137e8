/**
 * Helpers shared by scripts/gen-sample.ts: deterministic randomness and hashes, and conversion of
 * litesvm results into the exact JSON shapes of Solana RPC `getBlock` (encoding "json").
 */
import { createHash } from 'node:crypto'
import { base58Encode } from '../../src/util/base58.ts'

export const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
export const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb'

export function sha256(s: string | Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(s).digest())
}

/** base58(sha256(text)): a fixed, well-formed 32-byte hash */
export function hash58(text: string): string {
  return base58Encode(sha256(text))
}

/** mulberry32: small deterministic PRNG */
export class Rng {
  private s: number
  constructor(seed: number) {
    this.s = seed >>> 0
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1)
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]
  }
  /** skewed pick: low indexes are much more popular */
  hot<T>(xs: readonly T[]): T {
    const r = this.next()
    return xs[Math.floor(xs.length * r * r * r)]
  }
  chance(p: number): boolean {
    return this.next() < p
  }
}

/** Names of litesvm's InstructionErrorFieldless enum (a const enum, so not available at run time). */
export const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
]

/**
 * RPC JSON of a litesvm transaction error. Only `InstructionError` can reach a block here: other errors
 * (fee payer cannot pay, unknown account, ...) make the validator drop the transaction, and so do we.
 */
export function instructionErrorJson(e: unknown): unknown | undefined {
  const x = e as { index?: number; err?: () => unknown }
  if (typeof x !== 'object' || x === null || typeof x.index !== 'number' || typeof x.err !== 'function')
    return undefined
  const ie = x.err() as unknown
  let kind: unknown
  if (typeof ie === 'number') kind = INSTRUCTION_ERRORS[ie]
  else if (ie && typeof ie === 'object' && 'code' in ie) kind = { Custom: (ie as { code: number }).code }
  else if (ie && typeof ie === 'object' && 'msg' in ie) kind = { BorshIoError: (ie as { msg: string }).msg }
  if (kind === undefined) throw new Error(`unknown instruction error ${String(ie)}`)
  return { InstructionError: [x.index, kind] }
}

/** Rust `real_number_string_trimmed` */
export function uiAmountString(amount: bigint, decimals: number): string {
  if (decimals === 0) return amount.toString()
  const s = amount.toString().padStart(decimals + 1, '0')
  const r = `${s.slice(0, s.length - decimals)}.${s.slice(s.length - decimals)}`
  return r.replace(/0+$/, '').replace(/\.$/, '')
}

export interface TokenAccountInfo {
  mint: string
  owner: string
  amount: bigint
  programId: string
}

/** An initialized SPL Token / Token-2022 token account, else undefined. */
export function parseTokenAccount(programAddress: string, data: Uint8Array): TokenAccountInfo | undefined {
  if (programAddress !== TOKEN && programAddress !== TOKEN_2022) return undefined
  if (data.length < 165) return undefined
  if (data.length > 165 && !(programAddress === TOKEN_2022 && data[165] === 2)) return undefined
  if (data[108] === 0) return undefined // AccountState::Uninitialized
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength)
  return {
    mint: base58Encode(data.subarray(0, 32)),
    owner: base58Encode(data.subarray(32, 64)),
    amount: dv.getBigUint64(64, true),
    programId: programAddress,
  }
}

/** Decimals of a mint account's data (byte 44), else undefined */
export function mintDecimals(programAddress: string, data: Uint8Array): number | undefined {
  if (programAddress !== TOKEN && programAddress !== TOKEN_2022) return undefined
  if (data.length < 82 || data[45] !== 1) return undefined // is_initialized
  return data[44]
}

export function tokenBalanceJson(accountIndex: number, t: TokenAccountInfo, decimals: number) {
  const s = uiAmountString(t.amount, decimals)
  return {
    accountIndex,
    mint: t.mint,
    uiTokenAmount: {
      uiAmount: t.amount === 0n ? null : Number.parseFloat(s),
      decimals,
      amount: t.amount.toString(),
      uiAmountString: s,
    },
    owner: t.owner,
    programId: t.programId,
  }
}
