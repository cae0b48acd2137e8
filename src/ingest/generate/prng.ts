/** The generator's deterministic PRNG (`solportal gen`: the same seed gives the same blocks). */

/** xoshiro128** seeded through a 32-bit mixer: deterministic and fast */
export class Prng {
  private a: number
  private b: number
  private c: number
  private d: number
  constructor(seed: number) {
    let s = seed >>> 0
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next() | 1
    this.b = next()
    this.c = next()
    this.d = next()
  }
  /** uniform 32-bit unsigned (xoshiro128**) */
  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0
    const t = this.b << 9
    this.c ^= this.a
    this.d ^= this.b
    this.b ^= this.c
    this.a ^= this.d
    this.c ^= t
    this.d = rotl(this.d, 11)
    return r
  }
  /** uniform in [0, 1) */
  next(): number {
    return this.u32() / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  /** Zipf-like index in [0, n): P(index < q·n) = q^(1/3) (a few very hot indexes) */
  hot3(n: number): number {
    const u = this.next()
    return Math.floor(n * u * u * u)
  }
  /** Zipf-like index in [0, n): P(index < q·n) = q^(1/2.5) */
  hot25(n: number): number {
    const u = this.next()
    return Math.floor(n * u * u * Math.sqrt(u))
  }
}
function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}
