/**
 * Base58 decoding for the protobuf encoders: the same results as src/util/base58.ts's
 * `base58Decode`, with big limbs: limbs of 2^24, the characters taken four at a time (limb·58^4 +
 * carry < 2^48), into a reused buffer. Encoding is src/util/base58.ts's `base58Encode`.
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
let scratch = new Uint8Array(256)

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
