// Compressed frames of chunk format 4 (src/store/cold/frames.ts): compressing on the thread pool
// (the main thread) and in the calling thread (import workers) writes the same bytes, and a chunk
// written before the frame filters changed (zigzag deltas for u32 columns, plain deltas for list and
// address offsets, text at quality 7; test/fixtures/cold/format4-mainnet-before-shuffle.spc, written
// by that writer from the two trimmed mainnet blocks of scripts/gen-cold-fixture.ts) still reads.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { fixtureBlocks } from '../scripts/gen-cold-fixture.ts'
import { REPO_ROOT } from '../src/ingest/sample.ts'
import { base58Encode } from '../src/util/base58.ts'
import {
  CorruptChunkError,
  FORMAT_VERSION,
  readChunkBlocks,
  readFooter,
  writeChunkFile,
} from '../src/store/cold/chunk-file.ts'
import {
  brotli,
  CODEC_BROTLI,
  CODEC_ZSTD,
  compressFrames,
  FILTER_DELTA32,
  FILTER_ZIGZAG32,
  FILTER_ZIGZAG32_SHUFFLE,
  framing,
  unframe,
} from '../src/store/cold/frames.ts'
import { RECORD_KINDS } from '../src/model.ts'
import { readFileSync } from 'node:fs'
import { brotliCompressSync, constants, crc32 } from 'node:zlib'
import { tempDir } from './support/cold/util.ts'

const OLD = join(REPO_ROOT, 'test/fixtures/cold/format4-mainnet-before-shuffle.spc')

/**
 * dictionary codes (u16) skewed towards small values, as a column of repeated accounts: the kind of
 * frame where processing the input and finishing in two steps cuts other blocks than one FINISH
 */
function codes(bytes: number, seed: number): Buffer {
  let s = seed
  const a = new Uint16Array(Math.ceil(bytes / 2))
  for (let i = 0; i < a.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    const r = (s >>> 8) / 2 ** 24
    a[i] = Math.floor(3000 * r * r)
  }
  return Buffer.from(a.buffer, 0, bytes)
}

test('a frame compressed on the thread pool and in this thread gives the same bytes', async () => {
  for (const [bytes, quality, lgwin] of [
    [1, 5, 17],
    [5_000, 5, 17],
    [65_536, 5, 17],
    // list postings (frames.ts POSTINGS_QUALITY)
    [65_536, 4, 17],
    [3_000, 4, 17],
    [40_000, 6, 17],
    [524_288, 6, 20],
    [2_000_000, 6, 24],
  ]) {
    const raw = codes(bytes, bytes)
    const pool = await brotli(raw, quality, lgwin, false)
    const here = await brotli(raw, quality, lgwin, true)
    assert.ok(Buffer.from(pool).equals(Buffer.from(here)), `${bytes} bytes at quality ${quality}: the bytes differ`)
  }
})

test('a format 4 chunk written with the earlier frame filters reads as the same blocks', async () => {
  const blocks = await fixtureBlocks()
  const old = readFooter(OLD).footer
  // the fixture holds the filters this writer no longer uses where it now uses zigzag + shuffle
  assert.equal(old.kinds.instruction.cols.transactionIndex.frames![0][1], FILTER_ZIGZAG32)
  assert.equal(old.kinds.instruction.cols.accounts.frames![0][1], FILTER_DELTA32)
  const path = join(tempDir(), 'now.spc')
  const now = (await writeChunkFile(path, blocks, { fsync: false })).footer
  assert.equal(now.kinds.instruction.cols.transactionIndex.frames![0][1], FILTER_ZIGZAG32_SHUFFLE)
  assert.equal(now.kinds.instruction.cols.accounts.frames![0][1], FILTER_ZIGZAG32_SHUFFLE)
  const before = readChunkBlocks(OLD)
  assert.deepEqual(before, readChunkBlocks(path))
  assert.deepEqual(
    before.map((b) => [b.header.number, b.transactions.length, b.instructions.length, b.logs.length]),
    blocks.map((b) => [b.header.number, b.transactions.length, b.instructions.length, b.logs.length]),
  )
})

