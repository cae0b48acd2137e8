/**
 * Compressed frames (chunk formats 4 and 5): each part of a column blob (encode/column.ts) is cut into
 * frames of 2^log raw bytes (the last one shorter), and each frame is compressed on its own (zstd
 * or brotli, see Codecs below), after a filter that suits the part: `delta32` for token offsets
 * (equal steps: one repeated word), zigzag deltas with the bytes grouped by significance for the
 * other u32 parts that ascend or change little from one row to the next (row and posting offsets,
 * posting rows, transaction and log indexes, decimals), so the compressor sees runs of zero high
 * bytes and small repeated numbers. The filter of each part is in the footer (`fr`), so a reader
 * undoes whatever a writer chose: chunks written before used plain deltas for the offsets and
 * zigzag deltas without grouping for u32 columns. A frame that does not shrink is stored as is.
 *
 * A reader decompresses only the frames holding the bytes it wants, so a selective query still
 * reads a few kilobytes of a column (raw/parts.ts `Parts`); a whole-column decode decompresses them all.
 *
 * For page reads the raw parts are laid out in a virtual blob where each part starts at a multiple
 * of MAX_FRAME: a 16 KiB page of it never straddles two parts or two frames.
 *
 * Codecs (`framing`; each part's codec is in the footer, `zc`, format 5; format 4 is brotli
 * throughout): text parts (dictionaries, plain strings; 512 KiB frames) in zstd level 2, JSON
 * columns (one 8 MiB frame) in zstd level 9, binary parts (codes, offsets, postings, positions;
 * 64 KiB frames) in brotli quality 5 (4 for list posting offsets and rows, POSTINGS_QUALITY).
 * zstd is libzstd's native build where its prebuilt addon loads, else the WebAssembly build
 * (src/util/zstd.mjs). Both decompress synchronously, as the read path needs. The native one also
 * compresses on the thread pool, so a serving main thread writes zstd frames there as it does
 * brotli ones; the WebAssembly one runs only in the calling thread, so with it a serving main
 * thread, which must not wait ~0.2 s for a JSON frame, compresses every part in brotli on the
 * thread pool instead (`zstdHere`). Readers decode either. Measured with the WebAssembly build
 * (the native one takes 0.4-0.65x its time for the same levels, src/util/zstd.mjs) on the first
 * chunk of the import bench's archive (21 generated blocks of 1,500 transactions, generator
 * version 2: random addresses and signatures, as real ones) and on the mainnet block, every frame
 * compressed again in one thread, two rounds:
 *
 *   | per part class     | generated chunk: bytes, ms | mainnet block: bytes, ms |
 *   | text, brotli q5    | 9.81 MB, 381               | 399.8 KB, 14             |
 *   | text, zstd 2       | 9.74 MB, 68                | 404.4 KB, 5-14           |
 *   | text, zstd 3       | 9.91 MB, 109               | 404.6 KB, 8              |
 *   | text, zstd 9       | 9.61 MB, 439               | 395.7 KB, 22             |
 *   | JSON, brotli q6    | 2.90 MB, 356               | 47.2 KB, 3               |
 *   | JSON, zstd 9       | 2.79 MB, 196               | 47.3 KB, 2               |
 *   | binary, brotli q5  | 3.39 MB, 176               | 135.3 KB, 11             |
 *   | binary, zstd 3 / 6 | 3.68 / 3.50 MB, 90 / 215   | 144.5 / 137.9 KB, 9 / 11 |
 *
 * So the chunk's compression CPU is 0.48x (914 → 440 ms) for 1 % fewer bytes (16.10 →
 * 15.92 MB), and 0.74x on the mainnet block for 0.8 % more bytes; zstd frames also decompress
 * faster (all frames of the chunk: 66 ms against 101). Level 2 for text stores less than level 3 of
 * the generated text (9.95 against 10.14 MB on the next chunk too) and as much of the mainnet
 * block's, in two thirds of the time. The parts brotli keeps are those where its context modelling
 * of small integers wins 3-9 %. Text at quality 5 uses a 64 KiB window (TEXT_LGWIN) where it is
 * still brotli; higher brotli qualities gain under 1 % for up to 2x the time. Earlier figures
 * (format 4's choice of brotli over zstd 9: 8.9 against 11.8 MB for a 41.6 MB chunk) were measured
 * on the generator's version 1, whose addresses and signatures were text copied from a small pad:
 * long matches real data does not have, which brotli's larger window found.
 *
 * On the main thread, frames are compressed on libuv's thread pool (`brotliCompress`, and the
 * native zstd's asynchronous call), two at a time (COMPRESS_AHEAD), so a chunk's encoding goes on
 * in JS while earlier columns compress (the server's event loop is never blocked for a chunk). A
 * worker thread (import workers, the live follower's cold writer) compresses in its own thread
 * (`brotliCompressSync`): it has the other threads to overlap with, and the same frames cost less
 * CPU than through the pool (no stream and callback per frame; encoding a 21-block chunk in a
 * worker thread, median of 10 alternating rounds on the shared 2-core box: 122 ms of CPU per block
 * instead of 128). Both compress a frame in one FINISH operation over the whole input, so they
 * write the same bytes (`test/cold-frames.test.ts`; a stream's default, a PROCESS operation then a
 * FINISH, cuts some frames differently).
 */
