/**
 * solana-storage `Transaction` and its `Message` → getBlock's `transaction` and `version`:
 * signatures, header, account keys, recent blockhash, instructions, and the address table lookups
 * (v0) or the config (v1). Top-level instructions render `stackHeight: null`; inner ones
 * (decode-meta.ts) their `stack_height`.
 */
import type { RpcInstruction, RpcMessage, RpcTransaction, RpcTransactionConfig } from '../../rpc/types.ts'
import { discriminatorsOfBytes, type DecodedInstruction, type Discriminators } from '../../normalize/data.ts'
import type { FieldReader } from './field-reader.ts'
import { F } from './fields.ts'

export type DecodedTransaction = { transaction: RpcTransaction['transaction']; version: 'legacy' | number }

/** `Transaction`: signatures and message; the version is read from the message */
export function readTransaction(d: FieldReader): DecodedTransaction {
  const r = d.r
  const signatures: string[] = []
  let message: RpcMessage | null = null
  let version: 'legacy' | number = 'legacy'
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.transaction.signatures:
        signatures.push(d.base58Field(t, 'signatures', 64))
        break
      case F.transaction.message: {
        const saved = d.enter(t, 'message')
        const m = readMessage(d)
        message = m.message
        version = m.version
        d.leave(saved)
        break
      }
      default:
        r.skip(t & 7)
    }
  }
  if (message === null) d.fail('Transaction without a message')
  return { transaction: { signatures, message }, version }
}

/** `Message`: legacy when not `versioned`; versioned with a `config`: 1; else 0 */
export function readMessage(d: FieldReader): { message: RpcMessage; version: 'legacy' | number } {
  const r = d.r
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
        header = d.sub(t, 'header', readHeader)
        break
      case F.message.accountKeys:
        accountKeys.push(d.keyField(t, 'account_keys'))
        break
      case F.message.recentBlockhash:
        recentBlockhash = d.keyField(t, 'recent_blockhash')
        break
      case F.message.instructions:
        instructions.push(d.sub(t, 'instructions', readTopInstruction))
        break
      case F.message.versioned:
        versioned = d.boolField(t, 'versioned')
        break
      case F.message.addressTableLookups:
        lookups.push(d.sub(t, 'address_table_lookups', readLookup))
        break
      case F.message.config:
        config = d.sub(t, 'config', readConfig)
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

function readHeader(d: FieldReader): RpcMessage['header'] {
  const r = d.r
  const h = { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 }
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.header.numRequiredSignatures:
        h.numRequiredSignatures = d.u8Field(t, 'num_required_signatures')
        break
      case F.header.numReadonlySignedAccounts:
        h.numReadonlySignedAccounts = d.u8Field(t, 'num_readonly_signed_accounts')
        break
      case F.header.numReadonlyUnsignedAccounts:
        h.numReadonlyUnsignedAccounts = d.u8Field(t, 'num_readonly_unsigned_accounts')
        break
      default:
        r.skip(t & 7)
    }
  }
  return h
}

function readConfig(d: FieldReader): RpcTransactionConfig {
  const r = d.r
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
        c.priorityFee = d.u64Field(t, 'priority_fee')
        break
      case F.config.computeUnitLimit:
        c.computeUnitLimit = d.u32Field(t, 'compute_unit_limit')
        break
      case F.config.loadedAccountsDataSizeLimit:
        c.loadedAccountsDataSizeLimit = d.u32Field(t, 'loaded_accounts_data_size_limit')
        break
      case F.config.heapSize:
        c.heapSize = d.u32Field(t, 'heap_size')
        break
      default:
        r.skip(t & 7)
    }
  }
  return c
}

function readTopInstruction(d: FieldReader): RpcInstruction {
  return readInstruction(d, false)
}

/** an `InnerInstruction` (its `stack_height`, null when unset) */
export function readInnerInstruction(d: FieldReader): RpcInstruction {
  return readInstruction(d, true)
}

/** the data of the instruction being read (`FieldReader.dataField`) */
const DATA: { data: string; discriminators: Discriminators | undefined } = { data: '', discriminators: undefined }

/**
 * `CompiledInstruction` (top level: stackHeight null) or `InnerInstruction` (stack_height when
 * present); with `d.withDiscriminators`, its `discriminators` as well (`DecodedInstruction`)
 */
function readInstruction(d: FieldReader, inner: boolean): RpcInstruction {
  const r = d.r
  let programIdIndex = 0
  let accounts: number[] = []
  DATA.data = ''
  DATA.discriminators = undefined
  let stackHeight: number | null = null
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.instruction.programIdIndex:
        programIdIndex = d.u8Field(t, 'program_id_index')
        break
      case F.instruction.accounts:
        accounts = d.u8List(t, 'accounts')
        break
      case F.instruction.data:
        d.dataField(t, DATA)
        break
      case F.instruction.stackHeight:
        if (!inner) r.skip(t & 7)
        else stackHeight = d.u32Field(t, 'stack_height')
        break
      default:
        r.skip(t & 7)
    }
  }
  const data = DATA.data
  if (!d.withDiscriminators) return { programIdIndex, accounts, data, stackHeight }
  const discriminators = DATA.discriminators ?? NO_DATA
  return { programIdIndex, accounts, data, stackHeight, discriminators } as DecodedInstruction
}

/** the discriminators of empty data (an instruction without its data field) */
const NO_DATA = discriminatorsOfBytes(new Uint8Array(0), 0, 0)

function readLookup(d: FieldReader): NonNullable<RpcMessage['addressTableLookups']>[number] {
  const r = d.r
  let accountKey = ''
  let writableIndexes: number[] = []
  let readonlyIndexes: number[] = []
  while (r.pos < r.end) {
    const t = r.tag()
    switch (t >>> 3) {
      case F.lookup.accountKey:
        accountKey = d.keyField(t, 'account_key')
        break
      case F.lookup.writableIndexes:
        writableIndexes = d.u8List(t, 'writable_indexes')
        break
      case F.lookup.readonlyIndexes:
        readonlyIndexes = d.u8List(t, 'readonly_indexes')
        break
      default:
        r.skip(t & 7)
    }
  }
  return { accountKey, writableIndexes, readonlyIndexes }
}
