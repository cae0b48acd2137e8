/**
 * The fixed bytes of a chunk file (chunk-file.ts has the layout): its magic, the trailer after
 * the footer, and the page size of format 3's page checksums.
 */
import { crc32 } from 'node:zlib'

export const MAGIC = Buffer.from('SPCOLD01', 'latin1')
export const END_MAGIC = Buffer.from('SPCOLDZZ', 'latin1')
/** format 4: the footer is brotli-compressed JSON (its crc32 is that of the stored bytes) */
export const END_MAGIC_BROTLI = Buffer.from('SPCOLDZB', 'latin1')
/** u32 footer length, u32 crc32 of the footer, end magic */
export const TRAILER = 16

/** chunk format versions read (chunk-file.ts `FORMAT_VERSION` has what each added) */
export const READABLE_VERSIONS: readonly number[] = [1, 2, 3, 4, 5]

/** the page of `ColMeta.pc` checksums (format 3) */
export const CRC_PAGE = 16384

/** crc32 of each CRC_PAGE bytes of `b` (format 3's `pc`) */
export function pageCrcs(b: Uint8Array): number[] {
  const out: number[] = []
  for (let a = 0; a < b.byteLength; a += CRC_PAGE) out.push(crc32(b.subarray(a, Math.min(b.byteLength, a + CRC_PAGE))))
  return out
}

/** crc32 of byte arrays back to back */
export function crc32Of(bufs: readonly Uint8Array[]): number {
  let c = 0
  for (const b of bufs) c = crc32(b, c)
  return c
}
