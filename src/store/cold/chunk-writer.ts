/**
 * Writing a chunk file's bytes (chunk-file.ts has the layout): column blobs one after the other,
 * each 8-byte aligned (format 4: its parts cut into frames compressed on the thread pool, placed
 * in file order once all are encoded; formats 1-3: the parts back to back, deflated when asked and
 * worth it), then the prune section of Bloom filters, the footer and the trailer.
 */
import { createHash } from 'node:crypto'
import { brotliCompressSync, constants, crc32, deflateRawSync } from 'node:zlib'
import type { FieldType } from '../../catalogue.ts'
import { gatedZlib } from '../../util/zlib-gate.ts'
import { buildBloom } from './bloom.ts'
import { crc32Of, END_MAGIC, END_MAGIC_BROTLI, MAGIC, pageCrcs, TRAILER } from './chunk-format.ts'
import type { ColumnBlob, EncodedChunk, Footer, FormatVersion, TableMeta, WriteOptions } from './chunk-file.ts'
import type { Encoded } from './encode/encoded.ts'
import { compressFrames, framing, type Framed } from './frames.ts'
import { footerToDisk } from './footer-keys.ts'
import { align8 } from './offsets.ts'

const ZERO = new Uint8Array(8)

/**
 * Fences of a value-ordered dictionary (format 4): for each frame of its text part, the first
 * code whose token starts in that frame and its value, so a lookup searches one frame's codes.
 */
function fences(enc: Encoded, textLog: number): [number, string][] {
  const toff = enc.parts[enc.e === 'list' ? 4 : 3]
  const off = new Uint32Array(toff.buffer, toff.byteOffset, toff.byteLength / 4)
  const size = 2 ** textLog
  const out: [number, string][] = []
  let last = -1
  for (let c = 0; c + 1 < off.length; c++) {
    const frame = Math.floor(off[c] / size)
    if (frame !== last) {
      out.push([c, enc.distinct![c]])
      last = frame
    }
  }
  return out
}

/** A chunk file's bytes as its columns are encoded, in file order. */
export class ChunkFileWriter {
  private readonly bufs: Uint8Array[] = [MAGIC]
  private pos = MAGIC.length
  /**
   * format 4: blobs whose frames are being compressed (frames.ts, on the thread pool), in file
   * order; their places (o) and frame tables are filled in once all columns are encoded
   */
  private readonly framed: { meta: ColumnBlob; f: Promise<Framed> }[] = []
  private readonly blooms: { key: string; bits: Uint8Array }[] = []
  /** format 4: filters of exactly 10 bits per value (scheme 2); older formats as they were written */
  private readonly bloomScheme: number

  constructor(
    private readonly version: FormatVersion,
    private readonly opts: WriteOptions,
  ) {
    this.bloomScheme = version >= 4 ? 2 : 1
  }

  /** append a blob's stored bytes, then pad the file to 8 bytes */
  private store(blob: readonly Uint8Array[]): void {
    for (const b of blob) {
      this.bufs.push(b)
      this.pos += b.byteLength
    }
    const padding = align8(this.pos) - this.pos
    if (padding) {
      this.bufs.push(ZERO.subarray(0, padding))
      this.pos += padding
    }
  }

