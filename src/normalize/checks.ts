/**
 * The format checks of untrusted values (src/normalize/README.md, "Untrusted input"): the values
 * rendered without JSON escaping, the integers, and a v1 transaction's config. A failed check
 * throws, naming the value: the transaction is skipped with a warning.
 */
import type { TransactionConfig } from '../model.ts'
import type { RpcInstruction } from '../rpc/types.ts'
import { isAddress, isBase58Text } from '../util/base58.ts'
import { safeJson } from '../util/safe-json.ts'

const DECIMAL = /^-?\d+$/

/**
 * An exact integer: an integral number, a decimal string (what parseJsonExact makes of a big
 * integer) or a bigint; throws otherwise. Stricter than BigInt(), which reads "", " " as 0 and
 * " 12 ", "0x10" as numbers.
 */
export function u64(v: unknown): bigint {
  if (typeof v === 'bigint') return v
  if ((typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && DECIMAL.test(v))) return BigInt(v)
  throw new Error(`not an integer: ${safeJson(v)}`)
}

/** a non-negative safe integer (a slot, a height) */
export function isSlotNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

/** An integer 0..255 (header counts, lookup-table indexes, decimals, commission). */
export function isU8(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 255
}

/**
 * The format checks of the values that are rendered without JSON escaping (src/catalogue.ts type
 * `safeAscii`). A failed check throws: the transaction is skipped with a warning naming the value.
 */
export function checkAddress(v: unknown, what: string): void {
  if (!isAddress(v)) throw new Error(`${what} is not a 32-byte base58 address: ${safeJson(v)}`)
}

export function checkAddresses(list: readonly unknown[], what: string): void {
  for (let i = 0; i < list.length; i++) if (!isAddress(list[i])) checkAddress(list[i], `${what}[${i}]`)
}

/** instruction data must be base58 text (it is rendered as is) */
export function checkData(list: readonly RpcInstruction[], what: string): void {
  for (let i = 0; i < list.length; i++) {
    const data = list[i]?.data
    if (typeof data === 'string' && !isBase58Text(data)) {
      throw new Error(`${what}[${i}].data is not base58: ${safeJson(data)}`)
    }
  }
}

export function checkU8s(list: unknown, what: string): void {
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
export function transactionConfigOf(c: unknown): TransactionConfig | null {
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
