/**
 * A block read from a CAR file as one byte string, as the import hands it to its workers in place
 * of an archive line (the raw payloads: the workers decode transactions, decompress and decode
 * metadata). It begins with a 0x00 byte, which no JSON line begins with.
 *
 *   magic "\0OFB" · slot, parentSlot, blockTime, blockHeight (f64 LE each; NaN = absent)
 *   hash (32) · previous hash present (u8) · previous hash (32)
 *   rewards length (u32 LE; 0xffffffff = none) · rewards payload
 *   transaction count (u32 LE) · per transaction: data length (u32), data, metadata length (u32), metadata
 */
import type { CarBlock } from './assemble.ts'

const MAGIC = [0x00, 0x4f, 0x46, 0x42]

/**
 * Bytes of archive-line JSON per byte of bundle, for cutting batches by size as lines are cut
 * (src/ingest/import/batch.ts `BatchCut`): 3.2 for generated 1,500-transaction blocks (17.1 MiB of CAR file
 * for 54.7 MiB of JSON lines, bench/import-car.ts).
 */
export const BUNDLE_TEXT_RATIO = 3.2
const NONE = 0xffffffff

export interface BundledBlock {
  slot: number
  parentSlot: number
  blockTime: number | null
  blockHeight: number | null
  hash: Uint8Array
  previousHash: Uint8Array | null
  rewards: Uint8Array | null
  transactions: { data: Uint8Array; metadata: Uint8Array }[]
}

/** Is this line a bundled CAR block (not JSON)? */
export function isBundle(line: Uint8Array): boolean {
  return (
    line.length >= 4 && line[0] === MAGIC[0] && line[1] === MAGIC[1] && line[2] === MAGIC[2] && line[3] === MAGIC[3]
  )
}

function size(parts: readonly Uint8Array[]): number {
  let n = 0
  for (const p of parts) n += p.length
  return n
}

/** The bundle of a block and the hash of its parent (null when unknown). */
export function encodeBundle(b: CarBlock, previousHash: Uint8Array | null): Buffer {
  let total = 4 + 32 + 32 + 1 + 32 + 4 + (b.rewards ? size(b.rewards) : 0) + 4
  for (const t of b.transactions) total += 8 + size(t.data) + size(t.metadata)
  const out = Buffer.allocUnsafe(total)
  out.set(MAGIC, 0)
  let p = 4
  for (const v of [b.slot, b.parentSlot, b.blockTime ?? NaN, b.blockHeight ?? NaN]) p = out.writeDoubleLE(v, p)
  out.set(b.hash, p)
  p += 32
  out[p++] = previousHash ? 1 : 0
  if (previousHash) out.set(previousHash, p)
  else out.fill(0, p, p + 32)
  p += 32
  const put = (parts: readonly Uint8Array[]) => {
    p = out.writeUInt32LE(size(parts), p)
    for (const x of parts) {
      out.set(x, p)
      p += x.length
    }
  }
  if (b.rewards) put(b.rewards)
  else p = out.writeUInt32LE(NONE, p)
  p = out.writeUInt32LE(b.transactions.length, p)
  for (const t of b.transactions) {
    put(t.data)
    put(t.metadata)
  }
  return out
}

/** Decodes a bundle (views of `line`); throws an Error when it is malformed. */
export function decodeBundle(line: Uint8Array): BundledBlock {
  const b = Buffer.from(line.buffer, line.byteOffset, line.byteLength)
  if (!isBundle(b) || b.length < 4 + 32 + 32 + 1 + 32 + 8) throw new Error('not a CAR block bundle')
  let p = 4
  const f = () => {
    const v = b.readDoubleLE(p)
    p += 8
    return Number.isNaN(v) ? null : v
  }
  const slot = f()!
  const parentSlot = f()!
  const blockTime = f()
  const blockHeight = f()
  const hash = b.subarray(p, p + 32)
  p += 32
  const hasPrev = b[p++] === 1
  const previousHash = hasPrev ? b.subarray(p, p + 32) : null
  p += 32
  const chunk = () => {
    const n = b.readUInt32LE(p)
    p += 4
    if (n === NONE) return null
    if (p + n > b.length) throw new Error('CAR block bundle ends early')
    p += n
    return b.subarray(p - n, p)
  }
  const rewards = chunk()
  const count = b.readUInt32LE(p)
  p += 4
  const transactions: BundledBlock['transactions'] = new Array(count)
  for (let i = 0; i < count; i++) {
    const data = chunk()
    const metadata = chunk()
    if (!data || !metadata) throw new Error('CAR block bundle: bad transaction')
    transactions[i] = { data, metadata }
  }
  if (p !== b.length) throw new Error('CAR block bundle: bytes after the end')
  return { slot, parentSlot, blockTime, blockHeight, hash, previousHash, rewards, transactions }
}
