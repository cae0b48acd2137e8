/**
 * A test-only writer of Old Faithful CAR files from `getBlock` archive lines, as the archive's
 * writers lay them out: per block, each transaction's extra DataFrames (a payload longer than
 * `frameSize` is split; frame 0 sits in the Transaction node and links the next 5, the 5th of
 * those the next 5, ...), the Transaction nodes (wire-format bytes, zstd metadata), Entry nodes
 * (`txPerEntry` transactions each, the last entry's hash = the blockhash), the Rewards node, the
 * Block node; a Subset node at the end, which the header's root names. Children always first.
 */
import { createHash } from 'node:crypto'
import { encodeVarint } from '../../../src/ingest/car/cbor.ts'
import { crc64Iso, fnv1a64 } from '../../../src/ingest/car/hashes.ts'
import type { ArchiveLine, RpcReward, RpcTransaction, RpcTransactionMeta } from '../../../src/rpc/types.ts'
import { base58Decode } from '../../../src/util/base58.ts'
import { zstdCompressSync } from '../../../src/util/zstd.mjs'
import { encodeWireTransaction } from './wire.ts'

/** a DAG-CBOR value to encode: Link for tag 42 */
export class Link {
  constructor(readonly cid: Uint8Array) {}
}
type V = number | bigint | Uint8Array | string | null | Link | V[]