test('compressInThisThread: a main thread then compresses frames itself, not on the thread pool', () => {
  const framesUrl = new URL('../src/store/cold/frames.ts', import.meta.url).href
  // resolved within a few microtasks: compressed in this thread; after an event-loop turn: on the pool
  const script = `
    const { brotli, compressInThisThread } = await import(${JSON.stringify(framesUrl)})
    const raw = new Uint8Array(200_000).map((_, i) => (i * 7) & 63)
    const settlesAtOnce = async () => {
      let done = false
      const p = brotli(raw, 5, 20).then(() => (done = true))
      for (let i = 0; i < 5; i++) await null
      const now = done
      await p
      return now
    }
    const before = await settlesAtOnce()
    compressInThisThread()
    process.stdout.write(JSON.stringify([before, await settlesAtOnce()]))
  `
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [false, true])
})

const windowOptions = (lgwin: number) => ({ params: { [constants.BROTLI_PARAM_LGWIN]: lgwin } })

/** the window (log2) a brotli stream declares in its first bits (RFC 7932, 9.1) */
function brotliWindow(z: Uint8Array): number {
  const b = z[0]
  if ((b & 1) === 0) return 16
  const n = (b >> 1) & 7
  if (n !== 0) return 17 + n
  const m = (b >> 4) & 7
  return m === 0 ? 17 : 8 + m
}

test('frames declare their window: 64 KiB for text parts, the frame for binary parts and JSON columns', async () => {
  for (const [lgwin, want] of [
    [16, 16],
    [17, 17],
    [20, 20],
    [24, 24],
  ])
    assert.equal(brotliWindow(brotliCompressSync(Buffer.alloc(1000, 7), windowOptions(lgwin))), want)
  // distinct random addresses in base58 (~300 KB), as a dictionary column's first part
  let seed = 1
  const keys: string[] = []
  for (let i = 0; i < 7000; i++)
    keys.push(base58Encode(new Uint8Array(32).map(() => (seed = (seed * 48271) % 0x7fffffff) & 0xff)))
  const text = Buffer.from(keys.sort().join(''), 'latin1')
  const words = new Uint8Array(new Uint32Array(40_000).map((_, i) => i * 3).buffer)
  // brotli throughout (format 4's framing; format 5 where zstd cannot run on the thread pool)
  const firstFrameWindow = async (e: Parameters<typeof compressFrames>[0], parts: Uint8Array[], part: number) => {
    const f = await compressFrames(e, parts, undefined, false)
    let k = 0
    for (let p = 0; p < part; p++) k += f.fr[p].length - 2
    assert.ok(f.fr[part][2] > 0, 'the frame is stored compressed')
    return brotliWindow(f.stored[k])
  }
  assert.equal(framing('dict', 0, false).lgwin, 16)
  assert.equal(await firstFrameWindow('dict', [text, words, words, words], 0), 16)
  assert.equal(await firstFrameWindow('dict', [text, words, words, words], 1), 17) // 64 KiB frames of codes
  assert.equal(await firstFrameWindow('jdict', [text, words], 0), 24) // a JSON column: one whole frame
})

