/**
 * A normalized block as one buffer, the form in which the live ingester's worker threads hand
 * blocks to the hot store (src/ingest/block-workers.ts): the buffer is transferred, written to
 * LMDB as it is, and decoded in this thread only when a reader first needs the block's records.
 *
 * The encoding is V8's structured-clone serialization (`node:v8` serialize): native, bigint kept
 * exact, and about twice as fast to write as msgpack records for a mainnet block (~14 ms against
 * ~28 ms of a free core for 1,500 transactions; the write is on the path from the node's answer
 * to the hot store, the read only on the first query that needs the block's records). It is
 * larger (6.2 MB against 4.3 MB for a generated 1,500-transaction block: object keys are written
 * per record), which the hot store's memory and LMDB writes pay, and slower to read (~20 ms
 * against ~8-18 ms, in the main thread, once per block a query reads the records of). Blocks
 * stored by earlier versions as msgpack records (with inline record definitions) still read:
 * `unpackBlock` tells the two apart by the first byte (V8's version tag, 0xFF, is never the first
 * byte of a msgpack map or record). test/realtime-workers.test.ts checks that a packed block reads
 * back equal, also after a restart, and that old msgpack values still load.
 */
import { deserialize, serialize } from 'node:v8'
import { Unpackr } from 'msgpackr'
import { RECORD_LISTS } from '../catalogue.ts'
import type { Block, BlockHeader } from '../model.ts'

/** the first byte of V8's serialization (its version tag) */
const V8_TAG = 0xff
/** the first byte of a block packed in parts (`writeJoined`; never the first of V8's or msgpack's) */
const PARTS_TAG = 0xfe

// how blocks were packed before (records, each object shape defined once in the buffer)
const unpackr = new Unpackr({ useRecords: true, mapsAsObjects: true })

/**
 * a block whose records are still packed: one buffer (`packBlock`, or the stored form), or the
 * buffers of a block packed in parts, in order (two decoding threads: src/ingest/block-join.ts),
 * which `storedBytes` writes as one (`writeJoined`)
 */
export interface PackedBlock {
  header: BlockHeader
  packed: Uint8Array | readonly Uint8Array[]
}

/** the buffers of a packed block (to transfer them to another thread) */
export function packedBuffers(p: PackedBlock): ArrayBuffer[] {
  return (p.packed instanceof Uint8Array ? [p.packed] : p.packed).map((b) => b.buffer as ArrayBuffer)
}

export function isPackedBlock(b: Block | PackedBlock): b is PackedBlock {
  return (b as PackedBlock).packed !== undefined
}

/** the block as a buffer of its own (transferable) */
export function packBlock(block: Block): PackedBlock & { packed: Uint8Array } {
  const b = serialize(block)
  const own = b.byteOffset === 0 && b.buffer.byteLength === b.byteLength
  return { header: block.header, packed: own ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b) }
}

function joinedSize(parts: readonly Uint8Array[]): number {
  let size = 2 + 4 * parts.length
  for (const p of parts) size += p.byteLength
  return size
}

/**
 * The head of the one buffer of a block packed in parts (each part a `packBlock` of some of its
 * transactions' records, in order: src/ingest/block-workers.ts decodes a large answer in two
 * threads): a tag byte, the number of parts, each part's length (u32 LE). The parts follow it.
 * `unpackBlock` reads it as the block whose lists are the parts' lists concatenated.
 */
function joinedHead(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 0 || parts.length > 255) throw new Error(`a packed block in ${parts.length} parts`)
  const head = new Uint8Array(2 + 4 * parts.length)
  const view = new DataView(head.buffer)
  head[0] = PARTS_TAG
  head[1] = parts.length
  for (let i = 0; i < parts.length; i++) view.setUint32(2 + 4 * i, parts[i].byteLength, true)
  return head
}

/** The one buffer of a block packed in parts (`joinedHead`, then the parts), written into `out` (`joinedSize` bytes), which it returns. */
function writeJoined(parts: readonly Uint8Array[], out: Uint8Array): Uint8Array {
  const head = joinedHead(parts)
  out.set(head)
  let at = head.byteLength
  for (const p of parts) {
    out.set(p, at)
    at += p.byteLength
  }
  return out
}

