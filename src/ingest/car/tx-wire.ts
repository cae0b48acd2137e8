/**
 * Solana transactions in the wire format (what Old Faithful stores as a Transaction node's
 * `data`), decoded to the `getBlock` JSON (`encoding: "json"`) transaction:
 * `{signatures, message: {header, accountKeys, recentBlockhash, instructions, addressTableLookups?,
 * transactionConfig?}}` and `version`.
 *
 * - legacy and v0: short-vec of 64-byte signatures, then the message: [0x80 | version] (v0 only),
 *   header (3 bytes), short-vec of 32-byte keys, blockhash, short-vec of instructions
 *   (program index, short-vec of account indexes, short-vec of data), and for v0 a short-vec of
 *   address table lookups (key, short-vec writable indexes, short-vec readonly indexes).
 * - v1 (the layout `@solana/transaction-messages` 8.4 decodes): the message first, then
 *   `numRequiredSignatures` signatures without a count. Message: 0x81, header (3 bytes), config
 *   mask (u32 LE), blockhash, instruction count (u8), key count (u8), the keys, the config values
 *   the mask announces (priority fee u64 when bits 0 and 1 are set, compute unit limit u32 bit 2,
 *   loaded accounts data size limit u32 bit 3, heap size u32 bit 4), the instruction headers
 *   (program index u8, account count u8, data length u16 LE), then each instruction's account
 *   indexes and data.
 */
import { base58Decode, base58Encode } from '../../util/base58.ts'
import { BASE58_TEXTS } from '../solana-storage/text-cache.ts'
import { instructionDataDiscriminators, repeatedText } from '../solana-storage/field-reader.ts'
import type { DecodedInstruction } from '../../normalize/data.ts'
import type {
  RpcInstruction,
  RpcMessage,
  RpcMessageHeader,
  RpcTransaction,
  RpcTransactionConfig,
} from '../../rpc/types.ts'

export type WireTransaction = Pick<RpcTransaction, 'transaction' | 'version'>

class Cursor {
  pos = 0
  constructor(
    readonly b: Uint8Array,
    /** instructions carry the d1..d8 / dataPrefix of their data's bytes (`DecodedInstruction`) */
    readonly withDiscriminators: boolean,
  ) {}
  need(n: number): void {
    if (this.pos + n > this.b.length)
      throw new Error(`transaction bytes end early (at ${this.pos} of ${this.b.length})`)
  }
  u8(): number {
    this.need(1)
    return this.b[this.pos++]
  }
  u16(): number {
    this.need(2)
    const v = this.b[this.pos] | (this.b[this.pos + 1] << 8)
    this.pos += 2
    return v
  }
  u32(): number {
    this.need(4)
    const b = this.b
    const p = this.pos
    this.pos += 4
    return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16)) + b[p + 3] * 0x1000000
  }
  /** compact-u16 (short-vec length) */
  shortU16(): number {
    let v = 0
    for (let i = 0; i < 3; i++) {
      const x = this.u8()
      v |= (x & 0x7f) << (7 * i)
      if (x < 0x80) return v
    }
    throw new Error('bad short-vec length')
  }
  skip(n: number): void {
    this.need(n)
    this.pos += n
  }
  list(n: number): number[] {
    this.need(n)
    const out = new Array<number>(n)
    for (let i = 0; i < n; i++) out[i] = this.b[this.pos + i]
    this.pos += n
    return out
  }
  header(): RpcMessageHeader {
    return {
      numRequiredSignatures: this.u8(),
      numReadonlySignedAccounts: this.u8(),
      numReadonlyUnsignedAccounts: this.u8(),
    }
  }
  /** a 64-byte signature (never repeated: not cached) */
  signature(): string {
    this.need(64)
    this.pos += 64
    return base58Encode(this.b, this.pos - 64, this.pos)
  }
  /** a 32-byte key or hash (they repeat: through the thread's text cache) */
  key(): string {
    this.need(32)
    this.pos += 32
    return BASE58_TEXTS.of(this.b, this.pos - 32, this.pos)
  }
  /** an instruction whose data is the next n bytes */
  instruction(programIdIndex: number, accounts: number[], n: number): RpcInstruction {
    this.need(n)
    const a = this.pos
    const e = (this.pos += n)
    const data = repeatedText(this.b, a, e)
    if (!this.withDiscriminators) return { programIdIndex, accounts, data, stackHeight: null }
    const discriminators = instructionDataDiscriminators(this.b, a, e)
    return { programIdIndex, accounts, data, stackHeight: null, discriminators } as DecodedInstruction
  }
}

