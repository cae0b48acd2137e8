/**
 * The Geyser (Yellowstone gRPC) messages that solportal sends and reads, written from the field
 * numbers of the published `geyser.proto` (package `geyser`): `SubscribeRequest` and
 * `SubscribeUpdate` with its slot, block, block meta, entry, ping and pong updates. Other updates
 * (accounts, transactions, footers) are recognized and skipped.
 *
 * The solana-storage messages inside a block (each transaction's `Transaction` and
 * `TransactionStatusMeta`, the block's `Rewards`) are kept as their bytes here; `block.ts` turns
 * them into the `getBlock` JSON records. Encoders exist for both directions so that the fake
 * Geyser server (fake-server.ts) speaks the same messages.
 */
import { LEN, ProtoError, ProtoReader, ProtoWriter, VARINT } from '../solana-storage/wire.ts'

/** a u64 that must be a safe integer (slots, counts, indexes) */
function num(r: ProtoReader, what: string): number {
  const v = r.u64()
  if (typeof v !== 'number') throw new ProtoError(`protobuf: ${what} ${v} is above 10^15`)
  return v
}

/** an int32 (negative values are sign-extended to 64 bits on the wire) */
function int32(r: ProtoReader): number {
  r.u64Halves()
  return r.lo | 0
}

/** the fields of one message: `each(tag, r)` reads the value of the fields it knows, returns false for the others */
function walk(r: ProtoReader, each: (no: number, wireType: number) => boolean): void {
  while (r.pos < r.end) {
    const t = r.tag()
    if (!each(t >>> 3, t & 7)) r.skip(t & 7)
  }
}

/** a nested message field: its reader (the outer reader moves past it) */
function nested(r: ProtoReader, wireType: number, what: string): ProtoReader {
  if (wireType !== LEN) throw new ProtoError(`protobuf: ${what}: wire type ${wireType}, expected ${LEN}`)
  return r.sub(r.lenEnd())
}

function lenField(r: ProtoReader, wireType: number, what: string): Uint8Array {
  if (wireType !== LEN) throw new ProtoError(`protobuf: ${what}: wire type ${wireType}, expected ${LEN}`)
  return r.bytes()
}

function stringOf(r: ProtoReader, wireType: number, what: string): string {
  if (wireType !== LEN) throw new ProtoError(`protobuf: ${what}: wire type ${wireType}, expected ${LEN}`)
  return r.string()
}

function varintOf(r: ProtoReader, wireType: number, what: string): void {
  if (wireType !== VARINT) throw new ProtoError(`protobuf: ${what}: wire type ${wireType}, expected ${VARINT}`)
}

/** an explicit-presence (`optional`) or always-written varint field */
function present(w: ProtoWriter, field: number, v: number | bigint | boolean): void {
  w.tag(field, VARINT)
  w.u64Value(typeof v === 'boolean' ? (v ? 1 : 0) : v)
}

/** a nested message written by `body` as field `field` */
function message(w: ProtoWriter, field: number, body: () => void): void {
  const at = w.begin()
  body()
  w.end(field, at)
}

export type CommitmentLevel = 'processed' | 'confirmed' | 'finalized'
const COMMITMENTS: CommitmentLevel[] = ['processed', 'confirmed', 'finalized']

export type SlotStatus =
  'processed' | 'confirmed' | 'finalized' | 'first-shred-received' | 'completed' | 'created-bank' | 'dead'
const SLOT_STATUSES: SlotStatus[] = [
  'processed',
  'confirmed',
  'finalized',
  'first-shred-received',
  'completed',
  'created-bank',
  'dead',
]

// --- SubscribeRequest --------------------------------------------------------------------------

