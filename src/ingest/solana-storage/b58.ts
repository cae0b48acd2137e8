/**
 * Base58 for the protobuf codecs: the same results as src/util/base58.ts, with big limbs. Encoding
 * keeps the number in limbs of 58^5 (exact in doubles: limb·2^16 + carry < 2^46) and takes the bytes
 * two at a time; decoding keeps limbs of 2^24 and takes the characters four at a time (limb·58^4 +
 * carry < 2^48). About 10 times fewer steps than one digit and one byte at a time; the text is written
 * into a reused buffer and made a string once.
 */
import { BASE58_ALPHABET, BASE58_DIGIT } from '../../util/base58.ts'
import { slicing } from './wire.ts'

const B5 = 58 ** 5 // 656356768
const B4 = 58 ** 4 // 11316496
const TWO24 = 16777216
const INV_B5 = 1 / B5
const INV_TWO24 = 1 / TWO24
const ALPHABET = Uint8Array.from(BASE58_ALPHABET, (c) => c.charCodeAt(0))

let limbs = new Float64Array(64)
let chars = Buffer.allocUnsafe(512)
let charsText = slicing(chars)
let scratch = new Uint8Array(256)

/** base58 text of bytes[a..e) */
export function encodeBase58(bytes: Uint8Array, a = 0, e = bytes.length): string {
  let zeros = 0
  while (a + zeros < e && bytes[a + zeros] === 0) zeros++
  let i = a + zeros
  const need = Math.ceil(((e - i) * 1.3658) / 5) + 2
  if (limbs.length < need) limbs = new Float64Array(need * 2)
  const l = limbs
  let n = 0
  if ((e - i) & 1) {
    l[0] = bytes[i++]
    n = 1
  }
  for (; i < e; i += 2) {
    let carry = bytes[i] * 256 + bytes[i + 1]
    for (let j = 0; j < n; j++) {
      const x = l[j] * 65536 + carry
      // x / B5 by a multiplication (exact to within one), then corrected
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
  if (chars.length < max) {
    chars = Buffer.allocUnsafe(max * 2)
    charsText = slicing(chars)
  }
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
      c[p + k] = ALPHABET[top - q * 58]
      top = q
    }
    p += digits
    for (let j = n - 2; j >= 0; j--) {
      let d = l[j] | 0
      for (let k = 4; k >= 0; k--) {
        const q = (d / 58) | 0
        c[p + k] = ALPHABET[d - q * 58]
        d = q
      }
      p += 5
    }
  }
  return charsText.latin1Slice(0, p)
}

/**
 * The bytes of base58 text, in a buffer reused by the next call (copy them before calling again).
 * Throws on a character outside the alphabet.
 */
export function decodeBase58Scratch(s: string): Uint8Array {
  const len = s.length
  let zeros = 0
  while (zeros < len && s.charCodeAt(zeros) === 49) zeros++
  const need = Math.ceil(((len - zeros) * 0.7323) / 3) + 2
  if (limbs.length < need) limbs = new Float64Array(need * 2)
  const l = limbs
  let n = 0
  let i = zeros
  for (let k = zeros; k < len; k++) {
    const ch = s.charCodeAt(k)
    if (ch >= 128 || BASE58_DIGIT[ch] < 0) throw new Error(`invalid base58 character '${s[k]}'`)
  }
  const D = BASE58_DIGIT
  // the first (len - zeros) % 4 characters alone, then 4 at a time
  let head = (len - zeros) % 4
  if (head > 0) {
    let v = 0
    for (; head > 0; head--) v = v * 58 + D[s.charCodeAt(i++)]
    if (v > 0) {
      l[0] = v % TWO24
      n = 1
      if (v >= TWO24) l[n++] = Math.floor(v / TWO24)
    }
  }
  for (; i < len; i += 4) {
    let carry =
      ((D[s.charCodeAt(i)] * 58 + D[s.charCodeAt(i + 1)]) * 58 + D[s.charCodeAt(i + 2)]) * 58 + D[s.charCodeAt(i + 3)]
    for (let j = 0; j < n; j++) {
      const x = l[j] * B4 + carry
      carry = Math.floor(x * INV_TWO24) // exact: a power of two
      l[j] = x - carry * TWO24
    }
    while (carry > 0) {
      const q = Math.floor(carry / TWO24)
      l[n++] = carry - q * TWO24
      carry = q
    }
  }
  const max = zeros + n * 3
  if (scratch.length < max) scratch = new Uint8Array(max * 2)
  const out = scratch
  let p = 0
  for (; p < zeros; p++) out[p] = 0
  if (n > 0) {
    const top = l[n - 1]
    if (top >= 65536) out[p++] = top >>> 16
    if (top >= 256) out[p++] = (top >>> 8) & 0xff
    out[p++] = top & 0xff
    for (let j = n - 2; j >= 0; j--) {
      const v = l[j]
      out[p] = v >>> 16
      out[p + 1] = (v >>> 8) & 0xff
      out[p + 2] = v & 0xff
      p += 3
    }
  }
  return out.subarray(0, p)
}
