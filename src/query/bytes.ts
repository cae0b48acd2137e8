/**
 * The byte form of the JSON writer: a growable buffer a block's line is written into, and the
 * interface through which a store hands over values already in their JSON form (the cold store
 * keeps string and list values as escaped JSON tokens: they are copied as bytes, never decoded
 * into JS strings and encoded again).
 */

/** A growable byte buffer holding the line of the block being rendered. */
export class LineBuf {
  buf: Buffer
  pos = 0

  constructor(size = 1 << 16) {
    this.buf = Buffer.allocUnsafe(size)
  }

  /** room for `n` more bytes */
  ensure(n: number): void {
    const need = this.pos + n
    if (need <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < need) size *= 2
    const b = Buffer.allocUnsafe(size)
    this.buf.copy(b, 0, 0, this.pos)
    this.buf = b
  }

  /** constant bytes (pre-encoded keys and punctuation) */
  raw(k: Uint8Array): void {
    const n = k.length
    if (this.pos + n > this.buf.length) this.ensure(n)
    if (n < 32) {
      // short constants (keys): a loop costs less than the call into set()
      const d = this.buf
      let p = this.pos
      for (let i = 0; i < n; i++) d[p++] = k[i]
    } else this.buf.set(k, this.pos)
    this.pos += n
  }

  byte(c: number): void {
    if (this.pos >= this.buf.length) this.ensure(1)
    this.buf[this.pos++] = c
  }

  /** bytes [a, b) of `src` */
  copy(src: Uint8Array, a: number, b: number): void {
    const n = b - a
    this.ensure(n)
    if (n < 48) {
      const d = this.buf
      let p = this.pos
      for (let i = a; i < b; i++) d[p++] = src[i]
    } else this.buf.set(src.subarray(a, b), this.pos)
    this.pos += n
  }

  /** a string as UTF-8 */
  str(s: string): void {
    this.ensure(s.length * 3)
    this.pos += this.buf.write(s, this.pos, 'utf8')
  }

  /** a non-negative integer up to 2^53 in decimal (anything else as JS converts it to a string) */
  uint(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && v === Math.floor(v))) return this.str('' + v)
    if (v < 10) return this.byte(48 + v)
    let n = 2
    for (let t = 100; t <= v && n < 16; t *= 10) n++
    this.ensure(n)
    const d = this.buf
    let p = this.pos + n
    this.pos = p
    while (n-- > 0) {
      const q = Math.floor(v / 10)
      d[--p] = 48 + (v - q * 10)
      v = q
    }
  }

  /** the bytes written since `start` as a Buffer of their own (the buffer is reused) */
  take(start: number): Buffer {
    const out = Buffer.allocUnsafe(this.pos - start)
    this.buf.copy(out, 0, start, this.pos)
    return out
  }
}

/**
 * A column's values in JSON form: writes row `i`'s JSON rendering (null included) into `out`, as
 * the compiled writers render the column's values (u64 quoted unless bigints render as numbers).
 */
export interface JsonTokens {
  write(i: number, out: LineBuf): void
  /** optional: the rows of this use are written (what was read only to build them may be dropped) */
  done?(): void
}
