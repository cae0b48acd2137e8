/**
 * A minimal protobuf wire-format reader and writer (proto3: varint, 64-bit, length-delimited and
 * 32-bit fields; groups are rejected). u64 values stay exact: they are read as two 32-bit halves and
 * returned as a number when below 10^15 (what `parseJsonExact` gives for the same JSON integer) and
 * as a decimal string otherwise.
 */

/** Wire types. */
export const VARINT = 0
export const FIXED64 = 1
export const LEN = 2
export const FIXED32 = 5

/** A u64 as the JSON parser of src/rpc gives it: a number below 10^15, a decimal string above. */
export type U64Value = number | string

const TWO32 = 4294967296
const SMALL_LIMIT = 1e15

/** The number or decimal string of the u64 hi·2^32 + lo. */
export function u64FromHalves(lo: number, hi: number): U64Value {
  if (hi < 0x200000) {
    const v = hi * TWO32 + lo
    if (v < SMALL_LIMIT) return v
    return String(v)
  }
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString()
}

/** The number or decimal string of the i64 (two's complement) hi·2^32 + lo. */
export function i64FromHalves(lo: number, hi: number): U64Value {
  if (hi < 0x80000000) return u64FromHalves(lo, hi)
  // negative: -(2^64 - v)
  if (hi === 0xffffffff && lo !== 0) return lo - TWO32 // > -2^32
  const v = -((((BigInt(hi) << 32n) | BigInt(lo)) ^ 0xffffffffffffffffn) + 1n)
  return v > -BigInt(SMALL_LIMIT) ? Number(v) : v.toString()
}

/**
 * Buffer's own text methods (`utf8Slice`, `latin1Slice`): what `toString(encoding, a, b)` calls
 * after checking its arguments; called directly they save ~1/3 of the cost of short strings.
 */
export interface SlicingBuffer {
  utf8Slice(a: number, b: number): string
  latin1Slice(a: number, b: number): string
}

/** a Buffer view of bytes, typed with its text methods */
export function slicing(bytes: Uint8Array): SlicingBuffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) as unknown as SlicingBuffer
}

export class ProtoError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ProtoError'
  }
}

/**
 * Reads one message (or a sub-range of one). Typical loop:
 *
 *   while (r.pos < end) { const tag = r.tag(); switch (tag >>> 3) { ... default: r.skip(tag & 7) } }
 *
 * Length-delimited fields: `const e = r.lenEnd()` gives the end offset of the field's bytes, which
 * start at `r.pos`; read them, then leave `r.pos = e` (the `*Field` helpers do it).
 */
export class ProtoReader {
  readonly buf: Uint8Array
  pos: number
  /** the end of the buffer range this reader may read */
  end: number
  private view: DataView | undefined
  private text: SlicingBuffer | undefined
  /** the halves of the last `u64Halves()` read */
  lo = 0
  hi = 0

  constructor(buf: Uint8Array, start = 0, end = buf.length) {
    this.buf = buf
    this.pos = start
    this.end = end
  }

  private fail(what: string, at = this.pos): never {
    throw new ProtoError(`protobuf: ${what} at byte ${at}`)
  }

  /** a varint that fits in 32 bits (tags, lengths, uint32, enums; larger values are cut to 32 bits) */
  uint32(): number {
    const b = this.buf
    let p = this.pos
    let c = b[p++]
    if (c < 0x80 && p <= this.end) {
      this.pos = p
      return c
    }
    let v = c & 0x7f
    let shift = 7
    for (;;) {
      if (p >= this.end) this.fail('truncated varint', this.pos)
      c = b[p++]
      if (shift < 28) v |= (c & 0x7f) << shift
      else if (shift === 28) v = (v | ((c & 0x0f) << 28)) >>> 0
      if (c < 0x80) break
      shift += 7
      if (shift > 63) this.fail('varint longer than 10 bytes', this.pos)
    }
    this.pos = p
    return v >>> 0
  }

  /** a varint of up to 64 bits into `lo` / `hi` */
  u64Halves(): void {
    const b = this.buf
    let p = this.pos
    let lo = 0
    let hi = 0
    let shift = 0
    let c: number
    // low 28 bits
    do {
      if (p >= this.end) this.fail('truncated varint', this.pos)
      c = b[p++]
      if (shift < 28) lo |= (c & 0x7f) << shift
      else if (shift === 28) {
        lo |= (c & 0x0f) << 28
        hi = (c & 0x7f) >>> 4
      } else hi |= (c & 0x7f) << (shift - 32)
      shift += 7
      if (shift > 70) this.fail('varint longer than 10 bytes', this.pos)
    } while (c >= 0x80)
    this.pos = p
    this.lo = lo >>> 0
    this.hi = hi >>> 0
  }

