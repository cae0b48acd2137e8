/** Base58 (Bitcoin alphabet) encode/decode, dependency-free. */
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const MAP = new Int16Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) MAP[ALPHABET.charCodeAt(i)] = i

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
    const v = c < 128 ? MAP[c] : -1
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

export function base58Encode(bytes: Uint8Array): string {
  if (bytes.length === 0) return ''
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  const size = (((bytes.length - zeros) * 138) / 100 + 1) >>> 0 // log(256)/log(58)
  const b58 = new Uint8Array(size)
  let length = 0
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]
    let j = 0
    for (let k = size - 1; (carry !== 0 || j < length) && k >= 0; k--, j++) {
      carry += 256 * b58[k]
      b58[k] = carry % 58
      carry = (carry / 58) | 0
    }
    length = j
  }
  let start = size - length
  while (start < size && b58[start] === 0) start++
  let out = '1'.repeat(zeros)
  for (let i = start; i < size; i++) out += ALPHABET[b58[i]]
  return out
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/** `0x` + lower-case hex of bytes[0..n) */
export function hexPrefix(bytes: Uint8Array, n: number): string {
  let s = '0x'
  const m = Math.min(n, bytes.length)
  for (let i = 0; i < m; i++) s += HEX[bytes[i]]
  return s
}