import { isMainThread } from 'node:worker_threads'
import { brotliCompress, brotliCompressSync, brotliDecompressSync, constants, crc32 } from 'node:zlib'
import { zstdBuild, zstdCompressAsync, zstdCompressSync, zstdDecompressSync } from '../../util/zstd.mjs'
import { gatedZlib } from '../../util/zlib-gate.ts'
import type { Enc } from './encode/encoded.ts'
import { align8 } from './offsets.ts'
import { noteFrame, takePrefetched } from './prefetch.ts'
import { CODEC_BROTLI, CODEC_ZSTD, framesOf, MAX_FRAME, TEXT_LOG, type FramedBlob, type Frames } from './frame-table.ts'

export { CODEC_BROTLI, CODEC_ZSTD, MAX_FRAME, framesOf, type Frames } from './frame-table.ts'

/** frame of a part: log2 of its raw size (text parts: TEXT_LOG, frame-table.ts) */
const DATA_LOG = 16
/** JSON columns are only ever read whole: one big frame (brotli's window is 16 MiB at most) */
const WHOLE_LOG = 23

export const FILTER_NONE = 0
/** u32 deltas (wrapping): for ascending parts */
export const FILTER_DELTA32 = 1
/** u32 deltas as signed, zigzag-mapped (small steps either way stay small); written by earlier versions */
export const FILTER_ZIGZAG32 = 2
/** zigzag deltas, then the bytes grouped by significance (the high bytes, mostly zero, together) */
export const FILTER_ZIGZAG32_SHUFFLE = 3

/**
 * zstd levels of text parts and of JSON columns, where they take zstd (`zstdHere`); binary parts
 * stay brotli. See the head comment for the measurements.
 */
const TEXT_ZSTD_LEVEL = 2
const WHOLE_ZSTD_LEVEL = 9

/** brotli quality of text parts, of JSON columns (one whole frame) and of binary parts (see above) */
const TEXT_QUALITY = 5
const WHOLE_QUALITY = 6
const DATA_QUALITY = 5
/**
 * brotli window (log2) of text parts: 64 KiB, an eighth of their frame. Their text is a column's
 * distinct values in byte order, where a value's near twins sit next to it; with the frame-sized
 * window (1 MiB) brotli's quality 5-6 searches ~1.6x as long for matches that are not there
 * (addresses, signatures: random base58). Measured on the first 21-block chunk of 1,500-transaction
 * generated blocks (npm run bench -- import's archive shape) and on the mainnet block, all parts
 * of the chunk, brotli in one thread: text at quality 5 with this window stores 0.55 % fewer bytes
 * than quality 6 with the frame's window for 0.79x the CPU (1,149 → 919 ms per chunk), and as
 * many bytes for 0.83x on the mainnet block. Quality 3-4 would halve the time but stores 1.7 % more
 * on the mainnet block (the context modelling of quality 5 and up finds the skew of real
 * addresses' characters); JSON columns at quality 5 store 0.6 % more of the generated blocks.
 */
