/**
 * The parts of one column blob, read on demand from its immutable chunk file: whole parts, or
 * 16 KiB pages of the blob (format 3: each page checked against its crc32; format 4: the frames
 * holding the pages decompressed, each checked), kept with the column and accounted to the
 * store's cache, or read in passing through the store's scratch pool (`PageIo`).
 */
import { crc32 } from 'node:zlib'
import { view32 } from '../encode/decode.ts'
import { CorruptChunkError } from '../chunk-file.ts'
import { aheadOf, inflateFrame, type Frames } from '../frames.ts'
import { align8, pageOf } from '../offsets.ts'
import { PAGE, standaloneIo, type PageIo } from './page-io.ts'

const NO_BYTES = Buffer.alloc(0)

/** where a blob's bytes are read on demand */
export interface BlobSource {
  path: string
  /** file offset and stored length of the blob */
  start: number
  length: number
  /** crc32 of each CRC_PAGE bytes of the blob (format 3), or null when it was verified whole already */
  crcs: readonly number[] | null
  /** a flag per page: checked already (kept by the chunk across cache evictions; the file is immutable) */
  checked: Uint8Array | null
  /** format 4: the blob is compressed frames; parts sit at `frames.voff` in a virtual blob */
  frames?: Frames
}

/**
 * The parts of one blob: in memory, or read on demand from its (immutable) file, either whole or by
 * 16 KiB pages of the blob, each checked against its crc32 (format 3) when read and kept, so that
 * a repeated query touches memory only. Every byte held is reported through `onGrow` (the store's
 * cache accounts for it and evicts the least recently used columns to stay within its budget).
 */
export class Parts {
  private readonly full: (Uint8Array | undefined)[]
  private readonly v32: (Uint32Array | undefined)[] = []
  /** blob offset of each part (format 4: in the virtual blob of frames.ts) */
  private readonly offs: number[] = []
  private readonly pages = new Map<number, Buffer>()
  /** parts read whole for one use only (`lend`), with their bytes: dropped by `unlend` */
  private readonly lent = new Map<number, number>()
  private held = 0
  /** called with the bytes added to memory */
  onGrow: ((delta: number) => void) | null = null

  constructor(
    /** byte length of each part */
    readonly lens: readonly number[],
    full: readonly Uint8Array[] | null,
    private readonly src: BlobSource | null = null,
    /** the store's descriptors, scratch pages and counters */
    private readonly io: PageIo = standaloneIo(),
  ) {
    this.id = io.partsId()
    this.full = full ? [...full] : new Array(lens.length)
    if (src?.frames) this.offs = src.frames.voff
    else {
      let o = 0
      for (const len of lens) {
        this.offs.push(o)
        o += align8(len)
      }
    }
    if (full) for (const p of full) this.held += p.byteLength
  }

  /** bytes held in memory (whole parts and pages) */
  get bytes(): number {
    return this.held
  }

  /** account for memory held on behalf of this blob (e.g. values parsed from it) */
  account(delta: number): void {
    this.held += delta
    this.onGrow?.(delta)
  }

