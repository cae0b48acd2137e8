/**
 * Instruction data prefixes: `d1/d2/d4/d8` and the internal `dataPrefix` (docs/query.md §1).
 *
 * Base58 is a big-endian base-58 number, so the leading bytes depend on every character: the whole
 * string has to be decoded (measured: there is no shortcut). Short strings are decoded on 32-bit
 * limbs, three characters per pass (58^3 < 2^21, so limb * 58^3 + carry stays below 2^53 and is
 * exact in a double). Long strings (big instruction data, up to ~1.7k characters) go through a
 * BigInt, nine characters per step, whose native multiply is ~8x faster there than any JS limb
 * loop; the hex rendering of the BigInt then gives both the length and the leading bytes.
 */

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const MAP = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) MAP[ALPHABET.charCodeAt(i)] = i

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
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
  const n = data.length
  let zeros = 0
  while (zeros < n && data.charCodeAt(zeros) === 49 /* '1' */) zeros++
  if (zeros === n) {
    let prefix = '0x'
    for (let k = 0; k < zeros && k < 16; k++) prefix += '00'
    return { prefix, length: zeros }
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
      const v = c < 128 ? MAP[c] : -1
      if (v < 0) return null
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
  let prefix = '0x'
  let k = 0
  for (; k < zeros && k < 16; k++) prefix += '00'
  // bytes of the number, most significant first
  let limb = used - 1
  let shift = (topBytes - 1) * 8
  while (k < 16 && limb >= 0) {
    prefix += HEX[(L[limb] >>> shift) & 0xff]
    k++
    if (shift === 0) {
      limb--
      shift = 24
    } else shift -= 8
  }
  return { prefix, length }
}

/** Above this many significant characters, the BigInt path is faster. */
const LIMB_MAX_CHARS = 32
const B58_POW9 = 58n ** 9n

function viaBigInt(data: string, zeros: number): DataPrefix | null {
  const n = data.length
  let i = zeros
  let v = 0
  // the first chunk takes the remainder, so that every further step is exactly 9 characters
  const first = (n - zeros) % 9 || 9
  for (const e = i + first; i < e; i++) {
    const c = data.charCodeAt(i)
    const d = c < 128 ? MAP[c] : -1
    if (d < 0) return null
    v = v * 58 + d
  }
  let acc = BigInt(v)
  while (i < n) {
    v = 0
    for (const e = i + 9; i < e; i++) {
      const c = data.charCodeAt(i)
      const d = c < 128 ? MAP[c] : -1
      if (d < 0) return null
      v = v * 58 + d
    }
    acc = acc * B58_POW9 + BigInt(v)
  }
  // acc > 0: its first digit is not '1'
  let hex = acc.toString(16)
  if (hex.length & 1) hex = '0' + hex
  let prefix = '0x'
  let k = 0
  for (; k < zeros && k < 16; k++) prefix += '00'
  prefix += hex.slice(0, 2 * (16 - k))
  return { prefix, length: zeros + hex.length / 2 }
}

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