const TEXT_LGWIN = 16
/**
 * brotli quality of a list column's posting offsets and posting rows (zigzag deltas, bytes
 * grouped): quality 4 stores them in as many bytes as 5 (on a 21-block chunk of 1,500-transaction
 * generated blocks, 903.2 KB at 4 and 906.3 KB at 5) for a quarter of the CPU (2.0 instead of 7.3
 * ms per block, compressed in one thread); for every other binary part 4 stores more (positions
 * 1%, codes 15%), and text at 5 instead of 6 stores 5% more
 */
const POSTINGS_QUALITY = 4

/**
 * zstd level and brotli quality of every part of a transient chunk (chunk-file.ts
 * `WriteOptions.transient`: an unsealed tail chunk, rewritten within a few appends): the least
 * effort, the same codecs and frames (readers see no difference). Nearly every block a live
 * follower moves to the cold store is written unsealed once before it is sealed, so about half of
 * its writer's compression was spent on these; on the soak's 300-transaction blocks
 * (test/realtime-soak-cold.test.ts) a 6-block unsealed chunk takes 17 % more bytes (about 36 KB more).
 */
const TRANSIENT_ZSTD_LEVEL = 1
const TRANSIENT_QUALITY = 1

/** how a part is framed and compressed */
export interface Framing {
  /** log2 of the frame size */
  log: number
  filter: number
  codec: typeof CODEC_BROTLI | typeof CODEC_ZSTD
  /** brotli: quality, zstd: level */
  quality: number
  /** brotli's window (log2) */
  lgwin: number
}

/**
 * How part i of an `e` blob is framed: frame size (log2), filter, codec, its quality and window;
 * `zstd`: whether text and JSON parts may take zstd (see `zstdHere`)
 */
export function framing(e: Enc, i: number, zstd = zstdHere): Framing {
  let text = false
  let filter = FILTER_NONE
  let quality = DATA_QUALITY
  switch (e) {
    case 'dict':
      // text, codes, sorted codes, token offsets
      text = i === 0
      if (i === 3) filter = FILTER_DELTA32
      break
    case 'plain':
      // text, token offsets
      text = i === 0
      if (i === 1) filter = FILTER_DELTA32
      break
    case 'jdict':
    case 'jplain':
      if (i === 0)
        return {
          log: WHOLE_LOG,
          filter: FILTER_NONE,
          codec: zstd ? CODEC_ZSTD : CODEC_BROTLI,
          quality: zstd ? WHOLE_ZSTD_LEVEL : WHOLE_QUALITY,
          lgwin: frameWindow(WHOLE_LOG),
        }
      break
    case 'list':
      // offsets, text, codes, sorted codes, token offsets, posting offsets, posting rows, positions
      text = i === 1
      // token offsets: equal steps (values of one length), which plain deltas make one repeated word
      if (i === 4) filter = FILTER_DELTA32
      // row and posting offsets ascend by small uneven steps; posting rows ascend within each
      // value's list and restart at the next value's
      if (i === 0 || i === 5 || i === 6) filter = FILTER_ZIGZAG32_SHUFFLE
      if (i === 5 || i === 6) quality = POSTINGS_QUALITY
      break
    case 'addr':
      if (i === 0) filter = FILTER_ZIGZAG32_SHUFFLE
      break
    case 'u32':
    case 'ver':
      // transaction indexes ascend; log indexes restart per transaction; block offsets ascend;
      // small numbers (decimals, counts): zigzag deltas with their mostly-zero high bytes together
      if (i === 0) filter = FILTER_ZIGZAG32_SHUFFLE
      break
  }
  if (text)
    return {
      log: TEXT_LOG,
      filter,
      codec: zstd ? CODEC_ZSTD : CODEC_BROTLI,
      quality: zstd ? TEXT_ZSTD_LEVEL : TEXT_QUALITY,
      lgwin: TEXT_LGWIN,
    }
  return { log: DATA_LOG, filter, codec: CODEC_BROTLI, quality, lgwin: frameWindow(DATA_LOG) }
}

