/**
 * The text of byte strings that repeat, remembered by their bytes: the base58 of account keys,
 * blockhashes and instruction data, for the wire-format transactions of CAR files (src/ingest/car)
 * and the protobuf messages of Geyser and of CAR metadata (this folder). A block names the same
 * programs and accounts again and again, and so do the blocks after it: one cache per thread
 * (`BASE58_TEXTS`) serves every block, so a repeated value costs a hash and a compare instead of
 * its encoding, and is the same string object each time (whose hash the chunk's interner then
 * computes once). Signatures never repeat and are not put in it.
 *
 * An open-addressing table keyed by a copy of the bytes (the cache does not keep the caller's
 * buffers alive); when it holds `MAX_ENTRIES` values or `MAX_BYTES` of keys it starts empty again.
 */
import { base58Encode } from '../../util/base58.ts'

/** Entries before the table starts again (a slot count of twice this keeps probes short). */
const MAX_ENTRIES = 1 << 16
/** Bytes of keys before the table starts again. */
const MAX_BYTES = 1 << 22
/** Values longer than this are not remembered (they seldom repeat; their copy would crowd the keys). */
const MAX_LENGTH = 1024

/**
 * A hash of buf[a, e): its length and, from 24 bytes on, its first 16 and last 8 bytes taken as six
 * 32-bit words (keys are random; instruction data may share a prefix); shorter values byte by byte.
 */
function hash(buf: Uint8Array, a: number, e: number): number {
  let h = 0x811c9dc5 ^ (e - a)
  if (e - a >= 24) {
    for (let p = a; p < a + 16; p += 4)
      h = Math.imul(h ^ (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16) | (buf[p + 3] << 24)), 0x01000193)
    for (let p = e - 8; p < e; p += 4)
      h = Math.imul(h ^ (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16) | (buf[p + 3] << 24)), 0x01000193)
  } else for (let p = a; p < e; p++) h = Math.imul(h ^ buf[p], 0x01000193)
  return h ^ (h >>> 15) ^ (h >>> 7)
}

/** `meta` bits of a slot that hold the value's length (MAX_LENGTH fits); the others, its hash's */
const LEN_BITS = 0x7ff // 11 bits

/** base58 text by bytes (see above) */
export class TextCache {
  /**
   * two numbers per slot: the offset + 1 of the key in `keys` (0: empty), and the key's length in
   * the low bits with its hash's high bits above (a probe compares that first): one array, so
   * that a lookup touches one line of it
   */
  private slots = new Int32Array(2 * 1024)
  private text: string[] = new Array<string>(1024)
  /** a value kept with a text by its user (`lastExtra`), by slot */
  private extra: unknown[] = new Array<unknown>(1024)
  /** the slot of the text the last `of` gave (-1: a value not kept) */
  private last = -1
  private count = 0
  private keys = new Uint8Array(1 << 16)
  private keysView = new DataView(this.keys.buffer)
  private used = 0
  /** the buffer the last lookup read, and a view of it (`same`) */
  private lastBuf: Uint8Array | null = null
  private lastView: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0))

  /** the base58 text of buf[a, e), from the table when the same bytes were seen before */
  of(buf: Uint8Array, a: number, e: number): string {
    const len = e - a
    if (len > MAX_LENGTH) {
      this.last = -1
      return base58Encode(buf, a, e)
    }
    const h = hash(buf, a, e)
    const meta = (h & ~LEN_BITS) | len
    const slots = this.slots
    const keys = this.keys
    const mask = (slots.length >>> 1) - 1
    let i = (h >>> 11) & mask
    for (; ; i = (i + 1) & mask) {
      const k = slots[2 * i]
      if (k === 0) break
      if (slots[2 * i + 1] !== meta) continue
      if (this.same(buf, a, len, k - 1)) {
        this.last = i
        return this.text[i]
      }
    }
    const s = base58Encode(buf, a, e)
    this.put(i, buf, a, e, s, meta)
    return s
  }

  /** buf[a, a + len) equals the key at `b` in `keys`: 4 bytes at a time (as words), then the rest */
  private same(buf: Uint8Array, a: number, len: number, b: number): boolean {
    if (buf !== this.lastBuf) {
      this.lastBuf = buf
      this.lastView = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
    }
    const v = this.lastView
    const kv = this.keysView
    let p = 0
    for (; p + 4 <= len; p += 4) if (v.getInt32(a + p) !== kv.getInt32(b + p)) return false
    const keys = this.keys
    for (; p < len; p++) if (keys[b + p] !== buf[a + p]) return false
    return true
  }

  /** remembers `s` for buf[a, e) (its `meta`: see `slots`) in the free slot `i` */
  private put(i: number, buf: Uint8Array, a: number, e: number, s: string, meta: number): void {
    const len = e - a
    if (this.count >= MAX_ENTRIES || this.used + len > MAX_BYTES) {
      this.clear()
      i = this.freeSlot(meta)
    } else if (this.used + len > this.keys.length) {
      const keys = new Uint8Array(Math.min(MAX_BYTES, this.keys.length * 2))
      keys.set(this.keys.subarray(0, this.used))
      this.keys = keys
      this.keysView = new DataView(keys.buffer)
    }
    // a loop, not set(subarray): a view of a Buffer costs more than copying a key's bytes
    const keys = this.keys
    for (let p = 0, o = this.used; p < len; p++) keys[o + p] = buf[a + p]
    this.slots[2 * i] = this.used + 1
    this.slots[2 * i + 1] = meta
    this.text[i] = s
    this.extra[i] = undefined
    this.last = i
    this.used += len
    if (++this.count * 2 > this.slots.length >>> 1) this.grow()
  }

  /** the value kept with the text the last `of` gave (`setLastExtra`), undefined when none */
  lastExtra(): unknown {
    return this.last < 0 ? undefined : this.extra[this.last]
  }

  /** keeps `v` with the text the last `of` gave, for as long as the table keeps that text */
  setLastExtra(v: unknown): void {
    if (this.last >= 0) this.extra[this.last] = v
  }

  /** twice the slots, every entry placed again */
  private grow(): void {
    const slots = this.slots
    const texts = this.text
    const extras = this.extra
    const n = slots.length >>> 1
    this.slots = new Int32Array(4 * n)
    this.text = new Array<string>(2 * n)
    this.extra = new Array<unknown>(2 * n)
    let last = -1
    for (let j = 0; j < n; j++) {
      if (slots[2 * j] === 0) continue
      const i = this.freeSlot(slots[2 * j + 1])
      this.slots[2 * i] = slots[2 * j]
      this.slots[2 * i + 1] = slots[2 * j + 1]
      this.text[i] = texts[j]
      this.extra[i] = extras[j]
      if (j === this.last) last = i
    }
    this.last = last
  }

  /**
   * the free slot where a value of `meta` belongs: probes start at the hash's bits above the
   * length's (21 bits: more than the slots' 2 * MAX_ENTRIES need), which `meta` keeps
   */
  private freeSlot(meta: number): number {
    const mask = (this.slots.length >>> 1) - 1
    let i = (meta >>> 11) & mask
    while (this.slots[2 * i] !== 0) i = (i + 1) & mask
    return i
  }

  /** empty again (the slots keep their number) */
  private clear(): void {
    this.slots.fill(0)
    this.text.fill(undefined as unknown as string)
    this.extra.fill(undefined)
    this.last = -1
    this.count = 0
    this.used = 0
  }
}

/** base58 text of keys, hashes and instruction data, shared by this thread's decoders */
export const BASE58_TEXTS = new TextCache()