/**
 * Decodes wire-format transaction bytes (throws an Error naming the problem). `withDiscriminators`:
 * the instructions carry their data's d1..d8 / dataPrefix too (for the normalizer, which then does
 * not decode the base58 back); without it, exactly the `getBlock` JSON's members.
 */
export function decodeWireTransaction(bytes: Uint8Array, withDiscriminators = false): WireTransaction {
  if (bytes.length === 0) throw new Error('empty transaction bytes')
  const c = new Cursor(bytes, withDiscriminators)
  if (bytes[0] & 0x80) return decodeV1(c)
  const nsig = c.shortU16()
  const signatures = new Array<string>(nsig)
  for (let i = 0; i < nsig; i++) signatures[i] = c.signature()
  let version: 'legacy' | number = 'legacy'
  if (c.b[c.pos] & 0x80) {
    version = c.u8() & 0x7f
    if (version !== 0) throw new Error(`transaction version ${version} with signatures first`)
  }
  const header = c.header()
  const nkeys = c.shortU16()
  const accountKeys = new Array<string>(nkeys)
  for (let i = 0; i < nkeys; i++) accountKeys[i] = c.key()
  const recentBlockhash = c.key()
  const nix = c.shortU16()
  const instructions = new Array<RpcInstruction>(nix)
  for (let i = 0; i < nix; i++) {
    const programIdIndex = c.u8()
    const accounts = c.list(c.shortU16())
    instructions[i] = c.instruction(programIdIndex, accounts, c.shortU16())
  }
  const message: RpcMessage = { accountKeys, header, recentBlockhash, instructions }
  if (version === 0) {
    const nl = c.shortU16()
    const lookups = new Array(nl)
    for (let i = 0; i < nl; i++) {
      const accountKey = c.key()
      const writableIndexes = c.list(c.shortU16())
      const readonlyIndexes = c.list(c.shortU16())
      lookups[i] = { accountKey, writableIndexes, readonlyIndexes }
    }
    message.addressTableLookups = lookups
  }
  if (c.pos !== bytes.length) throw new Error(`${bytes.length - c.pos} bytes after the transaction`)
  return { transaction: { signatures, message }, version }
}

function decodeV1(c: Cursor): WireTransaction {
  const version = c.u8() & 0x7f
  if (version !== 1) throw new Error(`transaction version ${version} is not supported`)
  const header = c.header()
  const mask = c.u32()
  const recentBlockhash = c.key()
  const nix = c.u8()
  const nkeys = c.u8()
  const accountKeys = new Array<string>(nkeys)
  for (let i = 0; i < nkeys; i++) accountKeys[i] = c.key()
  const fee = mask & 3
  if (fee === 1 || fee === 2) throw new Error(`bad transaction config mask ${mask} (priority fee bits)`)
  let priorityFee: number | string | null = null
  if (fee === 3) {
    const lo = c.u32()
    const hi = c.u32()
    priorityFee = hi < 0x200000 ? hi * 0x100000000 + lo : ((BigInt(hi) << 32n) | BigInt(lo)).toString()
  }
  const transactionConfig: RpcTransactionConfig = {
    computeUnitLimit: mask & 4 ? c.u32() : null,
    heapSize: null,
    loadedAccountsDataSizeLimit: mask & 8 ? c.u32() : null,
    priorityFee,
  }
  if (mask & 16) transactionConfig.heapSize = c.u32()
  const heads: [number, number, number][] = []
  for (let i = 0; i < nix; i++) heads.push([c.u8(), c.u8(), c.u16()])
  const instructions = heads.map(([programIdIndex, na, nd]) => c.instruction(programIdIndex, c.list(na), nd))
  const nsig = header.numRequiredSignatures
  const signatures = new Array<string>(nsig)
  for (let i = 0; i < nsig; i++) signatures[i] = c.signature()
  if (c.pos !== c.b.length) throw new Error(`${c.b.length - c.pos} bytes after the transaction`)
  return {
    transaction: { signatures, message: { accountKeys, header, recentBlockhash, instructions, transactionConfig } },
    version: 1,
  }
}

