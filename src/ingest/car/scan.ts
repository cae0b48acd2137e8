/**
 * Transaction and Entry nodes (nearly all of a CAR file's nodes) read in place from their DAG-CBOR
 * bytes, without the generic decoder's values: the tuple's fields taken where they lie, byte
 * strings and links as views of the node. Only the usual shape is read here (definite lengths,
 * integers in their shortest heads up to 2^53, hashes of up to 64 bits, links of CIDv1 bytes); anything else gives null, and
 * `decodeNode` (nodes.ts) decodes or rejects the node with its own message. What is returned is
 * what `decodeNode` gives for the same bytes.
 */
import {
  KIND_DATAFRAME,
  KIND_ENTRY,
  KIND_TRANSACTION,
  type DataFrameNode,
  type EntryNode,
  type TransactionNode,
} from './nodes.ts'

const NULL = 0xf6
/** failure: the node is not in the usual shape */
const BAD = -1

/** A cursor over one node's bytes; `pos` is BAD once something unusual was met. */
class Scan {
  pos = 0
  constructor(readonly b: Uint8Array) {}

  /** the argument of a head of `major` (an unsigned integer below 2^53), or BAD */
  arg(major: number): number {
    const b = this.b
    const p = this.pos
    if (p >= b.length || b[p] >> 5 !== major) return this.fail()
    const info = b[p] & 31
    if (info < 24) {
      this.pos = p + 1
      return info
    }
    let n: number
    if (info === 24 && p + 2 <= b.length) n = b[p + 1]
    else if (info === 25 && p + 3 <= b.length) n = (b[p + 1] << 8) | b[p + 2]
    else if (info === 26 && p + 5 <= b.length)
      n = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> 0
    else if (info === 27 && p + 9 <= b.length) {
      const hi = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> 0
      if (hi >= 0x200000) return this.fail()
      const lo = ((b[p + 5] << 24) | (b[p + 6] << 16) | (b[p + 7] << 8) | b[p + 8]) >>> 0
      n = hi * 0x100000000 + lo
      this.pos = p + 9
      return n
    } else return this.fail()
    this.pos = p + 1 + (1 << (info - 24))
    return n
  }

  fail(): number {
    this.pos = this.b.length + 1
    return BAD
  }

  get failed(): boolean {
    return this.pos > this.b.length
  }

  /** null (true, consumed) or not */
  isNull(): boolean {
    if (this.pos < this.b.length && this.b[this.pos] === NULL) {
      this.pos++
      return true
    }
    return false
  }

  /** an unsigned integer or null */
  optUint(): number | null {
    return this.isNull() ? null : this.arg(0)
  }

  /** a byte string (a view), or null after a failure */
  bytes(): Uint8Array | null {
    const n = this.arg(2)
    if (n < 0 || this.pos + n > this.b.length) return (this.fail(), null)
    this.pos += n
    return this.b.subarray(this.pos - n, this.pos)
  }

  /** a link (tag 42 over 0x00 + CID bytes): the CID's bytes, or null after a failure */
  link(): Uint8Array | null {
    const b = this.b
    if (this.pos + 2 > b.length || b[this.pos] !== 0xd8 || b[this.pos + 1] !== 42) return (this.fail(), null)
    this.pos += 2
    const c = this.bytes()
    if (c === null || c.length < 2 || c[0] !== 0) return (this.fail(), null)
    return c.subarray(1)
  }

  /** a list of links, or null after a failure */
  links(): Uint8Array[] | null {
    const n = this.arg(4)
    if (n < 0 || n > this.b.length - this.pos) return (this.fail(), null)
    const out: Uint8Array[] = new Array(n)
    for (let i = 0; i < n; i++) {
      const c = this.link()
      if (c === null) return null
      out[i] = c
    }
    return out
  }

  /**
   * a DataFrame's hash: null, or an integer of up to 64 bits (unsigned, or signed as some writers
   * store it: the same 64 bits), as decodeNode reads it
   */
  hash(): bigint | null {
    if (this.isNull()) return null
    const b = this.b
    const p = this.pos
    const major = p < b.length ? b[p] >> 5 : 7
    if (major > 1) return (this.fail(), null)
    let n: bigint
    if ((b[p] & 31) === 27) {
      if (p + 9 > b.length) return (this.fail(), null)
      const hi = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> 0
      const lo = ((b[p + 5] << 24) | (b[p + 6] << 16) | (b[p + 7] << 8) | b[p + 8]) >>> 0
      n = (BigInt(hi) << 32n) | BigInt(lo)
      this.pos = p + 9
    } else {
      const v = this.arg(major)
      if (v < 0) return null
      n = BigInt(v)
    }
    return major === 0 ? n : BigInt.asUintN(64, -1n - n)
  }

  /** a DataFrame [6, hash?, index?, total?, data, next?], or null after a failure */
  frame(): DataFrameNode | null {
    const n = this.arg(4)
    if ((n !== 5 && n !== 6) || this.arg(0) !== KIND_DATAFRAME) return (this.fail(), null)
    const hash = this.hash()
    const index = this.optUint()
    const total = this.optUint()
    const data = this.bytes()
    if (data === null || this.failed) return null
    let next: Uint8Array[] = []
    if (n === 6 && !this.isNull()) {
      const l = this.links()
      if (l === null) return null
      next = l
    }
    return { kind: KIND_DATAFRAME, hash, index, total, data, next }
  }
}

/** A Transaction node read in place, or null (not the usual shape: decode it generically). */
export function scanTransaction(bytes: Uint8Array): TransactionNode | null {
  const s = new Scan(bytes)
  const n = s.arg(4)
  if ((n !== 4 && n !== 5) || s.arg(0) !== KIND_TRANSACTION) return null
  const data = s.frame()
  if (data === null) return null
  const metadata = s.frame()
  if (metadata === null) return null
  const slot = s.arg(0)
  const index = n === 5 ? s.optUint() : null
  if (s.failed || s.pos !== bytes.length) return null
  return { kind: KIND_TRANSACTION, data, metadata, slot, index }
}

/** An Entry node read in place, or null (not the usual shape: decode it generically). */
export function scanEntry(bytes: Uint8Array): EntryNode | null {
  const s = new Scan(bytes)
  if (s.arg(4) !== 4 || s.arg(0) !== KIND_ENTRY) return null
  const numHashes = s.arg(0)
  const hash = s.bytes()
  if (hash === null) return null
  const transactions = s.links()
  if (transactions === null || s.failed || s.pos !== bytes.length) return null
  return { kind: KIND_ENTRY, numHashes, hash, transactions }
}