/** brotli's window (log2) for frames of 2^log bytes: the frame, within brotli's bounds 16-24 */
function frameWindow(log: number): number {
  return Math.min(24, Math.max(16, log + 1))
}

/** u32 little-endian deltas of the first length & ~3 bytes (wrapping; zigzag-mapped), a copy */
function delta32(b: Uint8Array, zigzag: boolean): Uint8Array {
  const out = new Uint8Array(b.byteLength)
  out.set(b)
  const n = b.byteLength >>> 2
  // a fresh buffer: aligned, so a Uint32Array (little-endian, as every platform Node runs on) is
  // the words without a DataView call per word
  const a = new Uint32Array(out.buffer, 0, n)
  let prev = 0
  if (zigzag)
    for (let i = 0; i < n; i++) {
      const x = a[i]
      const d = (x - prev) | 0
      a[i] = (d << 1) ^ (d >> 31)
      prev = x
    }
  else
    for (let i = 0; i < n; i++) {
      const x = a[i]
      a[i] = x - prev
      prev = x
    }
  return out
}

/**
 * FILTER_ZIGZAG32_SHUFFLE in one pass, a copy: the zigzag deltas of the u32 words of the first
 * length & ~3 bytes (as delta32), byte j of each at [j * n + i] for j = 0..3 (the rest as is)
 */
function zigzagShuffle32(b: Uint8Array): Uint8Array {
  const n = b.byteLength >>> 2
  const out = new Uint8Array(b.byteLength)
  // parts of u32 words are views on aligned arrays; a copy for any other
  const w =
    b.byteOffset % 4 === 0
      ? new Uint32Array(b.buffer, b.byteOffset, n)
      : new Uint32Array(new Uint8Array(b.subarray(0, 4 * n)).buffer)
  const n2 = 2 * n
  const n3 = 3 * n
  let prev = 0
  for (let i = 0; i < n; i++) {
    const x = w[i]
    const d = (x - prev) | 0
    prev = x
    const z = (d << 1) ^ (d >> 31)
    // a byte array stores the low 8 bits
    out[i] = z
    out[n + i] = z >>> 8
    out[n2 + i] = z >>> 16
    out[n3 + i] = z >>> 24
  }
  out.set(b.subarray(4 * n), 4 * n)
  return out
}

/** undo zigzagShuffle32 in place over bytes [pos, pos + len) of out, in one pass */
function unzigzagShuffle32(out: Uint8Array, pos: number, len: number): void {
  const n = len >>> 2
  // a copy (Buffer's slice would be a view)
  const src = new Uint8Array(out.subarray(pos, pos + 4 * n))
  const n2 = 2 * n
  const n3 = 3 * n
  let prev = 0
  let p = pos
  for (let i = 0; i < n; i++) {
    const z = src[i] | (src[n + i] << 8) | (src[n2 + i] << 16) | (src[n3 + i] << 24)
    prev = (prev + ((z >>> 1) ^ -(z & 1))) | 0
    out[p] = prev
    out[p + 1] = prev >>> 8
    out[p + 2] = prev >>> 16
    out[p + 3] = prev >>> 24
    p += 4
  }
}

