/**
 * From the sections of an Old Faithful CAR file to whole blocks. Nodes come children first
 * (transactions and their extra DataFrames, entries, rewards, then the block), so a block is
 * complete when its Block node arrives: the nodes before it are kept (in a map by CID, bounded:
 * MAX_PENDING_BYTES) until then, resolved from the Block node's links, and dropped. Subset and
 * Epoch nodes (after their blocks) are checked and dropped.
 *
 * Payloads split over DataFrames (`next` links, at most 5 a frame) are reassembled by `index`;
 * `total` is checked, and the hash (CRC-64/ISO, or FNV-1a 64 in old files) of multi-frame
 * payloads, and of every payload with `verify`.
 */
import { crc64Iso, fnv1a64 } from './hashes.ts'
import {
  cidText,
  decodeNode,
  KIND_BLOCK,
  KIND_DATAFRAME,
  KIND_ENTRY,
  KIND_NAMES,
  KIND_REWARDS,
  KIND_TRANSACTION,
  NodeError,
  nodeKind,
  type BlockNode,
  type DataFrameNode,
  type FaithfulNode,
} from './nodes.ts'
import { CarError, IDENTITY, parseCid, type CarSection } from './reader.ts'
import { scanEntry, scanTransaction } from './scan.ts'

/** bytes of nodes kept while waiting for their block, at most (a block's nodes) */
export const MAX_PENDING_BYTES = 1024 * 1024 * 1024

/** A whole block read from a CAR file: its raw payloads (each as its frames' data, in order). */
export interface CarBlock {
  slot: number
  parentSlot: number
  /** unix seconds, null when the file has 0 */
  blockTime: number | null
  blockHeight: number | null
  /** hash of the block's last entry (32 bytes) */
  hash: Uint8Array
  /** per transaction, in entry order: wire-format bytes and metadata (zstd; empty when none) */
  transactions: { data: Uint8Array[]; metadata: Uint8Array[] }[]
  /** the Rewards node's payload (zstd), null when the block links none */
  rewards: Uint8Array[] | null
  /** byte offset of the Block node's section in the file */
  offset: number
}

interface Pending {
  node: FaithfulNode
  offset: number
  bytes: number
}

export class BlockAssembler {
  private pending = new Map<string, Pending>()
  private pendingBytes = 0

  constructor(private readonly opts: { verify?: boolean } = {}) {}

  /** Takes one section: the block it completes, or null. Throws CarError. */
  add(s: CarSection): CarBlock | null {
    const kind = nodeKind(s.data)
    if (kind < 0 || kind >= KIND_NAMES.length) {
      throw new CarError(kind < 0 ? 'not an Old Faithful node' : `unknown node kind ${kind}`, s.dataOffset)
    }
    // the usual Transaction and Entry nodes read in place; the rest (and the unusual) decoded
    let node: FaithfulNode | null =
      kind === KIND_TRANSACTION ? scanTransaction(s.data) : kind === KIND_ENTRY ? scanEntry(s.data) : null
    if (node === null) {
      try {
        node = decodeNode(s.data)
      } catch (e) {
        if (e instanceof NodeError) throw new CarError(e.message, s.dataOffset + e.at)
        throw e
      }
    }
    if (node.kind === KIND_BLOCK) return this.block(node, s.offset)
    if (
      node.kind === KIND_TRANSACTION ||
      node.kind === KIND_ENTRY ||
      node.kind === KIND_DATAFRAME ||
      node.kind === KIND_REWARDS
    ) {
      this.pendingBytes += s.data.length
      if (this.pendingBytes > MAX_PENDING_BYTES) {
        throw new CarError(`more than ${MAX_PENDING_BYTES} bytes of nodes without their Block node`, s.offset)
      }
      this.pending.set(key(s.cid), { node, offset: s.offset, bytes: s.data.length })
    }
    return null
  }

  /** nodes left over (waiting for a block that never came), for the end of a file */
  get leftover(): number {
    return this.pending.size
  }

  private take(cid: Uint8Array, what: string, slot: number, offset: number): Pending {
    const p = this.pending.get(key(cid))
    if (!p) throw new CarError(`block ${slot}: ${what} ${cidText(cid)} missing`, offset)
    return p
  }

