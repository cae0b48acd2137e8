// Types of zstd.mjs (see there).

/** which build compresses and decompresses in this process */
export declare const zstdBuild: 'native' | 'wasm'

/** a zstd frame of `data` at `level`, in this thread */
export declare function zstdCompressSync(data: Uint8Array, level: number): Uint8Array

/**
 * a zstd frame of `data` at `level`: natively on libuv's thread pool (`data` must not change
 * until it resolves), in WebAssembly in this thread before it returns
 */
export declare function zstdCompressAsync(data: Uint8Array, level: number): Promise<Uint8Array>

/** the bytes of a zstd frame (throws when they are not one) */
export declare function zstdDecompressSync(frame: Uint8Array): Uint8Array

interface ZstdCodec {
  compress(data: Uint8Array, level: number): Uint8Array
  decompress(frame: Uint8Array): Uint8Array
}

/**
 * both builds, for tests that check each reads the other (`native` null where it does not load);
 * loads the WebAssembly build where this process does not use it
 */
export declare function zstdBuilds(): Promise<{ native: ZstdCodec | null; wasm: ZstdCodec }>
