// The thread that decompresses chunk frames ahead of a range scan (prefetch.ts): plain JavaScript,
// no TypeScript loader needed. In: [{ id, z }] (stored frames, transferred); out, on the port
// `workerData.answers`: { id, raw } for each (raw transferred; null when the frame does not
// decompress: the reader then reports it).
import { parentPort, workerData } from 'node:worker_threads'
import { brotliDecompressSync } from 'node:zlib'

const answers = workerData.answers

parentPort.on('message', (jobs) => {
  for (const { id, z, bytes } of jobs) {
    let raw = null
    try {
      const r = brotliDecompressSync(z, { chunkSize: Math.max(64 * 1024, bytes) })
      raw = r.byteOffset === 0 && r.buffer.byteLength === r.byteLength ? r : Buffer.from(r)
    } catch {
      raw = null
    }
    if (raw === null) answers.postMessage({ id, raw: null })
    else answers.postMessage({ id, raw }, [raw.buffer])
  }
})