/** the Vote program's key */
const VOTE_PROGRAM_KEY = base58Decode('Vote111111111111111111111111111111111111111')

/**
 * Does `decodeWireTransaction(bytes)` give a vote transaction (exactly one instruction, whose
 * program is the Vote program; normalize.ts `isVoteTransaction`)? Read from the bytes without
 * making any text, the whole transaction walked: bytes that would not decode are not a vote (their
 * decoding then reports them).
 */
export function isWireVote(bytes: Uint8Array): boolean {
  if (bytes.length === 0) return false
  const c = new Cursor(bytes, false)
  try {
    return bytes[0] & 0x80 ? isV1Vote(c) : isV0Vote(c)
  } catch {
    return false
  }
}

/** is the key at index `k` of the keys starting at `keysAt` the Vote program's? */
function isVoteKey(b: Uint8Array, keysAt: number, nkeys: number, k: number): boolean {
  if (k >= nkeys) return false
  const at = keysAt + 32 * k
  for (let j = 0; j < 32; j++) if (b[at + j] !== VOTE_PROGRAM_KEY[j]) return false
  return true
}

/** a legacy or v0 transaction: one instruction of the Vote program, the rest well formed */
function isV0Vote(c: Cursor): boolean {
  c.skip(64 * c.shortU16())
  let v0 = false
  if (c.b[c.pos] & 0x80) {
    if ((c.u8() & 0x7f) !== 0) return false
    v0 = true
  }
  c.skip(3)
  const nkeys = c.shortU16()
  const keysAt = c.pos
  c.skip(32 * nkeys + 32)
  if (c.shortU16() !== 1) return false
  const program = c.u8()
  c.skip(c.shortU16())
  c.skip(c.shortU16())
  if (v0) {
    for (let i = c.shortU16(); i > 0; i--) {
      c.skip(32)
      c.skip(c.shortU16())
      c.skip(c.shortU16())
    }
  }
  return c.pos === c.b.length && isVoteKey(c.b, keysAt, nkeys, program)
}

/** a v1 transaction, laid out as `decodeV1` reads it */
function isV1Vote(c: Cursor): boolean {
  if ((c.u8() & 0x7f) !== 1) return false
  const nsig = c.u8()
  c.skip(2)
  const mask = c.u32()
  if ((mask & 3) === 1 || (mask & 3) === 2) return false
  c.skip(32)
  const nix = c.u8()
  const nkeys = c.u8()
  const keysAt = c.pos
  c.skip(32 * nkeys)
  if (nix !== 1) return false
  c.skip(((mask & 3) === 3 ? 8 : 0) + (mask & 4 ? 4 : 0) + (mask & 8 ? 4 : 0) + (mask & 16 ? 4 : 0))
  const program = c.u8()
  const na = c.u8()
  const nd = c.u16()
  c.skip(na + nd + 64 * nsig)
  return c.pos === c.b.length && isVoteKey(c.b, keysAt, nkeys, program)
}