  private block(b: BlockNode, offset: number): CarBlock {
    const transactions: CarBlock['transactions'] = []
    let last: Uint8Array | null = null
    for (const e of b.entries) {
      const entry = this.take(e, 'Entry', b.slot, offset)
      if (entry.node.kind !== KIND_ENTRY) throw kindError(entry, 'Entry', b.slot)
      last = entry.node.hash
      for (const t of entry.node.transactions) {
        const tx = this.take(t, 'Transaction', b.slot, entry.offset)
        if (tx.node.kind !== KIND_TRANSACTION) throw kindError(tx, 'Transaction', b.slot)
        transactions.push({
          data: this.payload(tx.node.data, b.slot, tx.offset),
          metadata: this.payload(tx.node.metadata, b.slot, tx.offset),
        })
      }
    }
    if (!last || last.length !== 32) throw new CarError(`block ${b.slot}: no entry with a 32-byte hash`, offset)
    let rewards: Uint8Array[] | null = null
    if (b.rewards && !isEmptyLink(b.rewards)) {
      const r = this.take(b.rewards, 'Rewards', b.slot, offset)
      if (r.node.kind !== KIND_REWARDS) throw kindError(r, 'Rewards', b.slot)
      rewards = this.payload(r.node.data, b.slot, r.offset)
    }
    this.pending.clear()
    this.pendingBytes = 0
    return {
      slot: b.slot,
      parentSlot: b.parentSlot,
      blockTime: b.blockTime === 0 ? null : b.blockTime,
      blockHeight: b.blockHeight,
      hash: last,
      transactions,
      rewards,
      offset,
    }
  }

  /** a payload's frames, in order (checked: indexes, total, hash) */
  private payload(first: DataFrameNode, slot: number, offset: number): Uint8Array[] {
    const total = first.total ?? 1
    if (total <= 1 && first.next.length === 0) {
      if (this.opts.verify && first.hash !== null) checkHash([first.data], first.hash, slot, offset)
      return [first.data]
    }
    const frames: DataFrameNode[] = [first]
    const walk = (f: DataFrameNode, depth: number): void => {
      if (depth > 64 || frames.length > total)
        throw new CarError(`block ${slot}: DataFrame links run past total ${total}`, offset)
      for (const c of f.next) {
        const p = this.take(c, 'DataFrame', slot, offset)
        if (p.node.kind !== KIND_DATAFRAME) throw kindError(p, 'DataFrame', slot)
        frames.push(p.node)
        walk(p.node, depth + 1)
      }
    }
    walk(first, 0)
    if (frames.length !== total) {
      throw new CarError(`block ${slot}: payload of ${frames.length} DataFrames, total says ${total}`, offset)
    }
    const parts: Uint8Array[] = new Array(total)
    for (const f of frames) {
      const i = f.index ?? 0
      if (i >= total || parts[i])
        throw new CarError(`block ${slot}: DataFrame index ${i} repeated or beyond total ${total}`, offset)
      parts[i] = f.data
    }
    if (first.hash !== null) checkHash(parts, first.hash, slot, offset)
    return parts
  }
}

function checkHash(parts: Uint8Array[], hash: bigint, slot: number, offset: number): void {
  if (crc64Iso(parts) !== hash && fnv1a64(parts) !== hash) {
    throw new CarError(`block ${slot}: DataFrame payload does not match its hash (CRC-64/ISO or FNV-1a)`, offset)
  }
}

function kindError(p: Pending, want: string, slot: number): CarError {
  return new CarError(`block ${slot}: a ${KIND_NAMES[p.node.kind]} node where a ${want} was linked`, p.offset)
}

/** an identity CID of no bytes (`bafkqaaa`): no node */
function isEmptyLink(cid: Uint8Array): boolean {
  const c = parseCid(cid)
  return c !== null && c.hashCode === IDENTITY && c.digest.length === 0
}

function key(cid: Uint8Array): string {
  return Buffer.from(cid.buffer, cid.byteOffset, cid.byteLength).toString('latin1')
}