/** undo delta32 in place over bytes [pos, pos + len) of out */
function undelta32(out: Uint8Array, pos: number, len: number, zigzag: boolean): void {
  const n = len >>> 2
  const a = new DataView(out.buffer, out.byteOffset + pos, len)
  let prev = 0
  for (let i = 0; i < n; i++) {
    const z = a.getUint32(4 * i, true)
    const d = zigzag ? (z >>> 1) ^ -(z & 1) : z
    prev = (prev + d) >>> 0
    a.setUint32(4 * i, prev, true)
  }
}

export interface Framed {
  /** the stored frames, back to back */
  stored: Uint8Array[]
  bytes: number
  /** per part: [log, filter, signed stored length of each frame] */
  fr: number[][]
  /** per part: its codec (CODEC_*); absent when every part is brotli */
  zc?: number[]
  /** crc32 of each stored frame */
  fc: number[]
}

/**
 * frames being compressed on the thread pool by the main thread, at most COMPRESS_AHEAD (the
 * pool's 4 threads also serve the main thread's gunzip and file writes, which must not wait
 * behind them)
 */
const COMPRESS_AHEAD = 2
let compressing = 0
const waiting: (() => void)[] = []

/** brotli parameters of a frame */
function brotliOptions(raw: Uint8Array, quality: number, lgwin: number) {
  return {
    // the output in one piece (no round trip per 16 KiB chunk)
    chunkSize: Math.max(64 * 1024, raw.byteLength + 1024),
    // the whole frame in one operation, as brotliCompressSync does: the same bytes either way
    // (the stream default would process it first and finish after, which cuts it differently)
    flush: constants.BROTLI_OPERATION_FINISH,
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_LGWIN]: lgwin,
      [constants.BROTLI_PARAM_SIZE_HINT]: raw.byteLength,
    },
  }
}

/** whether frames are compressed in the calling thread by default (see `brotli`) */
let compressHere = !isMainThread
/**
 * whether text and JSON parts are compressed with zstd by default (`framing`). Where the native
 * zstd loads (src/util/zstd.mjs), everywhere: a serving main thread compresses its zstd frames on
 * the thread pool as it does brotli ones. With the WebAssembly build, which runs synchronously in
 * the calling thread, only in worker threads and in a process whose main thread serves nobody
 * (`compressInThisThread`; a bulk import asks for it too, chunk-file.ts `WriteOptions.zstd`): a
 * serving main thread then keeps brotli on the thread pool for every part, so its event loop never
 * waits for a frame (a JSON column's 8 MiB frame takes ~0.2 s there).
 */
let zstdHere = !isMainThread || zstdBuild === 'native'

/**
 * Compress frames in the calling thread from now on, also on a main thread, by default (callers
 * that pass no mode): for a process whose main thread serves nobody, which then uses one core at
 * most and less CPU than through the pool. A store says so for its own writes instead
 * (`DiskColdStoreOptions.compressHere`, which the cold store's writer process sets).
 */
export function compressInThisThread(): void {
  compressHere = true
  zstdHere = true
}

/** runs `job` on the thread pool once fewer than COMPRESS_AHEAD of this thread's frames are there */
async function onPool(job: () => Promise<Uint8Array>): Promise<Uint8Array> {
  if (compressing >= COMPRESS_AHEAD) await new Promise<void>((resolve) => waiting.push(resolve))
  compressing++
  try {
    return await job()
  } finally {
    compressing--
    waiting.shift()?.()
  }
}

/**
 * brotli of `raw`: in a worker thread (or after `compressInThisThread`) at once, in this thread;
 * on the main thread on the thread pool, once fewer than COMPRESS_AHEAD of its frames are running
 */
