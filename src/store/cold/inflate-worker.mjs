// The thread that decompresses chunk frames ahead of a range scan (prefetch.ts): plain JavaScript,
// no TypeScript loader needed. In: { path, jobs: [{ id, at, len, crc, bytes, codec }] } (the stored
// frame is `len` bytes at file offset `at` of the chunk file `path`, its crc32 `crc`, `bytes` raw
// bytes, compressed by `codec`: 0 brotli, 1 zstd, frames.ts CODEC_*);
// out, on the port `workerData.answers`: { id, raw } for each (raw transferred; null when the frame
// cannot be read, fails its checksum or does not decompress: the reader then reads it and reports it;
// { id, raw: null, skipped: true } for a frame the reader decompressed itself before this thread got
// to it, its slot in `workerData.control` set).
// Reading and checking the stored bytes here keeps that work off the reading thread too.
import { closeSync, openSync, readSync } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import { brotliDecompressSync, crc32 } from 'node:zlib'
import { zstdDecompressSync } from '../../util/zstd.mjs'

const answers = workerData.answers
/** [0]: 1 while held (tests); then per job id: 1 once the reader decompressed the frame itself */
const control = workerData.control ?? new Int32Array(new SharedArrayBuffer(8))
const SLOTS = control.length - 1
/**
 * [0]: 1 once the process is exiting (set by the reading side's `exit` listener); [1]: 1 while this
 * thread works on a frame. The process ends this thread when it exits; ended in the middle of
 * zlib's setting up a decompressor (between the native handle's creation and its init), Node
 * aborts the whole process ("close before init"), so the exiting side waits for the frame under
 * way and this thread takes no other.
 */
const gate = workerData.gate ?? new Int32Array(new SharedArrayBuffer(8))

/** the process is exiting: never touch zlib again; wait to be ended */
function park() {
  Atomics.store(gate, 1, 0)
  Atomics.notify(gate, 1)
  for (;;) Atomics.wait(gate, 0, 1, 100)
}

/** the stored frame, checked against its crc32; null when it cannot be read or does not match */
function stored(fd, at, len, crc) {
  const z = Buffer.allocUnsafe(len)
  let done = 0
  while (done < len) {
    const n = readSync(fd, z, done, len - done, at + done)
    if (n === 0) return null // a short file: the reader reports it
    done += n
  }
  return crc32(z) === crc ? z : null
}

parentPort.on('message', ({ path, jobs }) => {
  let fd = null
  try {
    fd = openSync(path, 'r')
  } catch {
    fd = null
  }
  for (const { id, at, len, crc, bytes, codec } of jobs) {
    while (Atomics.load(control, 0) === 1) Atomics.wait(control, 0, 1, 1000)
    // busy first, then the exit check: the exiting side either sees this frame under way or this
    // thread sees the exit (sequentially consistent atomics)
    Atomics.store(gate, 1, 1)
    if (Atomics.load(gate, 0) === 1) park()
    if (Atomics.load(control, 1 + (id % SLOTS)) === 1) {
      Atomics.store(gate, 1, 0)
      Atomics.notify(gate, 1)
      answers.postMessage({ id, raw: null, skipped: true })
      continue
    }
    let raw = null
    try {
      const z = fd === null ? null : stored(fd, at, len, crc)
      if (z !== null && codec === 1) {
        // not zlib: the gate does not need it, but costs nothing around it
        const r = zstdDecompressSync(z)
        raw = Buffer.from(r.buffer, r.byteOffset, r.byteLength)
      } else if (z !== null && codec === 0) {
        const r = brotliDecompressSync(z, { chunkSize: Math.max(64 * 1024, bytes) })
        raw = r.byteOffset === 0 && r.buffer.byteLength === r.byteLength ? r : Buffer.from(r)
      }
    } catch {
      raw = null
    }
    Atomics.store(gate, 1, 0)
    Atomics.notify(gate, 1)
    if (raw === null) answers.postMessage({ id, raw: null })
    else answers.postMessage({ id, raw }, [raw.buffer])
  }
  if (fd !== null) closeSync(fd)
})
