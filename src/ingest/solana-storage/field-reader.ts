/**
 * The field level of the solana-storage decoders: a `ProtoReader` with the typed reads the message
 * decoders (decode-transaction.ts, decode-meta.ts, decode.ts) are written with, each checking the
 * wire type and naming the field in its error; the base58 text of keys and instruction data
 * through the thread's text cache (text-cache.ts).
 */
import { base58Encode } from '../../util/base58.ts'
import { discriminatorsOfBytes, type Discriminators } from '../../normalize/data.ts'
import { BASE58_TEXTS } from './text-cache.ts'
import { LEN, ProtoError, ProtoReader, VARINT, type U64Value } from './wire.ts'

export class FieldReader {
  readonly r: ProtoReader
  /**
   * instructions come with their `discriminators` (src/normalize/data.ts `DecodedInstruction`), for
   * a normalizer that then does not decode their data's base58 again; off, they have exactly the
   * members of the node's `getBlock` JSON
   */
  withDiscriminators = false

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.r = new ProtoReader(bytes, start, end)
  }

  fail(what: string): never {
    throw new ProtoError(`protobuf: ${what} at byte ${this.r.pos}`)
  }

  /**
   * Points the decoder at the message in bytes[start, end) of its buffer, for the next call of a
   * message method: one decoder serves every message embedded in a larger one, e.g.
   * `d.range(a, b).transaction()` then `d.range(c, e).meta()` per transaction of a Geyser block.
   */
  range(start: number, end: number): this {
    if (start < 0 || end > this.r.buf.length || start > end)
      throw new ProtoError(`protobuf: bad range [${start}, ${end})`)
    this.r.pos = start
    this.r.end = end
    return this
  }

  /** enters a length-delimited field: returns the enclosing end to pass to `leave` */
  enter(tag: number, field: string): number {
    this.r.expect(tag, LEN, field)
    const e = this.r.lenEnd()
    const saved = this.r.end
    this.r.end = e
    return saved
  }

  leave(saved: number): void {
    this.r.end = saved
  }

  /** reads the nested message of a length-delimited field with `read` */
  sub<T>(tag: number, field: string, read: (d: this) => T): T {
    const saved = this.enter(tag, field)
    const v = read(this)
    this.leave(saved)
    return v
  }

  /**
   * base58 of a length-delimited bytes field; `size` > 0: the field must have that many bytes (keys
   * 32, signatures 64)
   */
  base58Field(tag: number, field: string, size = 0): string {
    this.r.expect(tag, LEN, field)
    const r = this.r
    const e = r.lenEnd()
    const a = r.pos
    if (size > 0 && e - a !== size) this.fail(`${field}: ${e - a} bytes, expected ${size}`)
    r.pos = e
    // keys and much instruction data repeat; signatures (64 bytes) never do
    return e - a === 64 ? base58Encode(r.buf, a, e) : repeatedText(r.buf, a, e)
  }

  /**
   * Instruction data (base58) and, when `withDiscriminators` is set, its d1..d8 and dataPrefix from
   * its bytes (src/normalize/data.ts), kept with its text in the thread's cache: into `out`.
   */
  dataField(tag: number, out: { data: string; discriminators: Discriminators | undefined }): void {
    this.r.expect(tag, LEN, 'data')
    const r = this.r
    const e = r.lenEnd()
    const a = r.pos
    r.pos = e
    out.data = repeatedText(r.buf, a, e)
    if (this.withDiscriminators) out.discriminators = instructionDataDiscriminators(r.buf, a, e)
  }

  /** a 32-byte key field (account keys, loaded addresses, return data program) as base58 */
  keyField(tag: number, field: string): string {
    return this.base58Field(tag, field, 32)
  }

  bytesField(tag: number, field: string): Uint8Array {
    this.r.expect(tag, LEN, field)
    return this.r.bytes()
  }

  /** a bytes field as a list of numbers (instruction accounts, lookup indexes) */
  u8List(tag: number, field: string): number[] {
    this.r.expect(tag, LEN, field)
    const r = this.r
    const e = r.lenEnd()
    const out: number[] = []
    for (let p = r.pos; p < e; p++) out.push(r.buf[p])
    r.pos = e
    return out
  }

  stringField(tag: number, field: string): string {
    this.r.expect(tag, LEN, field)
    return this.r.string()
  }

  u32Field(tag: number, field: string): number {
    this.r.expect(tag, VARINT, field)
    return this.r.uint32()
  }

  /** a uint32 that agave narrows to a u8 (`as u8`: the low 8 bits) before rendering */
  u8Field(tag: number, field: string): number {
    return this.u32Field(tag, field) & 0xff
  }

  u64Field(tag: number, field: string): U64Value {
    this.r.expect(tag, VARINT, field)
    return this.r.u64()
  }

  boolField(tag: number, field: string): boolean {
    this.r.expect(tag, VARINT, field)
    return this.r.bool()
  }

  /** a message of one uint64/int64 field (UnixTimestamp, BlockHeight, NumPartitions) */
  wrappedU64(tag: number, field: string, signed: boolean): U64Value {
    const saved = this.enter(tag, field)
    let v: U64Value = 0
    while (this.r.pos < this.r.end) {
      const t = this.r.tag()
      if (t >>> 3 === 1) {
        this.r.expect(t, VARINT, field)
        v = signed ? this.r.i64() : this.r.u64()
      } else this.r.skip(t & 7)
    }
    this.leave(saved)
    return v
  }
}

/**
 * the base58 text of bytes that may repeat (instruction data, keys), buf[a, e): through the
 * thread's text cache, but for values of 0 or 1 byte
 */
export function repeatedText(buf: Uint8Array, a: number, e: number): string {
  return e - a < 2 ? base58Encode(buf, a, e) : BASE58_TEXTS.of(buf, a, e)
}

/**
 * d1..d8 and dataPrefix of instruction data buf[a, e) (src/normalize/data.ts), called right after
 * `repeatedText` of the same bytes: kept with their text in the thread's cache
 */
export function instructionDataDiscriminators(buf: Uint8Array, a: number, e: number): Discriminators {
  if (e - a < 2) return discriminatorsOfBytes(buf, a, e)
  let p = BASE58_TEXTS.lastExtra() as Discriminators | undefined
  if (p === undefined) {
    p = discriminatorsOfBytes(buf, a, e)
    BASE58_TEXTS.setLastExtra(p)
  }
  return p
}
