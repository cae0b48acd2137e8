/**
 * Instruction data prefixes: `d1/d2/d4/d8` and the internal `dataPrefix` (docs/query.md §1).
 *
 * Base58 is a big-endian base-58 number, so the leading bytes depend on every character (a carry
 * can run from the last character up to the first byte). Short strings are decoded on 32-bit
 * limbs, three characters per pass (58^3 < 2^21, so limb * 58^3 + carry stays below 2^53 and is
 * exact in a double). Long strings (big instruction data, up to ~1.7k characters) go through a
 * BigInt, nine characters per step, whose native multiply is ~8x faster there than any JS limb
 * loop; the hex rendering of the BigInt then gives both the length and the leading bytes. Above
 * 60 characters, `viaWindow` first bounds the number between two products of its leading 36
 * characters with a power of 58 (linear instead of quadratic) and decodes exactly only when the
 * bounds disagree on the length or the leading bytes.
 */
import type { RpcInstruction } from '../rpc/types.ts'
import { BASE58_DIGIT } from '../util/base58.ts'

const TWO32 = 4294967296

let limbs = new Uint32Array(256)

/** Result of `dataPrefixOf`. */
export interface DataPrefix {
  /** `0x` + lower-case hex of the first min(16, length) bytes */
  prefix: string
  /** decoded length in bytes */
  length: number
}

/**
 * Decodes base58 `data` just far enough to know its byte length and its first 16 bytes.
 * Returns null when `data` is not valid base58.
 */
export function dataPrefixOf(data: string): DataPrefix | null {
  const length = decodeData(data)
  return length < 0 ? null : { prefix: prefixHex(length), length }
}

/** The first 16 bytes of the last `decodeData` (fewer when the data is shorter). */
const PREFIX = new Uint8Array(16)
const HEX_OUT = Buffer.alloc(34)
HEX_OUT[0] = 48 // 0
HEX_OUT[1] = 120 // x
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1')

/** `0x` + hex of the first min(16, length) bytes of the last `decodeData`, in one allocation. */
export function prefixHex(length: number): string {
  const k = length < 16 ? length : 16
  for (let j = 0; j < k; j++) {
    const b = PREFIX[j]
    HEX_OUT[2 + 2 * j] = HEX_DIGITS[b >>> 4]
    HEX_OUT[3 + 2 * j] = HEX_DIGITS[b & 15]
  }
  return HEX_OUT.toString('latin1', 0, 2 + 2 * k)
}

/** The first byte of the last `decodeData` (when its length is >= 1). */
export function prefixByte(j: number): number {
  return PREFIX[j]
}

/**
 * Decodes base58 `data` just far enough to know its byte length and its first 16 bytes (kept for
 * `prefixHex` / `prefixByte` until the next call). Returns the length, or -1 when `data` is not
 * valid base58.
 */
export function decodeData(data: string): number {
  const n = data.length
  let zeros = 0
  while (zeros < n && data.charCodeAt(zeros) === 49 /* '1' */) zeros++
  if (zeros === n) {
    PREFIX.fill(0)
    return zeros
  }
  if (n - zeros > WINDOW_MIN_CHARS) {
    const len = viaWindow(data, zeros)
    if (len !== UNDECIDED) return len
  }
  if (n - zeros > LIMB_MAX_CHARS) return viaBigInt(data, zeros)
  const maxLimbs = (((n - zeros) * 0.733) >>> 2) + 2
  if (limbs.length < maxLimbs) limbs = new Uint32Array(maxLimbs * 2)
  const L = limbs
  let used = 0
  let i = zeros
  while (i < n) {
    let mul = 1
    let acc = 0
    for (let t = 0; t < 3 && i < n; t++, i++) {
      const c = data.charCodeAt(i)
      const v = c < 128 ? BASE58_DIGIT[c] : -1
      if (v < 0) return -1
      acc = acc * 58 + v
      mul *= 58
    }
    let carry = acc
    for (let j = 0; j < used; j++) {
      const x = L[j] * mul + carry
      const lo = x >>> 0
      L[j] = lo
      carry = (x - lo) / TWO32
    }
    while (carry > 0) {
      const lo = carry >>> 0
      L[used++] = lo
      carry = (carry - lo) / TWO32
    }
  }
  // The value is non-zero (its first digit is not '1'), so L[used - 1] != 0.
  const top = L[used - 1]
  const topBytes = top >= 0x1000000 ? 4 : top >= 0x10000 ? 3 : top >= 0x100 ? 2 : 1
  const length = zeros + (used - 1) * 4 + topBytes
  let k = 0
  for (; k < zeros && k < 16; k++) PREFIX[k] = 0
  // bytes of the number, most significant first
  let limb = used - 1
  let shift = (topBytes - 1) * 8
  while (k < 16 && limb >= 0) {
    PREFIX[k++] = (L[limb] >>> shift) & 0xff
    if (shift === 0) {
      limb--
      shift = 24
    } else shift -= 8
  }
  return length
}