export interface SubscribeRequest {
  /** filter name → SubscribeRequestFilterSlots */
  slots?: Record<string, { filterByCommitment?: boolean; interslotUpdates?: boolean }>
  /** filter name → SubscribeRequestFilterBlocks */
  blocks?: Record<
    string,
    { accountInclude?: string[]; includeTransactions?: boolean; includeAccounts?: boolean; includeEntries?: boolean }
  >
  /** filter name → SubscribeRequestFilterBlocksMeta (no members) */
  blocksMeta?: Record<string, Record<string, never>>
  commitment?: CommitmentLevel
  ping?: { id: number }
  fromSlot?: number
}

function optionalBool(w: ProtoWriter, field: number, v: boolean | undefined): void {
  if (v !== undefined) present(w, field, v)
}

/** map<string, M> is a repeated entry message { key = 1; value = 2 } */
function mapEntries<T>(w: ProtoWriter, field: number, m: Record<string, T> | undefined, value: (v: T) => void): void {
  if (!m) return
  for (const [k, v] of Object.entries(m)) {
    message(w, field, () => {
      w.stringPresent(1, k)
      message(w, 2, () => value(v))
    })
  }
}

export function encodeSubscribeRequest(r: SubscribeRequest): Uint8Array {
  const w = new ProtoWriter(256)
  mapEntries(w, 2, r.slots, (f) => {
    optionalBool(w, 1, f.filterByCommitment)
    optionalBool(w, 2, f.interslotUpdates)
  })
  mapEntries(w, 4, r.blocks, (f) => {
    for (const a of f.accountInclude ?? []) w.stringPresent(1, a)
    optionalBool(w, 2, f.includeTransactions)
    optionalBool(w, 3, f.includeAccounts)
    optionalBool(w, 4, f.includeEntries)
  })
  mapEntries(w, 5, r.blocksMeta, () => {})
  if (r.commitment !== undefined) present(w, 6, COMMITMENTS.indexOf(r.commitment))
  if (r.ping) message(w, 9, () => w.u64Field(1, r.ping!.id))
  if (r.fromSlot !== undefined) present(w, 11, r.fromSlot)
  return w.finish()
}

/** a map entry: its key, and its value message read by `value` */
function mapEntry(r: ProtoReader, value: (v: ProtoReader) => void): string {
  let key = ''
  let seen = false
  walk(r, (no, wt) => {
    if (no === 1) key = stringOf(r, wt, 'map key')
    else if (no === 2) {
      seen = true
      value(nested(r, wt, 'map value'))
    } else return false
    return true
  })
  if (!seen) value(new ProtoReader(new Uint8Array(0)))
  return key
}

function boolOf(r: ProtoReader, wt: number, what: string): boolean {
  varintOf(r, wt, what)
  return r.bool()
}

export function decodeSubscribeRequest(b: Uint8Array): SubscribeRequest {
  const out: SubscribeRequest = {}
  const r = new ProtoReader(b)
  walk(r, (no, wt) => {
    switch (no) {
      case 2: {
        const f: { filterByCommitment?: boolean; interslotUpdates?: boolean } = {}
        const key = mapEntry(nested(r, wt, 'slots'), (v) =>
          walk(v, (n, t) => {
            if (n === 1) f.filterByCommitment = boolOf(v, t, 'filter_by_commitment')
            else if (n === 2) f.interslotUpdates = boolOf(v, t, 'interslot_updates')
            else return false
            return true
          }),
        )
        ;(out.slots ??= {})[key] = f
        return true
      }
      case 4: {
        const f: NonNullable<SubscribeRequest['blocks']>[string] = { accountInclude: [] }
        const key = mapEntry(nested(r, wt, 'blocks'), (v) =>
          walk(v, (n, t) => {
            if (n === 1) f.accountInclude!.push(stringOf(v, t, 'account_include'))
            else if (n === 2) f.includeTransactions = boolOf(v, t, 'include_transactions')
            else if (n === 3) f.includeAccounts = boolOf(v, t, 'include_accounts')
            else if (n === 4) f.includeEntries = boolOf(v, t, 'include_entries')
            else return false
            return true
          }),
        )
        ;(out.blocks ??= {})[key] = f
        return true
      }
      case 5:
        ;(out.blocksMeta ??= {})[mapEntry(nested(r, wt, 'blocks_meta'), () => {})] = {}
        return true
      case 6: {
        varintOf(r, wt, 'commitment')
        const v = r.uint32()
        const c = COMMITMENTS[v]
        if (!c) throw new ProtoError(`protobuf: unknown commitment level ${v}`)
        out.commitment = c
        return true
      }
      case 9: {
        const p = nested(r, wt, 'ping')
        let id = 0
        walk(p, (n, t) => (n === 1 ? (varintOf(p, t, 'ping id'), (id = int32(p)), true) : false))
        out.ping = { id }
        return true
      }
      case 11:
        varintOf(r, wt, 'from_slot')
        out.fromSlot = num(r, 'from_slot')
        return true
    }
    return false
  })
  return out
}

