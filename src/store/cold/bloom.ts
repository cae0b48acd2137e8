/**
 * A split-free classic Bloom filter over strings, for chunk pruning (`Chunk.mayContain`).
 *
 * m bits (a power of two, at least 64), k probes by double hashing: a 32-bit FNV-1a hash of the
 * string's UTF-16 code units and a second hash mixed from it. ~10 bits per distinct value and k = 7 give ~1% false
 * positives; never a false negative.
 */

/**
 * identifies the hashing below; stored with the filters so a change never yields false negatives.
 * 1: m a power of two (10-20 bits per value), probe = h & (m - 1); 2 (chunk format 4): m = 10 bits
 * per value rounded up to a byte, probe = h mod m (the same false positives in ~30% fewer bytes)
 */
export const BLOOM_SCHEME = 2
export const BLOOM_SCHEMES: readonly number[] = [1, 2]
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

export function bloomBits(n: number, scheme = BLOOM_SCHEME): number {
  if (scheme === 2) return Math.max(64, Math.ceil((n * BITS_PER_KEY) / 8) * 8)
  let m = 64
  while (m < n * BITS_PER_KEY) m *= 2
  return m
}

/** bit i of the probe sequence of (a, b) in a filter of m bits */
function probe(a: number, b: number, i: number, m: number, scheme: number): number {
  return scheme === 2 ? ((a + Math.imul(i, b)) >>> 0) % m : (a + Math.imul(i, b)) & (m - 1)
}

/** Build a filter holding every value; returns the bit array (m/8 bytes). */
export function buildBloom(values: Iterable<string>, n: number, scheme = BLOOM_SCHEME): Uint8Array {
  const m = bloomBits(n, scheme)
  const bits = new Uint8Array(m >>> 3)
  for (const v of values) {
    const a = hash1(v)
    const b = hash2(a)
    for (let i = 0; i < PROBES; i++) {
      const bit = probe(a, b, i, m, scheme)
      bits[bit >>> 3] |= 1 << (bit & 7)
    }
  }
  return bits
}

export function bloomHas(bits: Uint8Array, v: string, scheme = BLOOM_SCHEME): boolean {
  const m = bits.length * 8
  const a = hash1(v)
  const b = hash2(a)
  for (let i = 0; i < PROBES; i++) {
    const bit = probe(a, b, i, m, scheme)
    if ((bits[bit >>> 3] & (1 << (bit & 7))) === 0) return false
  }
  return true
}
