/**
 * A minimal DAG-CBOR decoder (RFC 8949 as restricted by the DAG-CBOR codec): definite lengths
 * only, the one tag 42 (a link: `0x00` + CID bytes), no undefined. Enough for the nodes of Old
 * Faithful CAR files (node kinds in nodes.ts) and the CAR header.
 *
 * Values: unsigned and negative integers as numbers when safe, bigints beyond; byte strings as
 * views of the input (no copy); text as strings; arrays; maps as plain objects (text keys);
 * links as `CborLink`; true, false, null; floats as numbers.
 */

/** A CBOR tag 42 link: the CID's bytes (without the leading 0x00), a view of the input. */
export class CborLink {
  constructor(readonly cid: Uint8Array) {}
}

export type CborValue =
  number | bigint | string | boolean | null | Uint8Array | CborLink | CborValue[] | { [k: string]: CborValue }

/** A malformed DAG-CBOR value: `at` is the byte position in the decoded bytes. */
export class CborError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message)
  }
}

const text = new TextDecoder('utf-8', { fatal: true })
/** arrays and maps nest at most this deep (a hostile input must not exhaust the stack) */
const MAX_DEPTH = 64

/** Decodes DAG-CBOR bytes: one value that must fill `bytes` exactly. */
export function decodeCbor(bytes: Uint8Array): CborValue {
  const d = new CborDecoder(bytes)
  const v = d.value(0)
  if (d.pos !== bytes.length) throw new CborError(`${bytes.length - d.pos} bytes after the value`, d.pos)
  return v
}

class CborDecoder {
  pos = 0
  private readonly view: DataView
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  private need(n: number): void {
    if (this.pos + n > this.bytes.length) throw new CborError('truncated CBOR value', this.pos)
  }

  /** the argument of an initial byte (info = its low 5 bits): a number, or a bigint beyond 2^53 */
  private arg(info: number, at: number): number | bigint {
    if (info < 24) return info
    switch (info) {
      case 24:
        this.need(1)
        return this.bytes[this.pos++]
      case 25:
        this.need(2)
        this.pos += 2
        return this.view.getUint16(this.pos - 2)
      case 26:
        this.need(4)
        this.pos += 4
        return this.view.getUint32(this.pos - 4)
      case 27: {
        this.need(8)
        const hi = this.view.getUint32(this.pos)
        const lo = this.view.getUint32(this.pos + 4)
        this.pos += 8
        if (hi < 0x200000) return hi * 0x100000000 + lo
        return (BigInt(hi) << 32n) | BigInt(lo)
      }
      default:
        throw new CborError(info === 31 ? 'indefinite length (not DAG-CBOR)' : `bad additional info ${info}`, at)
    }
  }

  /** a length: a safe number that fits in what is left (each item takes at least a byte) */
  private length(info: number, at: number): number {
    const n = this.arg(info, at)
    if (typeof n !== 'number' || n > this.bytes.length - this.pos)
      throw new CborError(`length ${n} beyond the input`, at)
    return n
  }

  value(depth: number): CborValue {
    const at = this.pos
    this.need(1)
    const ib = this.bytes[this.pos++]
    const major = ib >> 5
    const info = ib & 31
    switch (major) {
      case 0:
        return this.arg(info, at)
      case 1: {
        const n = this.arg(info, at)
        return typeof n === 'number' && n < Number.MAX_SAFE_INTEGER ? -1 - n : -1n - BigInt(n)
      }
      case 2: {
        const n = this.length(info, at)
        this.pos += n
        return this.bytes.subarray(this.pos - n, this.pos)
      }
      case 3: {
        const n = this.length(info, at)
        this.pos += n
        try {
          return text.decode(this.bytes.subarray(this.pos - n, this.pos))
        } catch {
          throw new CborError('text string not UTF-8', at)
        }
      }
      case 4: {
        if (depth >= MAX_DEPTH) throw new CborError('nested too deep', at)
        const n = this.length(info, at)
        const out: CborValue[] = new Array(n)
        for (let i = 0; i < n; i++) out[i] = this.value(depth + 1)
        return out
      }
      case 5: {
        if (depth >= MAX_DEPTH) throw new CborError('nested too deep', at)
        const n = this.length(info, at)
        const out: { [k: string]: CborValue } = {}
        for (let i = 0; i < n; i++) {
          const kat = this.pos
          const k = this.value(depth + 1)
          if (typeof k !== 'string') throw new CborError('map key not a text string', kat)
          out[k] = this.value(depth + 1)
        }
        return out
      }
      case 6: {
        const tag = this.arg(info, at)
        if (tag !== 42) throw new CborError(`tag ${tag} (DAG-CBOR has only tag 42)`, at)
        const b = this.value(depth + 1)
        if (!(b instanceof Uint8Array) || b.length < 2 || b[0] !== 0)
          throw new CborError('tag 42 not over 0x00 + CID bytes', at)
        return new CborLink(b.subarray(1))
      }
      default:
        switch (info) {
          case 20:
            return false
          case 21:
            return true
          case 22:
            return null
          case 25: {
            this.need(2)
            this.pos += 2
            return halfToNumber(this.view.getUint16(this.pos - 2))
          }
          case 26:
            this.need(4)
            this.pos += 4
            return this.view.getFloat32(this.pos - 4)
          case 27:
            this.need(8)
            this.pos += 8
            return this.view.getFloat64(this.pos - 8)
          default:
            throw new CborError(`simple value ${info} (not DAG-CBOR)`, at)
        }
    }
  }
}

function halfToNumber(h: number): number {
  const s = h & 0x8000 ? -1 : 1
  const e = (h >> 10) & 0x1f
  const f = h & 0x3ff
  if (e === 0) return s * 2 ** -14 * (f / 1024)
  if (e === 31) return f ? NaN : s * Infinity
  return s * 2 ** (e - 15) * (1 + f / 1024)
}

/** The bytes of unsigned varint `n` (LEB128, as CAR and multiformats use). */
export function encodeVarint(n: number): Uint8Array {
  const out: number[] = []
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80)
    n = Math.floor(n / 0x80)
  }
  out.push(n)
  return Uint8Array.from(out)
}