export async function brotli(
  raw: Uint8Array,
  quality: number,
  lgwin: number,
  sync = compressHere,
): Promise<Uint8Array> {
  if (sync) return gatedZlib(() => brotliCompressSync(raw, brotliOptions(raw, quality, lgwin)))
  return onPool(
    () =>
      new Promise<Uint8Array>((resolve, reject) =>
        brotliCompress(raw, brotliOptions(raw, quality, lgwin), (err, z) => (err ? reject(err) : resolve(z))),
      ),
  )
}

/**
 * zstd of `raw` at `level`: in this thread where frames are compressed here (`compressHere`) or
 * the build is WebAssembly (which cannot run elsewhere), else natively on the thread pool like
 * `brotli`
 */
export async function zstdFrame(raw: Uint8Array, level: number, sync = compressHere): Promise<Uint8Array> {
  if (sync || zstdBuild !== 'native') return zstdCompressSync(raw, level)
  return onPool(() => zstdCompressAsync(raw, level))
}

/**
 * Compress the parts of a blob of encoding `e` into frames (`brotli`, `zstdFrame`: in a worker
 * thread one after the other, on the main thread concurrently on the thread pool, but for zstd's
 * WebAssembly build, which runs in this thread).
 */
export async function compressFrames(
  e: Enc,
  parts: readonly Uint8Array[],
  frameLog?: number,
  /** text and JSON parts with zstd (false: brotli throughout, chunk format 4) */
  zstd = zstdHere,
  /** compress in the calling thread (true), or on the thread pool (see `brotli`) */
  here = compressHere,
  /** the least effort (a transient chunk: TRANSIENT_QUALITY) */
  transient = false,
): Promise<Framed> {
  /** each frame: its stored bytes, and whether they are compressed */
  const jobs: Promise<[Uint8Array, boolean]>[] = []
  const fr: number[][] = []
  const zc: number[] = []
  parts.forEach((p, i) => {
    const f = framing(e, i, zstd)
    const { filter, codec } = f
    const quality = !transient ? f.quality : codec === CODEC_ZSTD ? TRANSIENT_ZSTD_LEVEL : TRANSIENT_QUALITY
    const log = frameLog ?? f.log
    // a smaller frame size (tests) never gets a larger window than its frames
    const lgwin = Math.min(f.lgwin, frameWindow(log))
    const size = 2 ** log
    fr.push([log, filter])
    zc.push(codec)
    for (let a = 0; a < p.byteLength; a += size) {
      const part = p.subarray(a, Math.min(p.byteLength, a + size))
      // stored filtered, compressed or not
      const r =
        filter === FILTER_NONE
          ? part
          : filter === FILTER_ZIGZAG32_SHUFFLE
            ? zigzagShuffle32(part)
            : delta32(part, filter !== FILTER_DELTA32)
      const pending = codec === CODEC_ZSTD ? zstdFrame(r, quality, here) : brotli(r, quality, lgwin, here)
      jobs.push(pending.then((z) => (z.byteLength < r.byteLength ? [z, true] : [r, false])))
    }
  })
  const frames = await Promise.all(jobs)
  const stored: Uint8Array[] = []
  const fc: number[] = []
  let bytes = 0
  let k = 0
  parts.forEach((p, i) => {
    const size = 2 ** fr[i][0]
    for (let a = 0; a < p.byteLength; a += size) {
      const [frame, compressed] = frames[k++]
      // the length of a frame stored as is is negative
      fr[i].push(compressed ? frame.byteLength : -frame.byteLength)
      fc.push(crc32(frame))
      stored.push(frame)
      bytes += frame.byteLength
    }
  })
  const out: Framed = { stored, bytes, fr, fc }
  if (zc.some((c) => c !== CODEC_BROTLI)) out.zc = zc
  return out
}

/**
 * Frames decompressed by this thread since it started (reads of format 4 blobs), and their raw
 * bytes: what tests and benches count to see which reads a query really paid for.
 */
export const frameStats = { frames: 0, bytes: 0 }

