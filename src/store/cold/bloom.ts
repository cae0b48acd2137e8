/**
 * A split-free classic Bloom filter over strings, for chunk pruning (`Chunk.mayContain`).
 *
 * m bits (a power of two, at least 64), k probes by double hashing of two 32-bit FNV-1a/murmur-mix
 * hashes of the string's UTF-16 code units. ~10 bits per distinct value and k = 7 give ~1% false
 * positives; never a false negative.
 */

export const BITS_PER_KEY = 10
export const PROBES = 7

function hash1(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

function hash2(s: string): number {
  let h = 0x9747b28c ^ s.length
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x5bd1e995)
    h ^= h >>> 15
  }
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  h ^= h >>> 16
  return (h | 1) >>> 0 // odd, so the probe sequence covers the table
}

export function bloomBits(n: number): number {
  let m = 64
  while (m < n * BITS_PER_KEY) m *= 2
  return m
}

/** Build a filter holding every value; returns the bit array (m/8 bytes). */
export function buildBloom(values: Iterable<string>, n: number): Uint8Array {
  const m = bloomBits(n)
  const bits = new Uint8Array(m >>> 3)
  const mask = m - 1
  for (const v of values) {
    const a = hash1(v)
    const b = hash2(v)
    for (let i = 0; i < PROBES; i++) {
      const bit = (a + Math.imul(i, b)) & mask
      bits[bit >>> 3] |= 1 << (bit & 7)
    }
  }
  return bits
}

export function bloomHas(bits: Uint8Array, v: string): boolean {
  const mask = bits.length * 8 - 1
  const a = hash1(v)
  const b = hash2(v)
  for (let i = 0; i < PROBES; i++) {
    const bit = (a + Math.imul(i, b)) & mask
    if ((bits[bit >>> 3] & (1 << (bit & 7))) === 0) return false
  }
  return true
}
