// zstd for chunk frames and Parquet export: the native library where its prebuilt N-API addon
// loads (`@toondepauw/node-zstd`: libzstd, with packages for Linux x64/arm64 glibc and musl, macOS
// and Windows x64), else the WebAssembly build (`@bokuweb/zstd-wasm`, every platform). Both write
// standard zstd frames, each with its content size, so either reads what the other wrote (the
// bytes of a frame may differ between the two: different libzstd versions).
//
// Why native: on the import bench's first line (5.9 MB of generated JSON, one thread), level 9 over
// 8 MiB frames takes 33 ms against 75-86 in WebAssembly, level 2 over 512 KiB frames 9 ms against
// 14-25, and decompression 3-4 ms against 5-9 (the native addon's asynchronous calls also run on the
// thread pool, which the WebAssembly build cannot). bench/results/import.md has the end-to-end
// figures.
//
// Plain JavaScript (the read-ahead thread, src/store/cold/inflate-worker.mjs, imports it without
// the TypeScript loader). `SOLPORTAL_ZSTD=wasm` in the environment takes the WebAssembly build
// even where the native one loads (tests, benches comparing the two).
import { createRequire } from 'node:module'

/** the native addon's module, or null where it does not load (or `SOLPORTAL_ZSTD=wasm`) */
function loadNative() {
  if (process.env.SOLPORTAL_ZSTD === 'wasm') return null
  try {
    const m = createRequire(import.meta.url)('@toondepauw/node-zstd')
    // a load that succeeds but cannot round-trip a frame is no use either
    const probe = Buffer.from('solportal zstd probe')
    const back = new m.Decoder().decodeSync(new m.Encoder(3).encodeSync(probe))
    return back.equals(probe) ? m : null
  } catch {
    return null
  }
}

/** the WebAssembly build's calls, once its module is instantiated */
async function loadWasm() {
  const m = await import('@bokuweb/zstd-wasm')
  await m.init()
  return { compress: m.compress, decompress: m.decompress }
}

const native = loadNative()
// the WebAssembly build is loaded only where it is the one used (or a test asks for it,
// `zstdBuilds`): ~15 ms of CPU per thread that imports this module, otherwise
let wasm = native ? null : await loadWasm()

/** which build compresses and decompresses in this process: 'native' or 'wasm' */
export const zstdBuild = native ? 'native' : 'wasm'

/** native encoders by level (an encoder holds its level; its calls keep no state between them) */
const encoders = new Map()
let decoder = null

function encoderOf(level) {
  let e = encoders.get(level)
  if (e === undefined) encoders.set(level, (e = new native.Encoder(level)))
  return e
}

/** the native addon takes node Buffers: a view of the same bytes, no copy */
function asBuffer(u8) {
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength)
}

/** a zstd frame of `data` at `level`, in this thread */
export function zstdCompressSync(data, level) {
  return native ? encoderOf(level).encodeSync(asBuffer(data)) : wasm.compress(data, level)
}

/**
 * a zstd frame of `data` at `level`: natively on libuv's thread pool (`data` must not change
 * until it resolves), in WebAssembly in this thread before it returns
 */
export function zstdCompressAsync(data, level) {
  return native ? encoderOf(level).encode(asBuffer(data)) : Promise.resolve(wasm.compress(data, level))
}

/** the bytes of a zstd frame (throws when they are not one) */
export function zstdDecompressSync(frame) {
  if (!native) return wasm.decompress(frame)
  decoder ??= new native.Decoder()
  return decoder.decodeSync(asBuffer(frame))
}

/**
 * both builds, for tests that check each reads the other (`native` null where it does not load);
 * loads the WebAssembly build where this process does not use it
 */
export async function zstdBuilds() {
  wasm ??= await loadWasm()
  // where the native build loads, this module's own calls are it
  return { native: native && { compress: zstdCompressSync, decompress: zstdDecompressSync }, wasm }
}
