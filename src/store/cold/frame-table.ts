/**
 * The frame table of a chunk blob (format 4 and later): where each part's frames are stored and how
 * they are compressed, read from the column's footer entry. Apart from frames.ts (which writes and
 * inflates frames) so that the read-ahead thread (prefetch.ts), which frames.ts asks for frames it
 * read ahead, can read the table without importing frames.ts back.
 */

/** log2 of a text part's frame size, the largest frame */
export const TEXT_LOG = 19
/** parts start at multiples of this in the virtual blob (the largest frame) */
export const MAX_FRAME = 1 << TEXT_LOG

/** a frame's compressor (a part's codec, `ColumnBlob.codecs`, `zc` on disk; chunks of format 4 are brotli throughout) */
export const CODEC_BROTLI = 0
export const CODEC_ZSTD = 1

/** The frame table of a format 4 blob, for reads of a few frames. */
export interface Frames {
  /** virtual blob offset of each part (multiples of MAX_FRAME) */
  voff: number[]
  /** per part: log2 frame size, filter, codec, stored offset (in the blob) and signed length of each frame, first crc index */
  parts: { log: number; filter: number; codec: number; at: number[]; len: number[]; crc0: number }[]
  fc: readonly number[]
}

/** what framesOf and unframe read of a column blob's footer entry (chunk-file.ts `ColumnBlob`) */
export interface FramedBlob {
  partLengths: readonly number[]
  frames?: number[][]
  frameCrcs?: number[]
  codecs?: number[]
}

export function framesOf(m: FramedBlob): Frames {
  const voff: number[] = []
  const parts: Frames['parts'] = []
  let v = 0
  let at = 0
  let crc0 = 0
  m.partLengths.forEach((len, i) => {
    voff.push(v)
    v += Math.ceil(len / MAX_FRAME) * MAX_FRAME
    const [log, filter, ...lens] = m.frames![i]
    const ats: number[] = []
    for (const l of lens) {
      ats.push(at)
      at += Math.abs(l)
    }
    parts.push({ log, filter, codec: m.codecs?.[i] ?? CODEC_BROTLI, at: ats, len: lens, crc0 })
    crc0 += lens.length
  })
  return { voff, parts, fc: m.frameCrcs! }
}