  /** a uint64 varint as a number (below 10^15) or a decimal string */
  u64(): U64Value {
    const b = this.buf
    const p = this.pos
    const c = b[p]
    if (c < 0x80 && p < this.end) {
      this.pos = p + 1
      return c
    }
    this.u64Halves()
    return u64FromHalves(this.lo, this.hi)
  }

  /** an int64 varint (two's complement) as a number (|v| below 10^15) or a decimal string */
  i64(): U64Value {
    this.u64Halves()
    return i64FromHalves(this.lo, this.hi)
  }

  bool(): boolean {
    this.u64Halves()
    return this.lo !== 0 || this.hi !== 0
  }

  tag(): number {
    const t = this.uint32()
    if (t >>> 3 === 0) this.fail('field number 0', this.pos - 1)
    return t
  }

  /** reads a length; returns the end offset of the field (its bytes start at `pos`) */
  lenEnd(): number {
    const at = this.pos
    const n = this.uint32()
    const e = this.pos + n
    if (e > this.end) this.fail(`length ${n} past the end (${this.end})`, at)
    return e
  }

  /** a length-delimited field's bytes, as a view (no copy) */
  bytes(): Uint8Array {
    const e = this.lenEnd()
    const v = this.buf.subarray(this.pos, e)
    this.pos = e
    return v
  }

  /** a length-delimited field as UTF-8 text */
  string(): string {
    const e = this.lenEnd()
    const s = this.utf8(this.pos, e)
    this.pos = e
    return s
  }

  /** UTF-8 text of buf[a..b) */
  utf8(a: number, b: number): string {
    if (this.text === undefined) this.text = slicing(this.buf)
    return this.text.utf8Slice(a, b)
  }

  /** a little-endian double (wire type 1) */
  double(): number {
    if (this.pos + 8 > this.end) this.fail('truncated fixed64')
    if (this.view === undefined) this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length)
    const v = this.view.getFloat64(this.pos, true)
    this.pos += 8
    return v
  }

  /** packed repeated uint64 (or a single unpacked value when wire type is VARINT) appended to out */
  packedU64(wireType: number, out: U64Value[]): void {
    if (wireType === VARINT) {
      out.push(this.u64())
      return
    }
    if (wireType !== LEN) this.fail(`wire type ${wireType} for a repeated uint64`)
    const e = this.lenEnd()
    const saved = this.end
    this.end = e // bound the reads to the packed range
    try {
      while (this.pos < e) out.push(this.u64())
    } finally {
      this.end = saved
    }
  }

  /** skips a field of the given wire type */
  skip(wireType: number): void {
    switch (wireType) {
      case VARINT:
        this.u64Halves()
        return
      case FIXED64:
        if (this.pos + 8 > this.end) this.fail('truncated fixed64')
        this.pos += 8
        return
      case LEN:
        this.pos = this.lenEnd()
        return
      case FIXED32:
        if (this.pos + 4 > this.end) this.fail('truncated fixed32')
        this.pos += 4
        return
      default:
        this.fail(`unsupported wire type ${wireType}`)
    }
  }

  /** checks the wire type of a field; throws naming the field otherwise */
  expect(tag: number, wireType: number, field: string): void {
    if ((tag & 7) !== wireType) this.fail(`${field}: wire type ${tag & 7}, expected ${wireType}`)
  }

  /** A reader over buf[pos..e) (a nested message), sharing the buffer. */
  sub(e: number): ProtoReader {
    const r = new ProtoReader(this.buf, this.pos, e)
    this.pos = e
    return r
  }
}

const ENCODER = new TextEncoder()

/** Writes a message; nested messages are written in place and their length inserted on `close`. */
export class ProtoWriter {
  buf: Uint8Array
  pos = 0
  private view: DataView

  constructor(initial = 1024) {
    this.buf = new Uint8Array(initial)
    this.view = new DataView(this.buf.buffer)
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const b = new Uint8Array(size)
    b.set(this.buf.subarray(0, this.pos))
    this.buf = b
    this.view = new DataView(b.buffer)
  }

  /** the written bytes (a copy) */
  finish(): Uint8Array {
    return this.buf.slice(0, this.pos)
  }

