/**
 * Reading a chunk index: its segments (their index of first and last blocks read when first
 * needed, entries one record at a time) and immutable snapshots of the whole list, which an
 * iteration over chunks uses while appends go on.
 */
import { closeSync, openSync } from 'node:fs'
import { crc32 } from 'node:zlib'
import {
  ChunkIndexError,
  preadAll,
  readEntry,
  recordOk,
  RECORD,
  SEG_HEADER,
  SEG_MAGIC,
  T_ENTRY,
  type ChunkEntry,
} from './records.ts'

export interface SegmentInfo {
  file: string
  count: number
  firstBlock: number
  lastBlock: number
  sha256: string
}

/** the first/last blocks of a segment's entries, read when first needed */
export class Segment {
  first: Float64Array | null = null
  last: Float64Array | null = null
  /** kept open once used: segment files are immutable and never deleted */
  private fd: number | null = null
  constructor(
    readonly info: SegmentInfo,
    /** global index of its first entry */
    readonly base: number,
    readonly path: string,
  ) {}

  index(): { first: Float64Array; last: Float64Array } {
    if (this.first === null || this.last === null) {
      const n = this.info.count
      const b = preadAll(this.open(), this.path, 0, SEG_HEADER + 16 * n)
      if (!b.subarray(0, 8).equals(SEG_MAGIC) || b.readUInt32LE(8) !== n)
        throw new ChunkIndexError(`${this.path}: not the catalogue segment the pointer lists`)
      const idx = b.subarray(SEG_HEADER)
      if (crc32(idx) !== b.readUInt32LE(12)) throw new ChunkIndexError(`${this.path}: index checksum mismatch`)
      const ab = new ArrayBuffer(16 * n)
      new Uint8Array(ab).set(idx)
      this.first = new Float64Array(ab, 0, n)
      this.last = new Float64Array(ab, 8 * n, n)
    }
    return { first: this.first, last: this.last! }
  }

  entry(k: number): ChunkEntry {
    const b = preadAll(this.open(), this.path, SEG_HEADER + 16 * this.info.count + k * RECORD, RECORD)
    if (!recordOk(b, 0) || b[4] !== T_ENTRY) throw new ChunkIndexError(`${this.path}: record ${k} fails its checksum`)
    return readEntry(b, 0)
  }

  private open(): number {
    if (this.fd === null) this.fd = openSync(this.path, 'r')
    return this.fd
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd)
    this.fd = null
  }
}

/**
 * An immutable view of the catalogue at one generation: what an iteration over chunks uses while
 * appends go on (segments and the sealed list only grow; a new tail is a new array).
 */
export class Snapshot {
  readonly count: number
  private readonly segTotal: number
  constructor(
    readonly generation: number,
    private readonly segments: readonly Segment[],
    private readonly sealed: readonly ChunkEntry[],
    private readonly sealedLen: number,
    readonly tail: readonly ChunkEntry[],
  ) {
    const ls = segments[segments.length - 1]
    this.segTotal = ls ? ls.base + ls.info.count : 0
    this.count = this.segTotal + sealedLen + tail.length
  }

  /** sealed entries in all */
  get sealedCount(): number {
    return this.segTotal + this.sealedLen
  }

  entry(i: number): ChunkEntry {
    if (i < 0 || i >= this.count) throw new RangeError(`catalogue entry ${i} of ${this.count}`)
    if (i >= this.segTotal + this.sealedLen) return this.tail[i - this.segTotal - this.sealedLen]
    if (i >= this.segTotal) return this.sealed[i - this.segTotal]
    const s = this.segmentOf(i)
    return s.entry(i - s.base)
  }

  private segmentOf(i: number): Segment {
    let lo = 0
    let hi = this.segments.length - 1
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2)
      if (this.segments[mid].base <= i) lo = mid
      else hi = mid - 1
    }
    return this.segments[lo]
  }

  firstBlockOf(i: number): number {
    if (i >= this.segTotal) return this.entry(i).firstBlock
    const s = this.segmentOf(i)
    return s.index().first[i - s.base]
  }

  lastBlockOf(i: number): number {
    if (i >= this.segTotal) return this.entry(i).lastBlock
    const s = this.segmentOf(i)
    return s.index().last[i - s.base]
  }

  /** index of the first entry whose lastBlock >= n (count when none) */
  atOrAfter(n: number): number {
    // the segment: the first whose last block >= n
    let lo = 0
    let hi = this.segments.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.segments[mid].info.lastBlock < n) lo = mid + 1
      else hi = mid
    }
    if (lo < this.segments.length) {
      const s = this.segments[lo]
      const last = s.index().last
      let a = 0
      let b = s.info.count
      while (a < b) {
        const mid = (a + b) >>> 1
        if (last[mid] < n) a = mid + 1
        else b = mid
      }
      return s.base + a
    }
    lo = this.segTotal
    hi = this.count
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.entry(mid).lastBlock < n) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  first(): ChunkEntry | null {
    return this.count ? this.entry(0) : null
  }

  last(): ChunkEntry | null {
    return this.count ? this.entry(this.count - 1) : null
  }

  /** every entry (reads every segment: for tools and tests) */
  all(): ChunkEntry[] {
    const out: ChunkEntry[] = []
    for (let i = 0; i < this.count; i++) out.push(this.entry(i))
    return out
  }
}
