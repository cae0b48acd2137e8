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
import { base58Encode } from '../../util/base58.ts'
import { KeyText } from './b58.ts'
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
    private readonly keys: KeyText,
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
  bytes(n: number): Uint8Array {
    this.need(n)
    this.pos += n
    return this.b.subarray(this.pos - n, this.pos)
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
  b58(n: number): string {
    this.need(n)
    this.pos += n
    return base58Encode(this.b, this.pos - n, this.pos)
  }
  /** a 32-byte key */
  key(): string {
    this.need(32)
    this.pos += 32
    return this.keys.of(this.b, this.pos - 32)
  }
}

/** Decodes wire-format transaction bytes (throws an Error naming the problem). */
export function decodeWireTransaction(bytes: Uint8Array, keys: KeyText = new KeyText()): WireTransaction {
  if (bytes.length === 0) throw new Error('empty transaction bytes')
  const c = new Cursor(bytes, keys)
  if (bytes[0] & 0x80) return decodeV1(c)
  const nsig = c.shortU16()
  const signatures = new Array<string>(nsig)
  for (let i = 0; i < nsig; i++) signatures[i] = c.b58(64)
  let version: 'legacy' | number = 'legacy'
  if (c.b[c.pos] & 0x80) {
    version = c.u8() & 0x7f
    if (version !== 0) throw new Error(`transaction version ${version} with signatures first`)
  }
  const header = c.header()
  const nkeys = c.shortU16()
  const accountKeys = new Array<string>(nkeys)
  for (let i = 0; i < nkeys; i++) accountKeys[i] = c.key()
  const recentBlockhash = c.b58(32)
  const nix = c.shortU16()
  const instructions = new Array<RpcInstruction>(nix)
  for (let i = 0; i < nix; i++) {
    const programIdIndex = c.u8()
    const accounts = c.list(c.shortU16())
    const data = c.b58(c.shortU16())
    instructions[i] = { programIdIndex, accounts, data, stackHeight: null }
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
  const recentBlockhash = c.b58(32)
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
  const instructions = heads.map(([programIdIndex, na, nd]) => ({
    programIdIndex,
    accounts: c.list(na),
    data: c.b58(nd),
    stackHeight: null,
  }))
  const nsig = header.numRequiredSignatures
  const signatures = new Array<string>(nsig)
  for (let i = 0; i < nsig; i++) signatures[i] = c.b58(64)
  if (c.pos !== c.b.length) throw new Error(`${c.b.length - c.pos} bytes after the transaction`)
  return {
    transaction: { signatures, message: { accountKeys, header, recentBlockhash, instructions, transactionConfig } },
    version: 1,
  }
}
