/**
 * The node kinds of Old Faithful CAR files, decoded from their DAG-CBOR tuples in the field order
 * of the published `ledger.ipldsch` (yellowstone-faithful). Every node is an array whose first
 * element is its kind. Optional fields occur both absent (a shorter array) and as null.
 *
 *   Transaction [0, data DataFrame, metadata DataFrame, slot, index?]
 *   Entry       [1, numHashes, hash, [&Transaction]]
 *   Block       [2, slot, [[entryEndIdx, shredEndIdx]], [&Entry], [parentSlot, blockTime, blockHeight?], &Rewards]
 *   Subset      [3, first, last, [&Block]]
 *   Epoch       [4, epoch, [&Subset]]
 *   Rewards     [5, slot, DataFrame]
 *   DataFrame   [6, hash?, index?, total?, data, [&DataFrame]?]
 */
import { CborError, CborLink, decodeCbor, type CborValue } from './cbor.ts'

export const KIND_TRANSACTION = 0
export const KIND_ENTRY = 1
export const KIND_BLOCK = 2
export const KIND_SUBSET = 3
export const KIND_EPOCH = 4
export const KIND_REWARDS = 5
export const KIND_DATAFRAME = 6
export const KIND_NAMES = ['Transaction', 'Entry', 'Block', 'Subset', 'Epoch', 'Rewards', 'DataFrame']

export interface DataFrameNode {
  kind: 6
  /** CRC-64/ISO or FNV-1a 64 of the whole payload (all frames), when present */
  hash: bigint | null
  index: number | null
  total: number | null
  data: Uint8Array
  /** CIDs of the next frames */
  next: Uint8Array[]
}
export interface TransactionNode {
  kind: 0
  data: DataFrameNode
  metadata: DataFrameNode
  slot: number
  index: number | null
}
export interface EntryNode {
  kind: 1
  numHashes: number
  hash: Uint8Array
  transactions: Uint8Array[]
}
export interface BlockNode {
  kind: 2
  slot: number
  entries: Uint8Array[]
  parentSlot: number
  /** unix seconds; 0 when unknown */
  blockTime: number
  blockHeight: number | null
  /** CID of the Rewards node */
  rewards: Uint8Array | null
}
export interface SubsetNode {
  kind: 3
  first: number
  last: number
  blocks: Uint8Array[]
}
export interface EpochNode {
  kind: 4
  epoch: number
  subsets: Uint8Array[]
}
export interface RewardsNode {
  kind: 5
  slot: number
  data: DataFrameNode
}
export type FaithfulNode =
  TransactionNode | EntryNode | BlockNode | SubsetNode | EpochNode | RewardsNode | DataFrameNode

/** A node that is not what its kind says: the message, and the position in the node's bytes (when known). */
export class NodeError extends Error {
  constructor(
    message: string,
    readonly at = 0,
  ) {
    super(message)
  }
}

/** The kind of a node's bytes (an array whose first element is a small integer), without decoding it. */
export function nodeKind(b: Uint8Array): number {
  if (b.length < 2 || b[0] < 0x80 || b[0] > 0x9b || b[1] > 0x17) return -1
  return b[1]
}

/** Decodes a node's bytes (NodeError when they are not a node of a known kind). */
export function decodeNode(bytes: Uint8Array): FaithfulNode {
  let v: CborValue
  try {
    v = decodeCbor(bytes)
  } catch (e) {
    if (e instanceof CborError) throw new NodeError(`bad DAG-CBOR: ${e.message}`, e.at)
    throw e
  }
  if (!Array.isArray(v) || typeof v[0] !== 'number')
    throw new NodeError('not a node (an array beginning with its kind)')
  const kind = v[0]
  const name = KIND_NAMES[kind]
  if (!name) throw new NodeError(`unknown node kind ${kind}`)
  try {
    return fromTuple(kind, v)
  } catch (e) {
    throw new NodeError(`bad ${name} node: ${(e as Error).message}`)
  }
}

