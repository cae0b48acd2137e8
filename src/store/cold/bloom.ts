/**
 * A split-free classic Bloom filter over strings, for chunk pruning (`Chunk.mayContain`).
 *
 * m bits (a power of two, at least 64), k probes by double hashing: a 32-bit FNV-1a hash of the
 * string's UTF-16 code units and a second hash mixed from it. ~10 bits per distinct value and k = 7 give ~1% false
 * positives; never a false negative.
 */

/** identifies the hashing below; stored with the filters so a change never yields false negatives */
export const BLOOM_SCHEME = 1
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

/** second hash derived from the first (murmur3 finalizer), odd so the probe sequence covers the table */
function hash2(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  h ^= h >>> 16
  return (h | 1) >>> 0
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
    const b = hash2(a)
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
  const b = hash2(a)
  for (let i = 0; i < PROBES; i++) {
    const bit = (a + Math.imul(i, b)) & mask
    if ((bits[bit >>> 3] & (1 << (bit & 7))) === 0) return false
  }
  return true
}