// --- SubscribeUpdate ---------------------------------------------------------------------------

export interface SlotUpdate {
  slot: number
  parent?: number
  status: SlotStatus
  deadError?: string
}

/** one transaction of a block (SubscribeUpdateTransactionInfo); storage messages as bytes */
export interface TransactionInfo {
  signature: Uint8Array
  isVote: boolean
  /** solana.storage.ConfirmedBlock.Transaction */
  transaction: Uint8Array | null
  /** solana.storage.ConfirmedBlock.TransactionStatusMeta */
  meta: Uint8Array | null
  index: number
}

/** the header members shared by SubscribeUpdateBlock and SubscribeUpdateBlockMeta */
export interface BlockHeader {
  slot: number
  blockhash: string
  parentSlot: number
  parentBlockhash: string
  /** UnixTimestamp.timestamp (absent: the message has none) */
  blockTime: bigint | null
  /** BlockHeight.block_height */
  blockHeight: bigint | null
  /** solana.storage.ConfirmedBlock.Rewards (absent: none sent) */
  rewards: Uint8Array | null
  executedTransactionCount: number
  entriesCount: number
}

export interface BlockUpdate extends BlockHeader {
  transactions: TransactionInfo[]
}

/**
 * A block update read for its header only (`decodeSubscribeUpdate(b, true)`): its transactions
 * counted, not decoded; the SubscribeUpdateBlock message is left whole for a block decoding thread
 * (block-decode.ts). `rewards` is a view of `message` as well.
 */
export interface BlockFrame extends BlockHeader {
  transactionCount: number
  /** the SubscribeUpdateBlock message: a view of the SubscribeUpdate's bytes */
  message: Uint8Array
  /**
   * the memory under `message` holds this update only (gRPC reads each large message into memory
   * of its own, client.ts): it may be transferred to another thread instead of copied
   */
  own?: boolean
}

export type Update =
  | { kind: 'slot'; slot: SlotUpdate }
  | { kind: 'block'; block: BlockUpdate }
  /** a block update read for its header only (`decodeSubscribeUpdate(b, true)`) */
  | { kind: 'block-frame'; frame: BlockFrame }
  | { kind: 'block-meta'; meta: BlockHeader }
  | { kind: 'entry'; slot: number; index: number; executedTransactionCount: number }
  | { kind: 'ping' }
  | { kind: 'pong'; id: number }
  /** an update this client does not read (accounts, transactions, footers) */
  | { kind: 'other'; field: number }

export interface SubscribeUpdate {
  filters: string[]
  update: Update | null
  /** created_at, ms since the epoch (absent: not sent) */
  createdAt?: number
}

function decodeSlot(r: ProtoReader): SlotUpdate {
  const s: SlotUpdate = { slot: 0, status: 'processed' }
  walk(r, (no, wt) => {
    if (no === 1) (varintOf(r, wt, 'slot'), (s.slot = num(r, 'slot')))
    else if (no === 2) (varintOf(r, wt, 'parent'), (s.parent = num(r, 'parent')))
    else if (no === 3) {
      varintOf(r, wt, 'status')
      const v = r.uint32()
      const st = SLOT_STATUSES[v]
      if (!st) throw new ProtoError(`protobuf: unknown slot status ${v}`)
      s.status = st
    } else if (no === 4) s.deadError = stringOf(r, wt, 'dead_error')
    else return false
    return true
  })
  return s
}

