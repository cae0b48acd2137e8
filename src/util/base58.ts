/** Base58 (Bitcoin alphabet) encode/decode, dependency-free. */
/** the 58 characters, in digit order */
export const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
/** the digit of each ASCII character code, -1 for a character that is not one */
export const BASE58_DIGIT = new Int8Array(128).fill(-1)
for (let i = 0; i < BASE58_ALPHABET.length; i++) BASE58_DIGIT[BASE58_ALPHABET.charCodeAt(i)] = i

/** Decode base58; throws on a character outside the alphabet. */
export function base58Decode(s: string): Uint8Array {
  if (s.length === 0) return new Uint8Array(0)
  let zeros = 0
  while (zeros < s.length && s.charCodeAt(zeros) === 49 /* '1' */) zeros++
  const size = (((s.length - zeros) * 733) / 1000 + 1) >>> 0 // log(58)/log(256)
  const b256 = new Uint8Array(size)
  let length = 0
  for (let i = zeros; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const v = c < 128 ? BASE58_DIGIT[c] : -1
    if (v < 0) throw new Error(`invalid base58 character '${s[i]}'`)
    let carry = v
    let j = 0
    for (let k = size - 1; (carry !== 0 || j < length) && k >= 0; k--, j++) {
      carry += 58 * b256[k]
      b256[k] = carry & 0xff
      carry >>>= 8
    }
    length = j
  }
  let start = size - length
  while (start < size && b256[start] === 0) start++
  const out = new Uint8Array(zeros + (size - start))
  out.set(b256.subarray(start), zeros)
  return out
}

const LIMB = 656356768 // 58^5
/** longer values go through a BigInt, divided natively 58^9 at a time (below 2^53) */
const LONG = 120
const BIG_STEP = 58n ** 9n

function longBase58(bytes: Uint8Array, start: number, end: number): string {
  let x = BigInt('0x' + Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('hex'))
  const parts: string[] = []
  while (x > 0n) {
    const q = x / BIG_STEP
    let r = Number(x - q * BIG_STEP)
    x = q
    let s = ''
    for (let d = 0; d < 9; d++) {
      const q2 = Math.floor(r / 58)
      s = BASE58_ALPHABET[r - q2 * 58] + s
      r = q2
    }
    parts.push(s)
  }
  let out = parts.reverse().join('')
  let i = 0
  while (i < out.length - 1 && out[i] === '1') i++
  return out.slice(i)
}
let limbs = new Float64Array(64)

/**
 * Base58 text of bytes[start, end): the number kept in limbs of base 58^5, taken in two bytes at
 * a time (a limb times 2^16 plus a carry stays below 2^53), in a reused buffer; ~4x faster than
 * byte by byte in base 58 on 32- and 64-byte values.
 */
export function base58Encode(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let zeros = 0
  while (start + zeros < end && bytes[start + zeros] === 0) zeros++
  if (end - start - zeros > LONG) return '1'.repeat(zeros) + longBase58(bytes, start + zeros, end)
  const max = Math.ceil(((end - start) * 1.3658) / 5) + 2
  if (limbs.length < max) limbs = new Float64Array(max * 2)
  let len = 0
  let i = start + zeros
  // an odd leading byte alone, then pairs
  if ((end - i) % 2 === 1) {
    limbs[0] = bytes[i++]
    len = 1
  }
  for (; i < end; i += 2) {
    let carry = bytes[i] * 256 + bytes[i + 1]
    for (let k = 0; k < len; k++) {
      const x = limbs[k] * 65536 + carry
      carry = Math.floor(x / LIMB)
      limbs[k] = x - carry * LIMB
    }
    while (carry > 0) {
      const c2 = Math.floor(carry / LIMB)
      limbs[len++] = carry - c2 * LIMB
      carry = c2
    }
  }
  let out = ''
  for (let k = 0; k < len; k++) {
    let x = limbs[k]
    const last = k === len - 1
    for (let d = 0; d < 5; d++) {
      if (last && x === 0) break
      const q = Math.floor(x / 58)
      out = BASE58_ALPHABET[x - q * 58] + out
      x = q
    }
  }
  return zeros ? '1'.repeat(zeros) + out : out
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/** `0x` + lower-case hex of bytes[0..n) */
export function hexPrefix(bytes: Uint8Array, n: number): string {
  let s = '0x'
  const m = Math.min(n, bytes.length)
  for (let i = 0; i < m; i++) s += HEX[bytes[i]]
  return s
}

/** Base58 text: only characters of the alphabet (the empty string included). */
const BASE58_TEXT = /^[1-9A-HJ-NP-Za-km-z]*$/

/** Is `s` a string of base58 characters only (any length, `""` included)? */
export function isBase58Text(s: unknown): boolean {
  return typeof s === 'string' && BASE58_TEXT.test(s)
}

/**
 * POW_TEXT[k] = the base58 text of 256^k. The alphabet is in ASCII order, so two base58 numbers
 * without leading `1`s compare as (length, then text): a decoded length is found by comparing
 * with these, without decoding.
 */
const POW_TEXT: string[] = []
for (let k = 0; k <= 64; k++) {
  const b = new Uint8Array(k + 1)
  b[0] = 1
  POW_TEXT.push(base58Encode(b))
}

/** compare the base58 number s[from..] (no leading `1`) with the base58 text t (no leading `1`) */
function compareAt(s: string, from: number, t: string): number {
  const n = s.length - from
  if (n !== t.length) return n - t.length
  for (let i = 0; i < n; i++) {
    const d = s.charCodeAt(from + i) - t.charCodeAt(i)
    if (d !== 0) return d
  }
  return 0
}

/**
 * Is `s` base58 text that decodes to exactly `bytes` bytes (1..64)? An address or a blockhash is
 * 32 bytes (32 to 44 characters), a signature 64 bytes (up to 88 characters).
 */
export function isBase58Bytes(s: unknown, bytes: number): s is string {
  if (typeof s !== 'string' || s.length === 0 || s.length > 2 * bytes || !BASE58_TEXT.test(s)) return false
  let zeros = 0
  while (zeros < s.length && s.charCodeAt(zeros) === 49 /* '1' */) zeros++
  if (zeros === s.length) return zeros === bytes
  const k = bytes - zeros // bytes of the number after the leading zeros: 256^(k-1) <= v < 256^k
  if (k < 1) return false
  return compareAt(s, zeros, POW_TEXT[k - 1]) >= 0 && compareAt(s, zeros, POW_TEXT[k]) < 0
}

/** A 32-byte base58 value: an address (public key) or a blockhash. */
export function isAddress(s: unknown): s is string {
  return isBase58Bytes(s, 32)
}

/** A 64-byte base58 value: a transaction signature. */
export function isSignature(s: unknown): s is string {
  return isBase58Bytes(s, 64)
}

/** Why `s` is not an address, for messages (`null` when it is one). */
export function addressProblem(s: unknown): string | null {
  if (isAddress(s)) return null
  if (typeof s !== 'string') return 'expected a string'
  if (!BASE58_TEXT.test(s)) return 'not base58 (characters outside the base58 alphabet)'
  return `not a base58 address (expected 32 bytes, decodes to ${base58Decode(s).length})`
}
