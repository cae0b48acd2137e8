/**
 * A streaming CAR v1 reader: the header (varint length + DAG-CBOR `{roots, version: 1}`), then
 * sections (varint length, CID, node bytes), read from any stream of byte chunks (a file, an HTTP
 * body: source.ts) in one pass. A section is handed over as a view that stays valid until the next
 * one is asked for. Every failure is a `CarError` naming the byte offset where the damage is.
 */
import { createHash } from 'node:crypto'
import { CborError, CborLink, decodeCbor } from './cbor.ts'

/** A damaged or unsupported CAR file: `offset` is the byte position in the file. */
export class CarError extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {
    super(`${reason} (at byte ${offset})`)
  }
}

/** sections longer than this are refused (Old Faithful nodes are far smaller: frames split payloads) */
export const MAX_SECTION_BYTES = 128 * 1024 * 1024
/** multicodec and multihash codes used by Old Faithful */
export const DAG_CBOR = 0x71
export const RAW = 0x55
export const SHA2_256 = 0x12
export const IDENTITY = 0x00

export interface CarHeader {
  roots: Uint8Array[]
  version: number
}

export interface CarSection {
  /** byte offset of the section (its length varint) in the file */
  offset: number
  /** byte offset of the node's bytes */
  dataOffset: number
  /** the CID's bytes */
  cid: Uint8Array
  /** the node's bytes */
  data: Uint8Array
}

/** The parts of CIDv1 bytes, or null when they are not one (`end`: where the CID ends in `b`). */
export function parseCid(
  b: Uint8Array,
  from = 0,
): { codec: number; hashCode: number; digest: Uint8Array; end: number } | null {
  const p = { pos: from }
  const version = varintAt(b, p)
  if (version !== 1) return null
  const codec = varintAt(b, p)
  const hashCode = varintAt(b, p)
  const len = varintAt(b, p)
  if (codec < 0 || hashCode < 0 || len < 0 || p.pos + len > b.length) return null
  return { codec, hashCode, digest: b.subarray(p.pos, p.pos + len), end: p.pos + len }
}

/** an unsigned varint of at most 8 bytes at `p.pos` (advanced), or -1 */
function varintAt(b: Uint8Array, p: { pos: number }): number {
  let n = 0
  let mul = 1
  for (let i = 0; i < 8; i++) {
    if (p.pos >= b.length) return -1
    const x = b[p.pos++]
    n += (x & 0x7f) * mul
    if (x < 0x80) return n
    mul *= 128
  }
  return -1
}

/**
 * Does this look like the start of a CAR v1 file: a varint length, then a DAG-CBOR map holding
 * `roots` and `version`? (For recognizing CAR files by content.)
 */
export function looksLikeCar(head: Uint8Array): boolean {
  const p = { pos: 0 }
  const len = varintAt(head, p)
  if (len < 8 || len > 1 << 20) return false
  const m = head[p.pos]
  if (m !== 0xa1 && m !== 0xa2) return false
  const s = Buffer.from(head.subarray(p.pos, Math.min(head.length, p.pos + len))).toString('latin1')
  return s.includes('version')
}

/** the bytes of a CIDv1 of dag-cbor, sha2-256 (1, 0x71, 0x12, 32, digest) */
const CID_LENGTH = 36

/** a plain Uint8Array view (a Buffer's views are Buffers, slower to make) */
function plain(b: Uint8Array): Uint8Array {
  return Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b
}

function digestMatches(data: Uint8Array, digest: Uint8Array): boolean {
  return createHash('sha256').update(data).digest().equals(digest)
}

/** Buffered reads from a stream of chunks, keeping track of the offset. */
class Input {
  private buf: Uint8Array = new Uint8Array(0)
  private pos = 0
  /** the file offset of buf[0] */
  private base = 0
  private done = false
  private readonly it: AsyncIterator<Uint8Array>

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.it = chunks[Symbol.asyncIterator]()
  }

  get offset(): number {
    return this.base + this.pos
  }

  get available(): number {
    return this.buf.length - this.pos
  }

  /** make `n` bytes available (false: the input ended first) */
  async fill(n: number): Promise<boolean> {
    if (this.available >= n) return true
    const parts: Uint8Array[] = [this.buf.subarray(this.pos)]
    let have = this.available
    while (have < n && !this.done) {
      const r = await this.it.next()
      if (r.done) this.done = true
      else if (r.value.length) {
        parts.push(r.value)
        have += r.value.length
      }
    }
    this.base += this.pos
    this.pos = 0
    this.buf = plain(parts.length === 1 ? parts[0] : Buffer.concat(parts, have))
    return have >= n
  }

  /**
   * The sections wholly in the buffer from the position on, read without waiting (stops before
   * anything unusual: a length or CID the careful path, `readSection`, reads or rejects).
   */
  sections(verify: boolean | undefined): CarSection[] {
    const out: CarSection[] = []
    const b = this.buf
    for (;;) {
      let p = this.pos
      // the section's length: a minimal varint of at most 4 bytes (a section is < 128 MiB)
      let len = 0
      let mul = 1
      for (let i = 0; ; i++) {
        if (i === 4 || p >= b.length) return out
        const x = b[p++]
        len += (x & 0x7f) * mul
        if (x < 0x80) {
          if (x === 0) return out
          break
        }
        mul *= 128
      }
      if (len > MAX_SECTION_BYTES || p + len > b.length || len < CID_LENGTH) return out
      // a CIDv1, dag-cbor, sha2-256 of 32 bytes: these 4 bytes, then the digest
      if (b[p] !== 1 || b[p + 1] !== DAG_CBOR || b[p + 2] !== SHA2_256 || b[p + 3] !== 32) return out
      const offset = this.base + this.pos
      const cid = b.subarray(p, p + CID_LENGTH)
      const data = b.subarray(p + CID_LENGTH, p + len)
      // a node that does not match its CID: the careful path throws, after this batch
      if (verify && !digestMatches(data, cid.subarray(4))) return out
      this.pos = p + len
      out.push({ offset, dataOffset: this.base + p + CID_LENGTH, cid, data })
    }
  }

  /** the next byte, or -1 at the end */
  async byte(): Promise<number> {
    if (this.pos >= this.buf.length && !(await this.fill(1))) return -1
    return this.buf[this.pos++]
  }

  /** `n` bytes (a view); call `fill(n)` first */
  take(n: number): Uint8Array {
    this.pos += n
    return this.buf.subarray(this.pos - n, this.pos)
  }

  async close(): Promise<void> {
    await this.it.return?.()
  }
}