/** a one-member wrapper message (UnixTimestamp, BlockHeight): its field 1 as an int64 */
function wrapped(r: ProtoReader): bigint {
  let v = 0n
  walk(r, (no, wt) => {
    if (no !== 1) return false
    varintOf(r, wt, 'wrapped value')
    r.u64Halves()
    v = BigInt.asIntN(64, (BigInt(r.hi) << 32n) | BigInt(r.lo))
    return true
  })
  return v
}

export function decodeTransactionInfo(b: Uint8Array | ProtoReader): TransactionInfo {
  const r = b instanceof ProtoReader ? b : new ProtoReader(b)
  const t: TransactionInfo = { signature: new Uint8Array(0), isVote: false, transaction: null, meta: null, index: 0 }
  walk(r, (no, wt) => {
    if (no === 1) t.signature = lenField(r, wt, 'signature')
    else if (no === 2) t.isVote = boolOf(r, wt, 'is_vote')
    else if (no === 3) t.transaction = lenField(r, wt, 'transaction')
    else if (no === 4) t.meta = lenField(r, wt, 'meta')
    else if (no === 5) (varintOf(r, wt, 'index'), (t.index = num(r, 'index')))
    else return false
    return true
  })
  return t
}

function emptyHeader(): BlockHeader {
  return {
    slot: 0,
    blockhash: '',
    parentSlot: 0,
    parentBlockhash: '',
    blockTime: null,
    blockHeight: null,
    rewards: null,
    executedTransactionCount: 0,
    entriesCount: 0,
  }
}

/** field numbers of the header members: SubscribeUpdateBlock and SubscribeUpdateBlockMeta differ */
const BLOCK_FIELDS = { parentSlot: 7, parentBlockhash: 8, executed: 9, entries: 12 }
const META_FIELDS = { parentSlot: 6, parentBlockhash: 7, executed: 8, entries: 9 }

/** reads a header member; false when `no` is not one */
function headerField(h: BlockHeader, r: ProtoReader, no: number, wt: number, n: typeof BLOCK_FIELDS): boolean {
  if (no === 1) (varintOf(r, wt, 'slot'), (h.slot = num(r, 'slot')))
  else if (no === 2) h.blockhash = stringOf(r, wt, 'blockhash')
  else if (no === 3) h.rewards = lenField(r, wt, 'rewards')
  else if (no === 4) h.blockTime = wrapped(nested(r, wt, 'block_time'))
  else if (no === 5) h.blockHeight = wrapped(nested(r, wt, 'block_height'))
  else if (no === n.parentSlot) (varintOf(r, wt, 'parent_slot'), (h.parentSlot = num(r, 'parent_slot')))
  else if (no === n.parentBlockhash) h.parentBlockhash = stringOf(r, wt, 'parent_blockhash')
  else if (no === n.executed)
    (varintOf(r, wt, 'executed_transaction_count'), (h.executedTransactionCount = num(r, 'executed_transaction_count')))
  else if (no === n.entries) (varintOf(r, wt, 'entries_count'), (h.entriesCount = num(r, 'entries_count')))
  else return false
  return true
}

export function decodeBlockUpdate(b: Uint8Array | ProtoReader): BlockUpdate {
  const blk: BlockUpdate = { ...emptyHeader(), transactions: [] }
  decodeBlockUpdateWith(b, blk, (r) => blk.transactions.push(decodeTransactionInfo(r)))
  return blk
}

/**
 * a SubscribeUpdateBlock's header into `h`, each transaction (`SubscribeUpdateTransactionInfo`)
 * given to `transaction` as a reader over its bytes alone (the reader is the caller's)
 */