/** Above this many significant characters, the BigInt path is faster. */
const LIMB_MAX_CHARS = 32
const B58_POW9 = 58n ** 9n

/** `viaWindow`'s answer when the window cannot decide: the exact decode is needed. */
const UNDECIDED = -2
/** Characters read exactly by `viaWindow` (four steps of 9): a ~211-bit window. */
const WINDOW_CHARS = 36
/** Above this many significant characters, `viaWindow` is tried first (below it, 58^r is small). */
const WINDOW_MIN_CHARS = 60
/** 58^e by e, for the exponents met (e < the longest data, ~1.7k characters: bounded). */
const POW58 = new Map<number, bigint>()

function pow58(e: number): bigint {
  let p = POW58.get(e)
  if (p === undefined) {
    p = 58n ** BigInt(e)
    POW58.set(e, p)
  }
  return p
}

/**
 * The length and first 16 bytes of a long base58 number without its O(n^2) decode.
 *
 * Let the significant characters (after the leading `1`s) be the number v, A the value of its first
 * W = 36 characters and r the count of the others: v = A * 58^r + R with 0 <= R < 58^r, so
 * lo = A * 58^r <= v <= hi = lo + 58^r - 1. Both bounds cost one multiply by a cached power (linear
 * in n). Let k be the byte length of lo and s = 8 * (k - 16). If lo >> s = hi >> s = T, then
 * v >> s = T as well; T has 16 bytes with a non-zero first one (lo has exactly k bytes), so v has
 * exactly k bytes and its first 16 are those of lo. Otherwise (a carry out of the low s bits
 * between lo and hi) the answer is UNDECIDED and the caller decodes exactly. The width of the
 * interval is 58^r, against 2^s ~ 58^(W+r) / 2^128: the window decides unless the low s bits of lo
 * lie within ~2^-83 of a carry, i.e. on random data practically always; crafted data (the bytes
 * after the 16th all 0x00 or all 0xff) reaches the fallback, which the tests cover. k and the
 * leading bytes come from the hex rendering of lo's top 18 bytes only.
 *
 * Returns the length (the leading bytes in PREFIX), -1 for a non-base58 character, or UNDECIDED.
 */
export function viaWindow(data: string, zeros: number): number {
  const n = data.length
  if (n - zeros <= WINDOW_CHARS) return UNDECIDED
  const acc = bigIntOf(data, zeros, zeros + WINDOW_CHARS)
  if (acc < 0n) return -1
  // the rest is only checked to be base58
  for (let i = zeros + WINDOW_CHARS; i < n; i++) {
    const c = data.charCodeAt(i)
    if (c >= 128 || BASE58_DIGIT[c] < 0) return -1
  }
  const m = n - zeros
  const p = pow58(m - WINDOW_CHARS)
  const lo = acc * p
  // lo < 58^m < 2^ceil(m log2 58): at most kMax bytes (one bit of margin for the rounding), and
  // lo >= 58^(m-1): at least kMax - 2 bytes. Only the top 18 bytes are rendered in hex (lo's
  // whole rendering costs more than the rest of this function).
  const kMax = Math.ceil((Math.ceil(m * LOG2_58) + 1) / 8)
  const s0 = 8 * (kMax - 18)
  const hex = (lo >> BigInt(s0)).toString(16)
  const kt = (hex.length + 1) >>> 1
  if (kt < 16) return UNDECIDED
  const k = kMax - 18 + kt // the byte length of lo
  const s = BigInt(8 * (k - 16))
  if (lo >> s !== (lo + p - 1n) >> s) return UNDECIDED
  hexToPrefix(hex, zeros) // lo >> s0 has lo's leading bytes
  return zeros + k
}