  /**
   * format 4: virtual pages k..e-1 (inside one part) from the frames holding them, decompressed
   * (each frame's crc32 checked); the other pages of those frames go to the scratch pool
   */
  private readFramed(k: number, e: number, keep: boolean): Buffer {
    const src = this.src!
    const f = src.frames!
    const v0 = k * PAGE
    let i = 0
    while (i + 1 < this.offs.length && this.offs[i + 1] <= v0) i++
    const p = f.parts[i]
    const len = this.lens[i]
    const rel0 = v0 - this.offs[i]
    const rel1 = Math.min(len, e * PAGE - this.offs[i])
    const size = 2 ** p.log
    const j0 = Math.floor(rel0 / size)
    const j1 = Math.floor((rel1 - 1) / size)
    const from = { path: src.path, blob: src.start }
    // the frames decompressed ahead: when they are all of them, the stored bytes are not read
    const ahead: (Buffer | null)[] = []
    let need = false
    for (let j = j0; j <= j1; j++) {
      const r = aheadOf(f, i, j, from) ?? null
      if (r === null) need = true
      ahead.push(r)
    }
    const a = p.at[j0]
    const z = need ? this.io.read(src.path, src.start + a, p.at[j1] + Math.abs(p.len[j1]) - a) : NO_BYTES
    if (need) this.io.countStored(z.length)
    const base = j0 * size
    const out = Buffer.allocUnsafeSlow(Math.min(len, (j1 + 1) * size) - base)
    const fail = (why: string) => new CorruptChunkError(`${src.path}: column at offset ${src.start}: ${why}`)
    for (let j = j0; j <= j1; j++) {
      const s = p.at[j] - a
      const pos = j * size - base
      const zj = need ? z.subarray(s, s + Math.abs(p.len[j])) : NO_BYTES
      inflateFrame(f, i, j, zj, Math.min(len - j * size, size), out, pos, fail, from, ahead[j - j0])
    }
    // the frames' other pages: kept aside for neighbouring reads
    const first = pageOf(this.offs[i] + base, PAGE)
    for (let q = first, o = 0; o < out.length; q++, o += PAGE) {
      if (q >= k && q < e) continue
      const key = this.io.key(this.id, q)
      if (!this.io.scratchHas(key) && !this.pages.has(q))
        this.io.scratchSet(key, Buffer.from(out.subarray(o, Math.min(out.length, o + PAGE))))
    }
    const s = rel0 - base
    const run = s === 0 && rel1 - rel0 === out.length ? out : Buffer.from(out.subarray(s, rel1 - base))
    if (keep) this.account(run.byteLength)
    return run
  }

  /** blob pages k..e-1 read in one piece, each checked */
  private readPages(k: number, e: number, keep = true): Buffer {
    const src = this.src!
    if (src.frames) return this.readFramed(k, e, keep)
    const a = k * PAGE
    const run = this.io.read(src.path, src.start + a, Math.min(src.length, e * PAGE) - a)
    if (src.crcs !== null) {
      const checked = src.checked
      for (let q = k; q < e; q++) {
        if (checked !== null && checked[q] === 1) continue
        const o = (q - k) * PAGE
        if (crc32(run.subarray(o, Math.min(run.length, o + PAGE))) !== src.crcs[q])
          throw new CorruptChunkError(`${src.path}: column checksum mismatch at offset ${src.start + q * PAGE}`)
        if (checked !== null) checked[q] = 1
      }
    }
    if (keep) this.account(run.byteLength)
    return run
  }

  part(i: number): Uint8Array {
    let p = this.full[i]
    // lent until now: kept from here on
    if (p !== undefined) this.lent.delete(i)
    else {
      const o = this.offs[i]
      const len = this.lens[i]
      if (len === 0) return (this.full[i] = new Uint8Array(0))
      const k0 = pageOf(o, PAGE)
      const k1 = pageOf(o + len - 1, PAGE)
      const run = this.readPages(k0, k1 + 1)
      for (let q = k0; q <= k1; q++) {
        if (!this.pages.has(q)) {
          const a = (q - k0) * PAGE
          this.pages.set(q, run.subarray(a, Math.min(run.length, a + PAGE)))
        }
      }
      // a fresh buffer at offset 0 and 8-aligned parts: aligned typed-array views
      p = this.full[i] = new Uint8Array(run.buffer, run.byteOffset + o - k0 * PAGE, len)
    }
    return p
  }

  /**
   * About `reads` values of part i are wanted: read it whole when that is cheaper than reading a
   * page per value (one read costs a few microseconds, about as much as copying ~8 KiB); returns
   * whether it is in memory. `lend`: read for one use only, dropped by `unlend` (unless a reader
   * asks for the part meanwhile).
   */
  prefer(i: number, reads: number, lend = false): boolean {
    if (this.full[i] === undefined && reads * 8192 >= this.lens[i]) {
      if (lend) this.lendPart(i)
      else this.part(i)
    }
    return this.full[i] !== undefined
  }

  /** part i read whole (accounted) for one use, without its pages (see `unlend`) */
  lendPart(i: number): void {
    if (this.full[i] !== undefined || this.lens[i] === 0) return
    const o = this.offs[i]
    const len = this.lens[i]
    const k0 = pageOf(o, PAGE)
    const run = this.readPages(k0, pageOf(o + len - 1, PAGE) + 1)
    this.full[i] = new Uint8Array(run.buffer, run.byteOffset + o - k0 * PAGE, len)
    this.lent.set(i, run.byteLength)
  }