export function decodeBlockUpdateWith<H extends BlockHeader>(
  b: Uint8Array | ProtoReader,
  h: H,
  transaction: (r: ProtoReader) => void,
): H {
  const r = b instanceof ProtoReader ? b : new ProtoReader(b)
  walk(r, (no, wt) => {
    if (headerField(h, r, no, wt, BLOCK_FIELDS)) return true
    if (no !== 6) return false
    transaction(nested(r, wt, 'transactions'))
    return true
  })
  return h
}

/** a header with the values of absent fields */
export function emptyBlockHeader(): BlockHeader {
  return emptyHeader()
}

/** a SubscribeUpdateBlock's header, its transactions counted and skipped */
function scanBlockUpdate(r: ProtoReader): BlockFrame {
  const f: BlockFrame = { ...emptyHeader(), transactionCount: 0, message: r.buf.subarray(r.pos, r.end) }
  walk(r, (no, wt) => {
    if (headerField(f, r, no, wt, BLOCK_FIELDS)) return true
    if (no !== 6) return false
    if (wt !== LEN) throw new ProtoError(`protobuf: transactions: wire type ${wt}, expected ${LEN}`)
    r.skip(wt)
    f.transactionCount++
    return true
  })
  return f
}

function decodeBlockMeta(r: ProtoReader): BlockHeader {
  const h = emptyHeader()
  walk(r, (no, wt) => headerField(h, r, no, wt, META_FIELDS))
  return h
}

function decodeEntry(r: ProtoReader): Update {
  const e = { kind: 'entry' as const, slot: 0, index: 0, executedTransactionCount: 0 }
  walk(r, (no, wt) => {
    if (no === 1) (varintOf(r, wt, 'slot'), (e.slot = num(r, 'slot')))
    else if (no === 2) (varintOf(r, wt, 'index'), (e.index = num(r, 'index')))
    else if (no === 5)
      (varintOf(r, wt, 'executed_transaction_count'),
        (e.executedTransactionCount = num(r, 'executed_transaction_count')))
    else return false
    return true
  })
  return e
}

/**
 * a SubscribeUpdate; `frames`: a block update is read for its header only (`block-frame`: its
 * transactions are left to a block decoding thread), else decoded (`block`)
 */
export function decodeSubscribeUpdate(b: Uint8Array, frames = false): SubscribeUpdate {
  const u: SubscribeUpdate = { filters: [], update: null }
  const r = new ProtoReader(b)
  walk(r, (no, wt) => {
    switch (no) {
      case 1:
        u.filters.push(stringOf(r, wt, 'filters'))
        return true
      case 3:
        u.update = { kind: 'slot', slot: decodeSlot(nested(r, wt, 'slot')) }
        return true
      case 5:
        u.update = frames
          ? { kind: 'block-frame', frame: scanBlockUpdate(nested(r, wt, 'block')) }
          : { kind: 'block', block: decodeBlockUpdate(nested(r, wt, 'block')) }
        return true
      case 6:
        lenField(r, wt, 'ping')
        u.update = { kind: 'ping' }
        return true
      case 7:
        u.update = { kind: 'block-meta', meta: decodeBlockMeta(nested(r, wt, 'block_meta')) }
        return true
      case 8:
        u.update = decodeEntry(nested(r, wt, 'entry'))
        return true
      case 9: {
        const p = nested(r, wt, 'pong')
        let id = 0
        walk(p, (n, t) => (n === 1 ? (varintOf(p, t, 'pong id'), (id = int32(p)), true) : false))
        u.update = { kind: 'pong', id }
        return true
      }
      case 11: {
        const t = nested(r, wt, 'created_at')
        let seconds = 0
        let nanos = 0
        walk(t, (n, w) => {
          if (n === 1) (varintOf(t, w, 'seconds'), (seconds = num(t, 'seconds')))
          else if (n === 2) (varintOf(t, w, 'nanos'), (nanos = int32(t)))
          else return false
          return true
        })
        u.createdAt = seconds * 1000 + Math.floor(nanos / 1e6)
        return true
      }
      case 2:
      case 4:
      case 10:
      case 12:
        lenField(r, wt, 'update')
        u.update = { kind: 'other', field: no }
        return true
    }
    return false
  })
  return u
}

