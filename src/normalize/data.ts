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

function viaBigInt(data: string, zeros: number): number {
  const n = data.length
  let i = zeros
  let v = 0
  // the first chunk takes the remainder, so that every further step is exactly 9 characters
  const first = (n - zeros) % 9 || 9
  for (const e = i + first; i < e; i++) {
    const c = data.charCodeAt(i)
    const d = c < 128 ? MAP[c] : -1
    if (d < 0) return -1
    v = v * 58 + d
  }
  let acc = BigInt(v)
  while (i < n) {
    v = 0
    for (const e = i + 9; i < e; i++) {
      const c = data.charCodeAt(i)
      const d = c < 128 ? MAP[c] : -1
      if (d < 0) return -1
      v = v * 58 + d
    }
    acc = acc * B58_POW9 + BigInt(v)
  }
  // acc > 0: its first digit is not '1'
  const hex = acc.toString(16)
  const odd = hex.length & 1
  let k = 0
  for (; k < zeros && k < 16; k++) PREFIX[k] = 0
  // byte j of the number: hex digits [2j - odd, 2j + 2 - odd)
  for (let j = 0; k < 16 && 2 * j - odd < hex.length; j++, k++) {
    const hi = j === 0 && odd ? 0 : HEX_VALUE[hex.charCodeAt(2 * j - odd)]
    PREFIX[k] = (hi << 4) | HEX_VALUE[hex.charCodeAt(2 * j + 1 - odd)]
  }
  return zeros + ((hex.length + odd) >>> 1)
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
