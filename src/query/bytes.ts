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
    this.ensure(k.length)
    this.buf.set(k, this.pos)
    this.pos += k.length
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

  /** a u32 value in decimal (anything else as JS converts it to a string) */
  uint(v: number): void {
    if (!(v >= 0 && v <= 0xffffffff && v === Math.floor(v))) return this.str('' + v)
    if (v < 10) return this.byte(48 + v)
    this.ensure(10)
    const d = this.buf
    let n =
      v < 100
        ? 2
        : v < 1000
          ? 3
          : v < 10000
            ? 4
            : v < 100000
              ? 5
              : v < 1e6
                ? 6
                : v < 1e7
                  ? 7
                  : v < 1e8
                    ? 8
                    : v < 1e9
                      ? 9
                      : 10
    let p = this.pos + n
    this.pos = p
    while (n-- > 0) {
      const q = Math.floor(v / 10)
      d[--p] = 48 + v - q * 10
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

/** A column's values in JSON form: writes row `i`'s JSON rendering (null included) into `out`. */
export interface JsonTokens {
  write(i: number, out: LineBuf): void
}