  /** a column of declared type `t`, encoded as `enc`: its footer entry (format 4: placed by `finish`) */
  column(enc: Encoded, t: FieldType): ColumnBlob {
    const { version, opts } = this
    const p = enc.parts.map((x) => x.byteLength)
    if (version >= 4) {
      // format 4 readers know brotli frames only
      const zstd = version >= 5 ? opts.zstd : false
      const f = compressFrames(enc.e, enc.parts, opts.frameLog, zstd, opts.compressHere, opts.transient)
      f.catch(() => undefined) // awaited (and reported) in `finish`
      const meta: ColumnBlob = {
        encoding: enc.e,
        type: t,
        offset: 0,
        storedLength: 0,
        partLengths: p,
        crc: 0,
        frames: [],
        frameCrcs: [],
      }
      if (enc.w) meta.width = enc.w
      if (enc.v) meta.validity = enc.v
      if (enc.x) meta.indexParts = enc.x
      if (enc.s) {
        meta.valueOrdered = enc.s
        meta.fences = fences(enc, opts.frameLog ?? framing(enc.e, enc.e === 'list' ? 1 : 0).log)
      }
      this.framed.push({ meta, f })
      return meta
    }
    let raw: Uint8Array
    if (enc.parts.length === 1 && enc.parts[0].byteLength % 8 === 0) raw = enc.parts[0]
    else {
      const total = enc.parts.reduce((s, x) => s + align8(x.byteLength), 0)
      const b = new Uint8Array(total)
      let k = 0
      for (const x of enc.parts) {
        b.set(x, k)
        k += align8(x.byteLength)
      }
      raw = b
    }
    let stored = raw
    let z: 1 | undefined
    if (opts.compress && raw.byteLength >= 4096) {
      const d = gatedZlib(() => deflateRawSync(raw, { level: 1 }))
      if (d.byteLength < raw.byteLength * 0.75) {
        stored = d
        z = 1
      }
    }
    const meta: ColumnBlob = {
      encoding: enc.e,
      offset: this.pos,
      storedLength: stored.byteLength,
      partLengths: p,
      crc: crc32(stored),
    }
    if (z) meta.deflated = z
    if (enc.w) meta.width = enc.w
    if (enc.v) meta.validity = enc.v
    if (enc.x) meta.indexParts = enc.x
    if (version >= 3 && !z) meta.pageCrcs = pageCrcs(stored)
    this.store([stored])
    return meta
  }

  /** the Bloom filter of a pruned field (`kind.field`) over its `n` distinct values */
  bloom(key: string, distinct: Iterable<string>, n: number): void {
    this.blooms.push({ key, bits: buildBloom(distinct, n, this.bloomScheme) })
  }

  /** the framed blobs placed, then the prune section, the footer and the trailer: the file's bytes */
  async finish(
    range: { firstBlock: number; lastBlock: number; blockCount: number },
    header: TableMeta,
    kinds: Record<string, TableMeta>,
  ): Promise<EncodedChunk> {
    const version = this.version
    for (const { meta, f: pending } of this.framed) {
      const f = await pending
      meta.offset = this.pos
      meta.storedLength = f.bytes
      meta.crc = crc32Of(f.stored)
      meta.frames = f.fr
      meta.frameCrcs = f.fc
      if (f.zc) meta.codecs = f.zc
      this.store(f.stored)
    }

    // prune section
    const f: Record<string, [number, number] | [number, number, number]> = {}
    let k = 0
    for (const b of this.blooms) {
      // format 3: each filter's own crc32, so one filter is read and checked without the others
      f[b.key] = version >= 3 ? [k, b.bits.byteLength, crc32(b.bits)] : [k, b.bits.byteLength]
      k += align8(b.bits.byteLength)
    }
    const section = new Uint8Array(k)
    for (const b of this.blooms) section.set(b.bits, f[b.key][0])
    const pruneOff = this.pos
    const bufs = this.bufs
    bufs.push(section)
    this.pos += section.byteLength

    const footer: Footer = {
      v: version,
      firstBlock: range.firstBlock,
      lastBlock: range.lastBlock,
      blockCount: range.blockCount,
      header,
      kinds,
      prune: { o: pruneOff, l: section.byteLength, c: crc32(section), h: this.bloomScheme, f },
    }
    const json = Buffer.from(JSON.stringify(footerToDisk(footer)), 'utf8')
    // format 4: compressed (frame lengths and checksums make it a few kilobytes per chunk)
    const fj =
      version >= 4
        ? gatedZlib(() => brotliCompressSync(json, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }))
        : json
    const trailer = Buffer.alloc(TRAILER)
    trailer.writeUInt32LE(fj.byteLength, 0)
    trailer.writeUInt32LE(crc32(fj), 4)
    ;(version >= 4 ? END_MAGIC_BROTLI : END_MAGIC).copy(trailer, 8)
    bufs.push(fj, trailer)
    this.pos += fj.byteLength + TRAILER

    const h = createHash('sha256')
    for (const b of bufs) h.update(b)
    return { parts: bufs, bytes: this.pos, sha256: h.digest('hex'), footer }
  }
}