/** log2(58), rounded up */
const LOG2_58 = 5.857981

function viaBigInt(data: string, zeros: number): number {
  const acc = bigIntOf(data, zeros, data.length)
  if (acc < 0n) return -1
  // acc > 0: its first digit is not '1'
  return zeros + hexToPrefix(acc.toString(16), zeros)
}

/** The base58 number data[from..to) (to > from), -1n on a character outside the alphabet. */
function bigIntOf(data: string, from: number, to: number): bigint {
  let i = from
  let acc = 0n
  // the first chunk takes the remainder, so that every further step is exactly 9 characters
  let e = from + ((to - from) % 9 || 9)
  while (i < to) {
    let v = 0
    for (; i < e; i++) {
      const c = data.charCodeAt(i)
      const d = c < 128 ? BASE58_DIGIT[c] : -1
      if (d < 0) return -1n
      v = v * 58 + d
    }
    acc = acc * B58_POW9 + BigInt(v)
    e = i + 9
  }
  return acc
}

/**
 * PREFIX = `zeros` zero bytes, then the leading bytes of the number whose hex digits are `hex`
 * (no leading zero digit); returns the byte length of that number.
 */
function hexToPrefix(hex: string, zeros: number): number {
  const odd = hex.length & 1
  let k = 0
  for (; k < zeros && k < 16; k++) PREFIX[k] = 0
  // byte j of the number: hex digits [2j - odd, 2j + 2 - odd)
  for (let j = 0; k < 16 && 2 * j - odd < hex.length; j++, k++) {
    const hi = j === 0 && odd ? 0 : HEX_VALUE[hex.charCodeAt(2 * j - odd)]
    PREFIX[k] = (hi << 4) | HEX_VALUE[hex.charCodeAt(2 * j + 1 - odd)]
  }
  return (hex.length + odd) >>> 1
}

const HEX_VALUE = new Uint8Array(128)
for (let d = 0; d < 16; d++) HEX_VALUE['0123456789abcdef'.charCodeAt(d)] = d

/** The discriminator fields of one instruction's data. */
export interface Discriminators {
  d1: string | null
  d2: string | null
  d4: string | null
  d8: string | null
  dataPrefix: string
}

/** d1/d2/d4/d8/dataPrefix of a decoded prefix (null when the data is shorter). */
export function discriminatorsOf(p: DataPrefix): Discriminators {
  const s = p.prefix
  const len = p.length
  return {
    d1: len >= 1 ? s.slice(0, 4) : null,
    d2: len >= 2 ? s.slice(0, 6) : null,
    d4: len >= 4 ? s.slice(0, 10) : null,
    d8: len >= 8 ? s.slice(0, 18) : null,
    dataPrefix: s,
  }
}

const BAD_DATA = new Error('instruction data is not base58')

/** Shorter data decodes about as fast as it is looked up: not cached (src/normalize/transaction.ts). */
export const CACHE_MIN_LENGTH = 32

/** d1..d8 and dataPrefix of base58 data; throws BAD_DATA when it is not base58. */
export function discriminators(data: string): Discriminators {
  const len = decodeData(data)
  if (len < 0) throw BAD_DATA // the caller names the instruction (checkData)
  return fromPrefix(len)
}

/**
 * d1..d8 and dataPrefix of instruction data given as bytes, buf[a, e) (a decoder that has them:
 * src/ingest/solana-storage), the same values as `discriminators` of its base58 text
 */
export function discriminatorsOfBytes(buf: Uint8Array, a: number, e: number): Discriminators {
  const len = e - a
  const k = len < 16 ? len : 16
  for (let j = 0; j < k; j++) PREFIX[j] = buf[a + j]
  return fromPrefix(len)
}

/** the discriminators of data of `len` bytes whose first ones are in PREFIX */
function fromPrefix(len: number): Discriminators {
  const dataPrefix = prefixHex(len)
  return {
    d1: len >= 1 ? D1[PREFIX[0]] : null,
    d2: len >= 2 ? d2Of((PREFIX[0] << 8) | PREFIX[1]) : null,
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

/**
 * An instruction as a decoder that read its data as bytes gives it: its `discriminators` (of
 * `discriminatorsOfBytes`) come with it, and the normalizer does not decode the base58 `data`
 * again for them.
 */
export type DecodedInstruction = RpcInstruction & { discriminators?: Discriminators }