function fromTuple(kind: number, v: CborValue[]): FaithfulNode {
  switch (kind) {
    case KIND_TRANSACTION:
      arity(v, 4, 5)
      return { kind, data: frame(v[1]), metadata: frame(v[2]), slot: int(v[3], 'slot'), index: optInt(v[4], 'index') }
    case KIND_ENTRY:
      arity(v, 4, 4)
      return {
        kind,
        numHashes: int(v[1], 'numHashes'),
        hash: bytes(v[2], 'hash'),
        transactions: links(v[3], 'transactions'),
      }
    case KIND_BLOCK: {
      arity(v, 6, 6)
      const meta = v[4]
      if (!Array.isArray(meta) || meta.length < 2 || meta.length > 3)
        throw new Error('meta not [parent_slot, blocktime, block_height?]')
      const r = v[5]
      return {
        kind,
        slot: int(v[1], 'slot'),
        entries: links(v[3], 'entries'),
        parentSlot: int(meta[0], 'parent_slot'),
        blockTime: int(meta[1], 'blocktime'),
        blockHeight: optInt(meta[2], 'block_height'),
        rewards: r === null ? null : link(r, 'rewards'),
      }
    }
    case KIND_SUBSET:
      arity(v, 4, 4)
      return { kind, first: int(v[1], 'first'), last: int(v[2], 'last'), blocks: links(v[3], 'blocks') }
    case KIND_EPOCH:
      arity(v, 3, 3)
      return { kind, epoch: int(v[1], 'epoch'), subsets: links(v[2], 'subsets') }
    case KIND_REWARDS:
      arity(v, 3, 3)
      return { kind, slot: int(v[1], 'slot'), data: frame(v[2]) }
    default:
      return frame(v)
  }
}

function arity(v: CborValue[], min: number, max: number): void {
  if (v.length < min || v.length > max)
    throw new Error(`${v.length} fields (expected ${min === max ? min : `${min}-${max}`})`)
}

function frame(v: CborValue): DataFrameNode {
  if (!Array.isArray(v) || v[0] !== KIND_DATAFRAME) throw new Error('DataFrame expected')
  arity(v, 5, 6)
  const h = v[1]
  if (h !== null && h !== undefined && typeof h !== 'number' && typeof h !== 'bigint')
    throw new Error('hash not an integer')
  return {
    kind: KIND_DATAFRAME,
    // written as a signed 64-bit integer by some writers: the same 64 bits
    hash: h === null || h === undefined ? null : BigInt.asUintN(64, BigInt(h)),
    index: optInt(v[2], 'index'),
    total: optInt(v[3], 'total'),
    data: bytes(v[4], 'data'),
    next: v[5] === undefined || v[5] === null ? [] : links(v[5], 'next'),
  }
}

function int(v: CborValue | undefined, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`${what} not an unsigned integer`)
  return v
}
function optInt(v: CborValue | undefined, what: string): number | null {
  return v === undefined || v === null ? null : int(v, what)
}
function bytes(v: CborValue | undefined, what: string): Uint8Array {
  if (!(v instanceof Uint8Array)) throw new Error(`${what} not bytes`)
  return v
}
function link(v: CborValue | undefined, what: string): Uint8Array {
  if (!(v instanceof CborLink)) throw new Error(`${what} not a link`)
  return v.cid
}
function links(v: CborValue | undefined, what: string): Uint8Array[] {
  if (!Array.isArray(v)) throw new Error(`${what} not a list of links`)
  return v.map((x) => link(x, what))
}

const B32 = 'abcdefghijklmnopqrstuvwxyz234567'
/** CID bytes as text (multibase base32, `b…`), for messages. */
export function cidText(cid: Uint8Array): string {
  let out = 'b'
  let bits = 0
  let acc = 0
  for (const x of cid) {
    acc = (acc << 8) | x
    bits += 8
    while (bits >= 5) {
      out += B32[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
  }
  if (bits > 0) out += B32[(acc << (5 - bits)) & 31]
  return out
}