  varint32(v: number): void {
    this.ensure(5)
    v >>>= 0
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    this.buf[this.pos++] = v
  }

  /** a 64-bit varint from its halves */
  varint64(lo: number, hi: number): void {
    if (hi === 0) return this.varint32(lo)
    this.ensure(10)
    lo >>>= 0
    hi >>>= 0
    while (hi > 0 || lo >= 0x80) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80
      lo = ((lo >>> 7) | (hi << 25)) >>> 0
      hi >>>= 7
    }
    this.buf[this.pos++] = lo
  }

  tag(field: number, wireType: number): void {
    this.varint32((field << 3) | wireType)
  }

  /** a uint64 / int64 value (number, decimal string or bigint; negative: two's complement) */
  u64Value(v: number | string | bigint): void {
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
      if (v < TWO32) return this.varint32(v)
      return this.varint64(v % TWO32, Math.floor(v / TWO32))
    }
    let b = BigInt(v)
    if (b < 0n) b = (1n << 64n) + b
    if (b < 0n || b >= 1n << 64n) throw new RangeError(`not a 64-bit integer: ${String(v)}`)
    this.varint64(Number(b & 0xffffffffn), Number(b >> 32n))
  }

  /** field: uint64/int64, omitted when 0 (proto3 default) */
  u64Field(field: number, v: number | string | bigint): void {
    if (v === 0 || v === '0' || v === 0n) return
    this.tag(field, VARINT)
    this.u64Value(v)
  }

  /** field: an explicit-presence (`optional`) uint64, written even when 0 */
  u64Present(field: number, v: number | string | bigint): void {
    this.tag(field, VARINT)
    this.u64Value(v)
  }

  /** field: uint32/enum, omitted when 0 */
  u32Field(field: number, v: number): void {
    if (v === 0) return
    this.tag(field, VARINT)
    this.varint32(v)
  }

  boolField(field: number, v: boolean): void {
    if (!v) return
    this.tag(field, VARINT)
    this.varint32(1)
  }

  /** field: double, omitted when 0 or -0 (prost compares with 0.0) */
  doubleField(field: number, v: number): void {
    if (v === 0) return
    this.tag(field, FIXED64)
    this.ensure(8)
    this.view.setFloat64(this.pos, v, true)
    this.pos += 8
  }

  /** field: bytes, written even when empty (for repeated bytes) */
  bytesPresent(field: number, v: Uint8Array): void {
    this.tag(field, LEN)
    this.varint32(v.length)
    this.ensure(v.length)
    this.buf.set(v, this.pos)
    this.pos += v.length
  }

  /** field: bytes, omitted when empty */
  bytesField(field: number, v: Uint8Array): void {
    if (v.length > 0) this.bytesPresent(field, v)
  }

  /** field: string, written even when empty (for repeated string) */
  stringPresent(field: number, s: string): void {
    this.tag(field, LEN)
    const max = s.length * 3
    // reserve the largest length prefix, encode, then move the text if the prefix is shorter
    const lenSize = varintSize(max)
    this.ensure(lenSize + max)
    const start = this.pos + lenSize
    const { written } = ENCODER.encodeInto(s, this.buf.subarray(start))
    const actual = varintSize(written)
    if (actual !== lenSize) this.buf.copyWithin(this.pos + actual, start, start + written)
    this.varint32(written)
    this.pos += written
  }

  /** field: string, omitted when empty */
  stringField(field: number, s: string): void {
    if (s.length > 0) this.stringPresent(field, s)
  }

  /** packed repeated uint64, omitted when empty */
  packedU64(field: number, values: readonly (number | string | bigint)[]): void {
    if (values.length === 0) return
    const start = this.begin()
    for (const v of values) this.u64Value(v)
    this.end(field, start)
  }

  /** starts a nested message: returns its start offset for `end` */
  begin(): number {
    return this.pos
  }

  /** ends a nested message begun at `start`: inserts its tag and length before it */
  end(field: number, start: number): void {
    const len = this.pos - start
    const head = varintSize((field << 3) | LEN) + varintSize(len)
    this.ensure(head)
    this.buf.copyWithin(start + head, start, this.pos)
    const contentEnd = this.pos + head
    this.pos = start
    this.tag(field, LEN)
    this.varint32(len)
    this.pos = contentEnd
  }
}

export function varintSize(v: number): number {
  v >>>= 0
  let n = 1
  while (v >= 0x80) {
    v >>>= 7
    n++
  }
  return n
}