/**
 * The stored form of a packed block's records (`unpackBlock` reads it): its one buffer as it is,
 * or its parts joined into `scratch` when that is large enough, else into new memory. The caller
 * uses the result before it gives the same scratch again (the hot store writes it to LMDB, which
 * copies it, and takes the next block after that: a write into memory used again from block to
 * block instead of ~6 MB of new memory a mainnet-sized block, whose page faults cost 3-17 ms on a
 * virtual machine; bench/results/tail.md).
 */
export function storedBytes(p: PackedBlock, scratch?: Uint8Array): Uint8Array {
  if (p.packed instanceof Uint8Array) return p.packed
  const size = storedSize(p)
  return writeJoined(p.packed, scratch && scratch.byteLength >= size ? scratch.subarray(0, size) : new Uint8Array(size))
}

/** the length of `storedBytes(p)` */
export function storedSize(p: PackedBlock): number {
  return p.packed instanceof Uint8Array ? p.packed.byteLength : joinedSize(p.packed)
}

/** true when `bytes` are a packed block as `packBlock` or `storedBytes` write it (not an older msgpack one) */
export function isV8Packed(bytes: Uint8Array): boolean {
  return bytes.length > 0 && (bytes[0] === V8_TAG || bytes[0] === PARTS_TAG)
}

/** the block of a stored form (`packBlock`, `storedBytes`, or an earlier version's msgpack), or of a packed block's parts */
export function unpackBlock(packed: Uint8Array | readonly Uint8Array[]): Block {
  if (!(packed instanceof Uint8Array)) return concatParts(packed.map((p) => deserialize(p) as Block))
  if (packed.length > 0 && packed[0] === PARTS_TAG) return unpackParts(packed)
  return (isV8Packed(packed) ? deserialize(packed) : unpackr.unpack(packed)) as Block
}

function unpackParts(packed: Uint8Array): Block {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength)
  const n = packed[1]
  let at = 2 + 4 * n
  const parts: Block[] = []
  for (let i = 0; i < n; i++) {
    const len = view.getUint32(2 + 4 * i, true)
    parts.push(deserialize(packed.subarray(at, at + len)) as Block)
    at += len
  }
  return concatParts(parts)
}

/** the block whose lists are the parts' lists concatenated (the first part's header) */
function concatParts(parts: Block[]): Block {
  if (parts.length === 0) throw new Error('a packed block without parts')
  const block = parts[0]
  for (let i = 1; i < parts.length; i++)
    for (const k of RECORD_LISTS) (block[k] as unknown[]) = (block[k] as unknown[]).concat(parts[i][k])
  return block
}

/** the packed records of lazy blocks not decoded yet */
const stillPacked = new WeakMap<Block, PackedBlock>()

/**
 * A block's stored form (what `storedBytes` gives and `unpackBlock` reads) in pieces, not joined:
 * a lazy block's packed buffer as it is, or the joined head and then its parts as they are (not
 * copied), while it is not decoded; else the block newly packed. Nothing writes to them
 * afterwards.
 */
export function storedPieces(block: Block): readonly Uint8Array[] {
  const p = stillPacked.get(block)
  if (!p) return [packBlock(block).packed]
  return p.packed instanceof Uint8Array ? [p.packed] : [joinedHead(p.packed), ...p.packed]
}

/**
 * A Block whose header is at hand and whose record lists are decoded from `packed` on first
 * access (once; the buffer is then let go). Its members are own enumerable properties, so it
 * compares and copies as the plain block does.
 */
export function lazyBlock(p: PackedBlock): Block {
  let packed: PackedBlock['packed'] | null = p.packed
  let full: Block | null = null
  const get = (): Block => {
    if (!full) {
      full = unpackBlock(packed!)
      packed = null
      stillPacked.delete(block)
    }
    return full
  }
  const block = { header: p.header } as Block
  stillPacked.set(block, p)
  for (const k of RECORD_LISTS) {
    Object.defineProperty(block, k, { enumerable: true, configurable: true, get: () => get()[k] })
  }
  return block
}