  /** drop the parts lent and not asked for since (their bytes leave the cache's count) */
  unlend(): void {
    for (const [i, bytes] of this.lent) {
      this.full[i] = undefined
      this.v32[i] = undefined
      this.account(-bytes)
    }
    this.lent.clear()
  }

  /**
   * true while reading bytes that are not worth keeping (the random tokens of a dictionary's
   * binary search, the bytes of a row whose value is kept instead): missing pages are read and
   * checked, used, and not kept with the column, only in the store's small scratch pool (`PageIo`)
   */
  transient = false
  /** this blob's id in the scratch pool's keys */
  private readonly id: number

  private transientPage(k: number): Buffer {
    const key = this.io.key(this.id, k)
    let pg = this.io.scratchGet(key)
    if (pg === undefined) {
      pg = this.readPages(k, k + 1, false)
      this.io.scratchSet(key, pg)
    }
    return pg
  }

  /** blob page k (read, with the missing pages after it up to `last`, when not held yet) */
  private page(k: number, last = k): Buffer {
    const pg = this.pages.get(k)
    if (pg !== undefined) return pg
    if (this.transient) return this.transientPage(k)
    const aside = this.io.scratchGet(this.io.key(this.id, k))
    if (aside !== undefined) {
      // read already (a neighbour in the same frame): kept now
      this.pages.set(k, aside)
      this.account(aside.byteLength)
      return aside
    }
    let e = k + 1
    while (e <= last && !this.pages.has(e)) e++
    const run = this.readPages(k, e)
    for (let q = k; q < e; q++) {
      const o = (q - k) * PAGE
      this.pages.set(q, run.subarray(o, Math.min(run.length, o + PAGE)))
    }
    return this.pages.get(k)!
  }

  /** bytes [a, b) of part i as a Buffer (a view when they are in memory in one piece) */
  range(i: number, a: number, b: number): Buffer {
    const p = this.full[i]
    if (p !== undefined) return Buffer.from(p.buffer, p.byteOffset + a, b - a)
    if (b <= a) return Buffer.alloc(0)
    const o = this.offs[i]
    const k0 = pageOf(o + a, PAGE)
    const k1 = pageOf(o + b - 1, PAGE)
    if (k0 === k1) return this.page(k0).subarray((o + a) % PAGE, ((o + b - 1) % PAGE) + 1)
    const out = Buffer.allocUnsafe(b - a)
    let w = 0
    for (let k = k0; k <= k1; k++) {
      const pg = this.page(k, k1)
      const s = k === k0 ? (o + a) % PAGE : 0
      const e = k === k1 ? ((o + b - 1) % PAGE) + 1 : pg.length
      pg.copy(out, w, s, e)
      w += e - s
    }
    return out
  }

  u32(i: number, k: number): number {
    let v = this.v32[i]
    if (v === undefined) {
      const p = this.full[i]
      if (p === undefined) {
        const pos = this.offs[i] + k * 4
        return this.page(pageOf(pos, PAGE)).readUInt32LE(pos % PAGE)
      }
      v = this.v32[i] = view32(p)
    }
    return v[k]
  }

  /** two consecutive u32 (k, k + 1) */
  u32Pair(i: number, k: number, out: Uint32Array): void {
    out[0] = this.u32(i, k)
    out[1] = this.u32(i, k + 1)
  }

  /** element k of a part of w-byte unsigned elements */
  uw(i: number, k: number, w: number): number {
    const p = this.full[i]
    if (p !== undefined) {
      if (w === 1) return p[k]
      if (w === 2) return p[2 * k] | (p[2 * k + 1] << 8)
      return this.u32(i, k)
    }
    const pos = this.offs[i] + k * w
    const pg = this.page(pageOf(pos, PAGE))
    const o = pos % PAGE
    return w === 1 ? pg[o] : w === 2 ? pg.readUInt16LE(o) : pg.readUInt32LE(o)
  }
}