/** DAG-CBOR bytes of a value */
export function cbor(v: V): Uint8Array {
  const parts: Uint8Array[] = []
  const small: number[] = []
  const flush = () => {
    if (small.length) parts.push(Uint8Array.from(small.splice(0)))
  }
  const head = (major: number, n: number | bigint) => {
    const m = major << 5
    if (typeof n === 'bigint' || n > 0xffffffff) {
      const b = BigInt(n)
      small.push(m | 27)
      for (let i = 7; i >= 0; i--) small.push(Number((b >> BigInt(8 * i)) & 0xffn))
    } else if (n < 24) small.push(m | n)
    else if (n < 0x100) small.push(m | 24, n)
    else if (n < 0x10000) small.push(m | 25, n >> 8, n & 0xff)
    else small.push(m | 26, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
  }
  const raw = (b: Uint8Array) => {
    flush()
    parts.push(b)
  }
  const enc = (x: V): void => {
    if (x === null) small.push(0xf6)
    else if (typeof x === 'number' || typeof x === 'bigint') {
      if (x < 0) head(1, typeof x === 'bigint' ? -1n - x : -1 - x)
      else head(0, x)
    } else if (x instanceof Uint8Array) {
      head(2, x.length)
      raw(x)
    } else if (typeof x === 'string') {
      const b = Buffer.from(x, 'utf8')
      head(3, b.length)
      raw(b)
    } else if (x instanceof Link) {
      head(6, 42)
      head(2, x.cid.length + 1)
      small.push(0)
      raw(x.cid)
    } else {
      head(4, x.length)
      for (const y of x) enc(y)
    }
  }
  enc(v)
  flush()
  return Buffer.concat(parts)
}

export function cidOf(data: Uint8Array): Uint8Array {
  return Buffer.concat([Uint8Array.from([0x01, 0x71, 0x12, 0x20]), createHash('sha256').update(data).digest()])
}

export interface CarWriterOptions {
  /** bytes per DataFrame (default 1 MiB); small values split payloads over many frames */
  frameSize?: number
  /** checksum of multi-frame payloads (default crc) */
  hash?: 'crc' | 'fnv'
  /** transactions per entry (default 3) */
  txPerEntry?: number
  /** metadata message of a transaction (uncompressed; null: none is stored) */
  meta: (meta: RpcTransactionMeta | null) => Uint8Array | null
  /** rewards message of a block (uncompressed) */
  rewards: (rewards: RpcReward[]) => Uint8Array
  /** block heights are stored (default true) */
  heights?: boolean
  /** the node of the Transaction index field: absent, null or the position (default the position) */
  index?: 'absent' | 'null' | 'position'
}

/** A CAR file's sections as they are written (each the bytes of varint + CID + node), and the file. */
export class CarFile {
  readonly sections: Uint8Array[] = []
  readonly kinds: number[] = []
  add(node: Uint8Array): Uint8Array {
    const cid = cidOf(node)
    this.sections.push(Buffer.concat([encodeVarint(cid.length + node.length), cid, node]))
    this.kinds.push(node[1])
    return cid
  }
  bytes(roots: Uint8Array[]): Buffer {
    const h = headerBytes(roots)
    return Buffer.concat([encodeVarint(h.length), h, ...this.sections])
  }
}

/** the CAR header `{roots: [...], version: 1}` (map keys in DAG-CBOR order: shorter first) */
function headerBytes(roots: Uint8Array[]): Uint8Array {
  const k1 = cbor('roots')
  const v1 = cbor(roots.map((r) => new Link(r)))
  const k2 = cbor('version')
  const v2 = cbor(1)
  return Buffer.concat([Uint8Array.from([0xa2]), k1, v1, k2, v2])
}

/** the payload as frames: the first frame's node fields, the CIDs written for the others */
function frames(car: CarFile, payload: Uint8Array, o: CarWriterOptions): V {
  const size = o.frameSize ?? 1 << 20
  if (payload.length <= size) return [6, null, null, null, payload]
  const parts: Uint8Array[] = []
  for (let i = 0; i < payload.length; i += size) parts.push(payload.subarray(i, i + size))
  const total = parts.length
  const hash = o.hash === 'fnv' ? fnv1a64(parts) : crc64Iso(parts)
  // frame 0 links 1..5, frame 5 links 6..10, ...: written from the last group back
  const cids: Uint8Array[] = new Array(total)
  const node = (i: number): V => {
    const next: Link[] = []
    if (i % 5 === 0) for (let j = i + 1; j <= i + 5 && j < total; j++) next.push(new Link(cids[j]))
    return [6, hash, i, total, parts[i], next.length ? next : null]
  }
  // children before parents: descending, each linking frame after the frames it links
  for (let i = total - 1; i >= 1; i--) cids[i] = car.add(cbor(node(i)))
  return node(0)
}

/** Writes the blocks (ascending) as one CAR file. */
export function writeCar(lines: ArchiveLine[], o: CarWriterOptions): Buffer {
  const car = new CarFile()
  const blocks: Uint8Array[] = []
  let seq = 0
  for (const line of lines) {
    const b = line.block
    const txs = (b.transactions ?? []) as RpcTransaction[]
    const txCids: Uint8Array[] = []
    txs.forEach((tx, i) => {
      const data = encodeWireTransaction(tx)
      const m = o.meta(tx.meta)
      const meta = m === null ? new Uint8Array() : zstdCompressSync(m, 3)
      const index = o.index === 'absent' ? [] : [o.index === 'null' ? null : i]
      txCids.push(car.add(cbor([0, frames(car, data, o), frames(car, meta, o), line.slot, ...index])))
    })
    const per = o.txPerEntry ?? 3
    const entries: Uint8Array[] = []
    const nEntries = Math.max(1, Math.ceil(txs.length / per))
    for (let e = 0; e < nEntries; e++) {
      const last = e === nEntries - 1
      const hash = last
        ? base58Decode(b.blockhash)
        : createHash('sha256').update(`entry/${line.slot}/${e}/${seq++}`).digest()
      entries.push(car.add(cbor([1, 12, hash, txCids.slice(e * per, (e + 1) * per).map((c) => new Link(c))])))
    }
    const rewardsCid = car.add(cbor([5, line.slot, frames(car, zstdCompressSync(o.rewards(b.rewards ?? []), 3), o)]))
    const meta: V = [b.parentSlot, b.blockTime ?? 0]
    if (o.heights !== false && b.blockHeight != null) meta.push(b.blockHeight)
    blocks.push(car.add(cbor([2, line.slot, [[0, 0]], entries.map((c) => new Link(c)), meta, new Link(rewardsCid)])))
  }
  const first = lines[0]?.slot ?? 0
  const last = lines[lines.length - 1]?.slot ?? 0
  const subset = car.add(cbor([3, first, last, blocks.map((c) => new Link(c))]))
  return car.bytes([subset])
}