/** created_at (google.protobuf.Timestamp) of `ms` */
function timestamp(w: ProtoWriter, ms: number): void {
  const t = Math.floor(ms)
  message(w, 11, () => {
    w.u64Field(1, Math.floor(t / 1000))
    w.u64Field(2, (t % 1000) * 1e6)
  })
}

/** a SubscribeUpdate message; `block` updates take their transactions as given (any order) */
export function encodeSubscribeUpdate(u: { filters?: string[]; update: Update; createdAt?: number }): Uint8Array {
  const w = new ProtoWriter(256)
  for (const f of u.filters ?? []) w.stringPresent(1, f)
  const up = u.update
  switch (up.kind) {
    case 'slot':
      message(w, 3, () => {
        w.u64Field(1, up.slot.slot)
        if (up.slot.parent !== undefined) present(w, 2, up.slot.parent)
        w.u32Field(3, SLOT_STATUSES.indexOf(up.slot.status))
        if (up.slot.deadError !== undefined) w.stringPresent(4, up.slot.deadError)
      })
      break
    case 'block':
      message(w, 5, () => writeBlockUpdate(w, up.block))
      break
    case 'block-frame':
      w.bytesPresent(5, up.frame.message)
      break
    case 'block-meta':
      message(w, 7, () => writeHeader(w, up.meta, META_FIELDS))
      break
    case 'entry':
      message(w, 8, () => {
        w.u64Field(1, up.slot)
        w.u64Field(2, up.index)
        w.u64Field(5, up.executedTransactionCount)
      })
      break
    case 'ping':
      message(w, 6, () => {})
      break
    case 'pong':
      message(w, 9, () => w.u64Field(1, up.id))
      break
    case 'other':
      message(w, up.field, () => {})
      break
  }
  if (u.createdAt !== undefined) timestamp(w, u.createdAt)
  return w.finish()
}

function writeHeader(w: ProtoWriter, h: BlockHeader, n: typeof BLOCK_FIELDS): void {
  w.u64Field(1, h.slot)
  w.stringField(2, h.blockhash)
  if (h.rewards) w.bytesPresent(3, h.rewards)
  if (h.blockTime !== null) message(w, 4, () => w.u64Field(1, h.blockTime!))
  if (h.blockHeight !== null) message(w, 5, () => w.u64Field(1, h.blockHeight!))
  w.u64Field(n.parentSlot, h.parentSlot)
  w.stringField(n.parentBlockhash, h.parentBlockhash)
  w.u64Field(n.executed, h.executedTransactionCount)
  w.u64Field(n.entries, h.entriesCount)
}

function writeBlockUpdate(w: ProtoWriter, b: BlockUpdate): void {
  writeHeader(w, b, BLOCK_FIELDS)
  for (const t of b.transactions) {
    message(w, 6, () => {
      w.bytesField(1, t.signature)
      w.boolField(2, t.isVote)
      if (t.transaction) w.bytesPresent(3, t.transaction)
      if (t.meta) w.bytesPresent(4, t.meta)
      w.u64Field(5, t.index)
    })
  }
}

/** a SubscribeUpdate of a block whose SubscribeUpdateBlock message is already encoded */
export function encodeEncodedBlockUpdate(block: Uint8Array, filters: string[] = [], createdAt?: number): Uint8Array {
  const w = new ProtoWriter(block.length + 64)
  for (const f of filters) w.stringPresent(1, f)
  w.bytesPresent(5, block)
  if (createdAt !== undefined) timestamp(w, createdAt)
  return w.finish()
}

/** a SubscribeUpdateBlock message */
export function encodeBlockUpdate(b: BlockUpdate): Uint8Array {
  const w = new ProtoWriter(64 * 1024)
  writeBlockUpdate(w, b)
  return w.finish()
}