test('format 5: text parts and JSON columns in zstd frames, binary parts in brotli; they read back, a damaged one is refused', async () => {
  const blocks = await fixtureBlocks()
  const dir = tempDir()
  const zfile = join(dir, 'zstd.spc')
  const bfile = join(dir, 'brotli.spc')
  await writeChunkFile(zfile, blocks, { fsync: false, zstd: true })
  await writeChunkFile(bfile, blocks, { fsync: false, zstd: false })
  const z = readFooter(zfile).footer
  assert.equal(z.v, FORMAT_VERSION)
  const seen = new Set<string>()
  for (const [name, t] of [['header', z.header] as const, ...RECORD_KINDS.map((k) => [k, z.kinds[k]] as const)])
    for (const [col, m] of Object.entries(t.cols)) {
      const codecs = m.codecs ?? m.partLengths.map(() => CODEC_BROTLI)
      m.partLengths.forEach((_, i) => {
        const f = framing(m.encoding, i, true)
        const text = f.log === framing('dict', 0).log && f.lgwin === framing('dict', 0).lgwin
        const whole = m.encoding.startsWith('j') && i === 0
        assert.equal(codecs[i], text || whole ? CODEC_ZSTD : CODEC_BROTLI, `${name}.${col} part ${i}`)
        seen.add(`${codecs[i]}:${text ? 'text' : whole ? 'json' : 'binary'}`)
      })
    }
  assert.deepEqual([...seen].sort(), [`${CODEC_BROTLI}:binary`, `${CODEC_ZSTD}:json`, `${CODEC_ZSTD}:text`])
  // brotli throughout when told, and in format 4 whatever is asked (its readers know brotli only)
  for (const t of Object.values(readFooter(bfile).footer.kinds))
    for (const m of Object.values(t.cols)) assert.equal(m.codecs, undefined)
  const v4 = join(dir, 'v4.spc')
  await writeChunkFile(v4, blocks, { fsync: false, zstd: true, formatVersion: 4 })
  for (const t of Object.values(readFooter(v4).footer.kinds))
    for (const m of Object.values(t.cols)) assert.equal(m.codecs, undefined)
  // the same records from all three
  assert.deepEqual(readChunkBlocks(zfile), readChunkBlocks(bfile))
  assert.deepEqual(readChunkBlocks(v4), readChunkBlocks(bfile))
  // a zstd frame damaged under a checksum made to match: the decoder's error, as a corrupt chunk
  const m = z.kinds.instruction.cols.accounts
  const first = m.frames![0].length - 2 // frames of the offsets part come first
  const at = m.offset + Math.abs(m.frames![0].slice(2).reduce((s, l) => s + Math.abs(l), 0))
  assert.equal(m.codecs![1], CODEC_ZSTD)
  const len = m.frames![1][2]
  assert.ok(len > 0, 'the text frame is stored compressed')
  const b = readFileSync(zfile)
  b[at + 6] ^= 0xff // inside the zstd frame header: the frame no longer decodes
  m.frameCrcs![first] = crc32(b.subarray(at, at + len))
  assert.throws(
    () => unframe(b.subarray(m.offset, m.offset + m.storedLength), m, (why) => new CorruptChunkError(why)),
    (e: unknown) => e instanceof CorruptChunkError && /zstd frame does not decompress/.test((e as Error).message),
  )
})

test('a main thread compresses zstd frames on the thread pool where the native build loads, in the thread with the WebAssembly one', () => {
  const framesUrl = new URL('../src/store/cold/frames.ts', import.meta.url).href
  const zstdUrl = new URL('../src/util/zstd.mjs', import.meta.url).href
  // resolved within a few microtasks: compressed in this thread; after an event-loop turn: on the pool
  const script = `
    const { zstdFrame, framing, compressInThisThread } = await import(${JSON.stringify(framesUrl)})
    const { zstdBuild, zstdDecompressSync } = await import(${JSON.stringify(zstdUrl)})
    const raw = new Uint8Array(200_000).map((_, i) => (i * 7) & 63)
    const settlesAtOnce = async () => {
      let done = false
      const p = zstdFrame(raw, 9).then((z) => ((done = true), z))
      for (let i = 0; i < 5; i++) await null
      const now = done
      const back = zstdDecompressSync(await p)
      if (Buffer.compare(Buffer.from(back), Buffer.from(raw)) !== 0) throw new Error('not the same bytes')
      return now
    }
    // a text part's codec by default (0 brotli, 1 zstd)
    const textCodec = framing('plain', 0).codec
    const before = await settlesAtOnce()
    compressInThisThread()
    process.stdout.write(JSON.stringify([zstdBuild, textCodec, before, await settlesAtOnce()]))
  `
  const run = (env: NodeJS.ProcessEnv) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    })
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  const wasm = run({ SOLPORTAL_ZSTD: 'wasm' })
  assert.deepEqual(wasm, ['wasm', 0, true, true])
  const native = run({ SOLPORTAL_ZSTD: '' })
  if (native[0] === 'native') assert.deepEqual(native, ['native', 1, false, true])
})
