/**
 * Reading a chunk file (chunk-file.ts has the layout): its footer (checked against its crc32 and
 * its version), a column blob's parts (checked, inflated or unframed), the prune section or one
 * Bloom filter of it.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { brotliDecompressSync, crc32, inflateRawSync } from 'node:zlib'
import { gatedZlib } from '../../util/zlib-gate.ts'
import { BLOOM_SCHEMES, bloomHas } from './bloom.ts'
import { END_MAGIC, END_MAGIC_BROTLI, MAGIC, READABLE_VERSIONS, TRAILER } from './chunk-format.ts'
import type { ColMeta, Footer } from './chunk-file.ts'
import { decodeColumn, type Decoded } from './encode/decode.ts'
import { unframe } from './frames.ts'
import { align8 } from './offsets.ts'

/** a chunk file whose bytes are not what its footer says (or not a chunk file) */
export class CorruptChunkError extends Error {}

/** Read and check the footer of a chunk file. */
/** a chunk file's footer, the file's size and the footer's size as JSON text (bytes) */
export function readFooter(path: string): { footer: Footer; size: number; jsonBytes: number } {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    if (size < MAGIC.length + TRAILER) throw new CorruptChunkError(`${path}: too short`)
    const tailLen = Math.min(size, 64 * 1024)
    const tail = Buffer.allocUnsafe(tailLen)
    readExact(fd, tail, 0, tailLen, size - tailLen, path)
    const tr = tail.subarray(tailLen - TRAILER)
    const brotli = tr.subarray(8).equals(END_MAGIC_BROTLI)
    if (!brotli && !tr.subarray(8).equals(END_MAGIC)) throw new CorruptChunkError(`${path}: bad trailer`)
    const flen = tr.readUInt32LE(0)
    const fcrc = tr.readUInt32LE(4)
    if (flen + TRAILER + MAGIC.length > size) throw new CorruptChunkError(`${path}: bad footer length`)
    let fj: Buffer
    if (flen + TRAILER <= tailLen) fj = tail.subarray(tailLen - TRAILER - flen, tailLen - TRAILER)
    else {
      fj = Buffer.allocUnsafe(flen)
      readExact(fd, fj, 0, flen, size - TRAILER - flen, path)
    }
    if (crc32(fj) !== fcrc) throw new CorruptChunkError(`${path}: footer checksum mismatch`)
    if (brotli) {
      const z = fj
      fj = gatedZlib(() => brotliDecompressSync(z))
    }
    const footer = JSON.parse(fj.toString('utf8')) as Footer
    if (!READABLE_VERSIONS.includes(footer.v)) {
      throw new CorruptChunkError(
        `${path}: chunk format version ${JSON.stringify(footer.v)} is not supported (reads ${READABLE_VERSIONS.join(', ')})`,
      )
    }
    return { footer, size, jsonBytes: fj.byteLength }
  } finally {
    closeSync(fd)
  }
}

function readExact(fd: number, buf: Uint8Array, off: number, len: number, pos: number, path: string): void {
  let done = 0
  while (done < len) {
    const n = readSync(fd, buf, off + done, len - done, pos + done)
    if (n === 0) throw new CorruptChunkError(`${path}: unexpected end of file`)
    done += n
  }
}

/**
 * Read one blob and split it into its raw parts, verifying its crc unless `verified` (the caller
 * already checked this blob of this immutable file once).
 */
export function readBlob(path: string, fd: number | null, m: ColMeta, verified = false): Uint8Array[] {
  const own = fd === null
  const h = own ? openSync(path, 'r') : fd
  let buf: Uint8Array
  try {
    // a fresh ArrayBuffer: offset 0, so 8-aligned parts give aligned typed-array views
    // (not zero-filled: every byte is read)
    const b = Buffer.allocUnsafeSlow(m.l)
    buf = new Uint8Array(b.buffer, b.byteOffset, m.l)
    readExact(h, buf, 0, m.l, m.o, path)
  } finally {
    if (own) closeSync(h)
  }
  if (!verified && crc32(buf) !== m.c) throw new CorruptChunkError(`${path}: column checksum mismatch at offset ${m.o}`)
  if (m.fr)
    return unframe(buf, m, (why) => new CorruptChunkError(`${path}: column at offset ${m.o}: ${why}`), {
      path,
      blob: m.o,
    })
  if (m.z) {
    const raw = gatedZlib(() => inflateRawSync(buf))
    buf = raw.byteOffset % 8 === 0 ? raw : new Uint8Array(raw)
  }
  const parts: Uint8Array[] = []
  let k = 0
  for (const len of m.p) {
    parts.push(new Uint8Array(buf.buffer, buf.byteOffset + k, len))
    k += align8(len)
  }
  return parts
}

export function decodeBlob(path: string, fd: number | null, m: ColMeta, n: number, verified = false): Decoded {
  return decodeColumn(m.e, n, readBlob(path, fd, m, verified), m.w, m.v)
}

export function readPrune(path: string, footer: Footer): Map<string, Uint8Array> {
  const { o, l, c, f } = footer.prune
  const buf = new Uint8Array(new ArrayBuffer(l))
  const fd = openSync(path, 'r')
  try {
    readExact(fd, buf, 0, l, o, path)
  } finally {
    closeSync(fd)
  }
  if (crc32(buf) !== c) throw new CorruptChunkError(`${path}: prune section checksum mismatch`)
  const out = new Map<string, Uint8Array>()
  if (!BLOOM_SCHEMES.includes(footer.prune.h ?? 0)) return out // unknown hashing: no filter, every answer "maybe"
  for (const [key, [off, len]] of Object.entries(f)) out.set(key, buf.subarray(off, off + len))
  return out
}

/**
 * One Bloom filter (`kind.field`) of a format 3 file, read alone and checked with its own crc32;
 * undefined when the file has no per-filter checksums (read the whole section with `readPrune`),
 * null when there is no usable filter for that key (every answer "maybe").
 */
export function readBloom(path: string, fd: number | null, footer: Footer, key: string): Uint8Array | null | undefined {
  const { o, f, h } = footer.prune
  const e = f[key]
  if (e !== undefined && e.length !== 3) return undefined
  if (e === undefined || !BLOOM_SCHEMES.includes(h ?? 0)) return null
  const [off, len, c] = e
  const buf = new Uint8Array(new ArrayBuffer(len))
  const own = fd === null
  const h2 = own ? openSync(path, 'r') : fd
  try {
    readExact(h2, buf, 0, len, o + off, path)
  } finally {
    if (own) closeSync(h2)
  }
  if (crc32(buf) !== c) throw new CorruptChunkError(`${path}: Bloom filter ${key} checksum mismatch`)
  return buf
}

export function bloomMayContain(
  bits: Uint8Array | null | undefined,
  values: ReadonlySet<string>,
  scheme: number | undefined,
): boolean {
  if (!bits) return true
  for (const v of values) if (bloomHas(bits, v, scheme ?? 1)) return true
  return false
}