/**
 * Frame j of part `part` as decompressed ahead (taken: the caller decompresses it with
 * `inflateFrame`, passing it on), or undefined (none, or stored raw: its stored bytes are needed)
 */
export function aheadOf(
  f: Frames,
  part: number,
  j: number,
  src: { path: string; blob: number } | undefined,
): Buffer | undefined {
  const p = f.parts[part]
  return src === undefined || p.len[j] < 0 ? undefined : takePrefetched(src.path, src.blob + p.at[j])
}

/**
 * Decompress frame j of part `p` (its stored bytes `z`, `rawLen` raw bytes) into out at pos;
 * `what` names the blob in errors. The frame's crc32 is checked first.
 */
export function inflateFrame(
  f: Frames,
  part: number,
  j: number,
  z: Uint8Array,
  rawLen: number,
  out: Uint8Array,
  pos: number,
  fail: (why: string) => Error,
  /** the chunk file and file offset of the blob: frames decompressed ahead are taken (prefetch.ts) */
  src?: { path: string; blob: number },
  /**
   * the frame as decompressed ahead, taken by the caller (`aheadOf`; then `z` is not read), or
   * null when the caller found none; undefined: looked up here
   */
  ahead?: Buffer | null,
): void {
  const p = f.parts[part]
  let raw: Uint8Array | undefined = ahead !== undefined ? (ahead ?? undefined) : aheadOf(f, part, j, src)
  // a frame decompressed ahead: the thread checked the stored bytes it read against the same crc32
  if (raw === undefined && crc32(z) !== f.fc[p.crc0 + j]) throw fail('frame checksum mismatch')
  if (src !== undefined) noteFrame(src.path, src.blob, part)
  if (p.len[j] < 0) out.set(z, pos)
  else {
    if (raw === undefined) {
      if (p.codec === CODEC_ZSTD) {
        try {
          raw = zstdDecompressSync(z)
        } catch (e) {
          throw fail(`zstd frame does not decompress: ${(e as Error).message}`)
        }
      } else if (p.codec === CODEC_BROTLI) raw = gatedZlib(() => brotliDecompressSync(z))
      else throw fail(`unknown frame codec ${p.codec}`)
      frameStats.frames++
      frameStats.bytes += raw.byteLength
    }
    if (raw.byteLength !== rawLen) throw fail(`frame decompressed to ${raw.byteLength} bytes, ${rawLen} expected`)
    out.set(raw, pos)
  }
  if (p.filter === FILTER_ZIGZAG32_SHUFFLE) unzigzagShuffle32(out, pos, rawLen)
  else if (p.filter === FILTER_DELTA32 || p.filter === FILTER_ZIGZAG32)
    undelta32(out, pos, rawLen, p.filter === FILTER_ZIGZAG32)
  else if (p.filter !== FILTER_NONE) throw fail(`unknown frame filter ${p.filter}`)
}

/**
 * The raw parts of a whole stored blob (each padded to 8 bytes in one fresh buffer, as the
 * uncompressed formats lay them out).
 */
export function unframe(
  stored: Uint8Array,
  m: FramedBlob,
  fail: (why: string) => Error,
  src?: { path: string; blob: number },
): Uint8Array[] {
  const f = framesOf(m)
  const total = m.partLengths.reduce((s, len) => s + align8(len), 0)
  const buf = new Uint8Array(new ArrayBuffer(total))
  const out: Uint8Array[] = []
  let k = 0
  m.partLengths.forEach((len, i) => {
    const p = f.parts[i]
    const size = 2 ** p.log
    for (let j = 0; j < p.at.length; j++) {
      const a = p.at[j]
      const raw = Math.min(size, len - j * size)
      inflateFrame(f, i, j, stored.subarray(a, a + Math.abs(p.len[j])), raw, buf, k + j * size, fail, src)
    }
    out.push(buf.subarray(k, k + len))
    k += align8(len)
  })
  return out
}