/** a varint length at the input's position: -1 at a clean end (no byte), CarError when bad */
async function readLength(input: Input): Promise<number> {
  const at = input.offset
  let n = 0
  let mul = 1
  for (let i = 0; i < 8; i++) {
    const x = await input.byte()
    if (x < 0) {
      if (i === 0) return -1
      throw new CarError('truncated varint', at)
    }
    n += (x & 0x7f) * mul
    if (x < 0x80) {
      if (x === 0 && i > 0) throw new CarError('bad varint (not minimal)', at)
      return n
    }
    mul *= 128
  }
  throw new CarError('bad varint (too long)', at)
}

export interface ReadCarOptions {
  /** check each node's sha256 against its CID */
  verify?: boolean
}

/**
 * The header and then the sections of a CAR v1 stream (an async generator: the first value is
 * the header, then one section per step; a section's views stay valid until the next step).
 */
export async function* readCar(
  chunks: AsyncIterable<Uint8Array>,
  opts: ReadCarOptions = {},
): AsyncGenerator<CarHeader | CarSection> {
  for await (const v of readCarBatches(chunks, opts)) {
    if (Array.isArray(v)) yield* v
    else yield v
  }
}

/**
 * As `readCar`, the sections in batches: all those wholly read at once (one step per chunk of
 * input rather than per section). A batch's views stay valid until the next step.
 */
export async function* readCarBatches(
  chunks: AsyncIterable<Uint8Array>,
  opts: ReadCarOptions = {},
): AsyncGenerator<CarHeader | CarSection[]> {
  const input = new Input(chunks)
  try {
    const hlen = await readLength(input)
    if (hlen < 0) throw new CarError('empty file (no CAR header)', 0)
    if (hlen > 1 << 20) throw new CarError(`CAR header of ${hlen} bytes (not a CAR file?)`, 0)
    const hat = input.offset
    if (!(await input.fill(hlen))) throw new CarError('truncated CAR header', hat)
    yield parseHeader(input.take(hlen), hat)
    for (;;) {
      const batch = input.sections(opts.verify)
      if (batch.length > 0) yield batch
      const s = await readSection(input, opts)
      if (s === null) return
      yield [s]
    }
  } finally {
    await input.close()
  }
}

/** the next section, waiting for input as needed (null at a clean end); CarError when bad */
async function readSection(input: Input, opts: ReadCarOptions): Promise<CarSection | null> {
  const offset = input.offset
  const len = await readLength(input)
  if (len < 0) return null
  if (len === 0) throw new CarError('empty section', offset)
  if (len > MAX_SECTION_BYTES) throw new CarError(`section of ${len} bytes (damaged length?)`, offset)
  const start = input.offset
  if (!(await input.fill(len))) {
    throw new CarError(`truncated section: ${len} bytes announced, ${input.available} left`, offset)
  }
  const bytes = input.take(len)
  const cid = parseCid(bytes)
  if (!cid) throw new CarError('bad CID (not a CIDv1)', start)
  if (cid.codec !== DAG_CBOR) throw new CarError(`CID codec 0x${cid.codec.toString(16)} (not dag-cbor)`, start)
  if (cid.hashCode !== SHA2_256 || cid.digest.length !== 32)
    throw new CarError(`CID hash 0x${cid.hashCode.toString(16)} (not sha2-256)`, start)
  const data = bytes.subarray(cid.end)
  if (opts.verify && !digestMatches(data, cid.digest))
    throw new CarError('node bytes do not match their CID (sha256)', start + cid.end)
  return { offset, dataOffset: start + cid.end, cid: bytes.subarray(0, cid.end), data }
}

function parseHeader(b: Uint8Array, at: number): CarHeader {
  let v
  try {
    v = decodeCbor(b)
  } catch (e) {
    throw new CarError(`bad CAR header: ${(e as Error).message}`, at + (e instanceof CborError ? e.at : 0))
  }
  if (!v || typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array || v instanceof CborLink)
    throw new CarError('bad CAR header (not a map)', at)
  const version = (v as Record<string, unknown>).version
  if (version === 2) throw new CarError('CAR v2 files are not supported (CAR v1 only)', at)
  if (version !== 1) throw new CarError(`bad CAR header (version ${String(version)})`, at)
  const roots = (v as Record<string, unknown>).roots
  if (!Array.isArray(roots) || !roots.every((r) => r instanceof CborLink))
    throw new CarError('bad CAR header (roots not a list of links)', at)
  return { version, roots: roots.map((r: CborLink) => r.cid) }
}
