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

const B5 = 58 ** 5 // 656356768
const INV_B5 = 1 / B5
const ALPHABET_BYTES = Uint8Array.from(BASE58_ALPHABET, (c) => c.charCodeAt(0))

/** a Buffer's own latin1 slicer (no argument checks: the text is written just before) */
type Latin1Slicer = { latin1Slice(start: number, end: number): string }

let limbs = new Float64Array(64)
let chars = Buffer.allocUnsafe(512)

/**
 * Base58 text of bytes[start, end): the number kept in limbs of base 58^5 (exact in doubles:
 * limb·2^16 + carry < 2^46), taken in two bytes at a time, each division by 58^5 a multiplication by
 * its inverse corrected by one; the digits are written into a reused byte buffer and made a string
 * once. Any length (no BigInt path).
 */
export function base58Encode(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let zeros = 0
  while (start + zeros < end && bytes[start + zeros] === 0) zeros++
  let i = start + zeros
  const need = Math.ceil(((end - i) * 1.3658) / 5) + 2
  if (limbs.length < need) limbs = new Float64Array(need * 2)
  const l = limbs
  let n = 0
  // an odd leading byte alone, then pairs
  if ((end - i) & 1) {
    l[0] = bytes[i++]
    n = 1
  }
  for (; i < end; i += 2) {
    let carry = bytes[i] * 256 + bytes[i + 1]
    for (let j = 0; j < n; j++) {
      const x = l[j] * 65536 + carry
      let q = Math.floor(x * INV_B5)
      let r = x - q * B5
      if (r < 0) {
        q--
        r += B5
      } else if (r >= B5) {
        q++
        r -= B5
      }
      l[j] = r
      carry = q
    }
    while (carry > 0) {
      const q = Math.floor(carry / B5)
      l[n++] = carry - q * B5
      carry = q
    }
  }
  const max = zeros + n * 5
  if (chars.length < max) chars = Buffer.allocUnsafe(max * 2)
  const c = chars
  let p = 0
  for (; p < zeros; p++) c[p] = 49 // '1'
  if (n > 0) {
    // the top limb without leading zero digits, then 5 digits per limb
    let top = l[n - 1]
    let digits = 0
    for (let t = top; t > 0; t = Math.floor(t / 58)) digits++
    for (let k = digits - 1; k >= 0; k--) {
      const q = Math.floor(top / 58)
      c[p + k] = ALPHABET_BYTES[top - q * 58]
      top = q
    }
    p += digits
    for (let j = n - 2; j >= 0; j--) {
      let d = l[j] | 0
      for (let k = 4; k >= 0; k--) {
        const q = (d / 58) | 0
        c[p + k] = ALPHABET_BYTES[d - q * 58]
        d = q
      }
      p += 5
    }
  }
  return (c as unknown as Latin1Slicer).latin1Slice(0, p)
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
