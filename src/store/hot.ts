/**
 * The hot store: unfinalized blocks of the followed chain, durable in LMDB, fork-aware.
 *
 * State: an anchor (the highest finalized block, i.e. the cold store's last block; null before
 * anything was finalized) and a window of blocks above it that form one chain: every block's
 * parentNumber/parentHash name the block below it (or the anchor).
 *
 * Transitions, each one LMDB write transaction, made visible in memory (and announced with a
 * `change` event) only once committed:
 *  - push(block) whose parent is the tip            → EXTEND
 *  - push(block) whose parent is an earlier block   → REPLACE: the blocks above the parent are
 *    (or the anchor)                                   removed and the new block appended, atomically
 *  - push(block) with an unknown parent             → no change, `unlinked`: the caller resolves the
 *                                                      common ancestor with the source and re-fetches
 *  - rollbackTo(n)                                  → blocks above n removed (the node's chain ends lower)
 *  - finalize(upTo, cold)                           → blocks ≤ upTo appended IN ORDER to the cold store
 *                                                      (durable when resolved), then deleted here and the
 *                                                      anchor moved, in one transaction
 * A crash between the cold append and the hot delete is repaired on open: blocks at or below the
 * cold store's last block are dropped (they are already in the cold store).
 *
 * Blocks are stored packed (src/store/packed-block.ts: V8's serialization, which keeps bigint
 * values exact; checked by test/realtime-hot.test.ts); blocks written by earlier versions with
 * lmdb's own msgpack encoder still load. All window blocks are also held in memory (a block that
 * came packed from a worker thread decodes on first read): readers get immutable snapshots
 * (`entries()`), never touched by later writes.
 */
import { isStorageError, StorageError } from './write-all.ts'
import { EventEmitter } from 'node:events'
import { mkdirSync, statfsSync } from 'node:fs'
import { asBinary, open, type Database, type DatabaseOptions, type RootDatabase } from 'lmdb'
import type { Block } from '../model.ts'
import {
  isPackedBlock,
  isV8Packed,
  lazyBlock,
  packBlock,
  storedBytes,
  storedSize,
  unpackBlock,
  type PackedBlock,
} from './packed-block.ts'
import type { HeadInfo } from './chunk.ts'
import type { ColdStore } from './types.ts'
import { wallNow } from '../util/wall-clock.ts'

export interface HotHeader {
  number: number
  hash: string
  parentNumber: number
  parentHash: string
}

export interface HotEntry {
  readonly header: HotHeader
  readonly block: Block
}

export type PushResult =
  /** appended on top of the tip */
  | { status: 'extended' }
  /** a fork: `removed` (ascending) were dropped and the block appended on the common ancestor */
  | { status: 'replaced'; removed: HeadInfo[] }
  /** the same block (number and hash) is already stored; nothing changed */
  | { status: 'duplicate' }
  /** at or below the anchor (already finalized); nothing changed */
  | { status: 'stale' }
  /** the parent is neither in the window nor the anchor; nothing changed */
  | { status: 'unlinked' }

/** wall-clock ms (performance.timeOrigin + performance.now()) of the steps of one push */
export interface PushMarks {
  /** the write lock taken */
  locked?: number
  /** the LMDB transaction committed */
  committed?: number
  /** the new window published and the `change` listeners (waiting streams) called */
  emitted?: number
}

export interface HotStoreOptions {
  /** directory of the LMDB environment (created when missing) */
  path: string
  /**
   * The cold store's last block. Window blocks at or below it are dropped on open (repairs a
   * crash between a cold append and the hot delete); it becomes the anchor when it is above the
   * persisted one.
   */
  coldLast?: HeadInfo | null
  /** skip fsync on commit (tests/benchmarks only; a system crash may then lose recent commits) */
  noSync?: boolean
}

const ANCHOR_KEY = 'anchor'

export function headerOf(b: Block | PackedBlock): HotHeader {
  const h = b.header
  return { number: h.number, hash: h.hash, parentNumber: h.parentNumber, parentHash: h.parentHash }
}

export class HotStore extends EventEmitter {
  private readonly root: RootDatabase
  private readonly blocks: Database<Block, number>
  private readonly meta: Database<HeadInfo | null, string>
  private window: readonly HotEntry[] = []
  private anchorInfo: HeadInfo | null = null
  private writeLock: Promise<unknown> = Promise.resolve()
  private finalizeQueue: Promise<unknown> = Promise.resolve()
  /** the highest block a running finalize() is moving to the cold store (see finalize) */
  private finalizing: number | null = null
  private closed = false
  /** a commit failed (a full or failing disk): closing does not wait for lmdb-js for good */
  private commitFailed = false
  /** where blocks packed in parts are joined before their put (grown to the largest, kept) */
  private scratch = new Uint8Array(0)
  /** the stored size of each window entry's block (see `bytes`) */
  private readonly sizes = new WeakMap<HotEntry, number>()
  /** blocks dropped on open because they were already in the cold store (or failed to link) */
  readonly droppedOnOpen: number[] = []
  /**
   * set on open when the persisted anchor is above the cold store's last block: blocks finalized
   * earlier are missing from the cold store (a non-durable or replaced cold store)
   */
  coldBehind: { anchor: HeadInfo; coldLast: HeadInfo | null } | null = null

  private constructor(
    root: RootDatabase,
    private readonly path: string,
  ) {
    super()
    this.setMaxListeners(0)
    this.root = root
    // values are written as packed bytes (packed-block.ts) and read with getBinary; the msgpack
    // encoding reads blocks stored by earlier versions (mapsAsObjects: as objects, as they were)
    const blockOptions = { name: 'blocks', keyEncoding: 'ordered-binary', mapsAsObjects: true } as const
    this.blocks = root.openDB<Block, number>(blockOptions as DatabaseOptions & { name: string })
    this.meta = root.openDB<HeadInfo | null, string>({ name: 'meta' })
  }

  /** the stored form of a packed block, parts joined in `scratch` (valid until the next call) */
  private stored(p: PackedBlock): Uint8Array {
    if (p.packed instanceof Uint8Array) return p.packed
    const size = storedSize(p)
    // grown with room, so that slightly larger blocks do not each take new memory
    if (this.scratch.byteLength < size) this.scratch = new Uint8Array(Math.ceil(size * 1.25))
    return storedBytes(p, this.scratch)
  }

  static async open(opts: HotStoreOptions): Promise<HotStore> {
    mkdirSync(opts.path, { recursive: true })
    quietLmdbCommitErrors()
    const root = open({ path: opts.path, noSync: opts.noSync ?? false, maxDbs: 4 })
    const s = new HotStore(root, opts.path)
    await s.load(opts.coldLast ?? null)
    return s
  }

  private async load(coldLast: HeadInfo | null): Promise<void> {
    let anchor = this.meta.get(ANCHOR_KEY) ?? null
    if (anchor && (!coldLast || coldLast.number < anchor.number)) this.coldBehind = { anchor, coldLast }
    if (coldLast && (!anchor || coldLast.number > anchor.number)) anchor = coldLast
    const entries: HotEntry[] = []
    const drop: number[] = []
    for (const key of this.blocks.getKeys({})) {
      if (anchor && key <= anchor.number) {
        drop.push(key)
        continue
      }
      const raw = this.blocks.getBinary(key)
      if (!raw) continue
      const value = isV8Packed(raw) ? unpackBlock(raw) : this.blocks.get(key)!
      const h = headerOf(value)
      const prev = entries.length ? entries[entries.length - 1].header : anchor
      if (prev && (h.parentNumber !== prev.number || h.parentHash !== prev.hash)) {
        // cannot happen with atomic commits unless the cold store and the hot store disagree
        // (e.g. a cold store restored from elsewhere): the window is re-fetchable, drop the rest
        drop.push(key)
        continue
      }
      const entry = { header: h, block: value }
      this.sizes.set(entry, raw.byteLength)
      entries.push(entry)
    }
    // a window that failed to link is dropped from the first broken block on
    if (drop.length || (this.meta.get(ANCHOR_KEY)?.number ?? null) !== (anchor?.number ?? null)) {
      await this.txn(() => {
        for (const k of drop) settled(this.blocks.remove(k))
        settled(this.meta.put(ANCHOR_KEY, anchor))
      })
    }
    this.droppedOnOpen.push(...drop)
    this.window = entries
    this.anchorInfo = anchor
  }

  /**
   * An LMDB write transaction. A commit that fails (a full or failing disk) rejects its
   * transaction with a generic error whose `commitError` is a second promise holding the cause,
   * which nobody else awaits: taken here, the cause is the error (a StorageError for a full or
   * failing disk), and no rejection is left unhandled.
   */
  private async txn(fn: () => void): Promise<void> {
    try {
      await this.root.transaction(fn)
    } catch (e) {
      const pending = (e as { commitError?: Promise<unknown> }).commitError
      if (!pending) throw e
      const cause = await pending.then(
        () => e,
        (c: unknown) => c,
      )
      const code = (cause as { code?: unknown }).code
      this.commitFailed = true
      throw isStorageError(cause) ? new StorageError(this.path, this.failureCode(code), cause) : cause
    }
  }

  /**
   * lmdb-js reports a write that found no room as EIO (a numeric code): a filesystem with no room
   * left is named as full (ENOSPC), so that the message says what to do.
   */
  private failureCode(code: unknown): string {
    if (typeof code === 'string') return code
    try {
      const fs = statfsSync(this.path)
      if (fs.bavail * fs.bsize < 1024 * 1024) return 'ENOSPC'
    } catch {
      // the disk cannot even be asked
    }
    return code === 5 ? 'EIO' : 'ENOSPC'
  }

  /** serialize writers */
  private locked<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.writeLock.then(fn, fn)
    this.writeLock = p.catch(() => {})
    return p
  }

  private checkOpen(): void {
    if (this.closed) throw new Error('hot store is closed')
  }

  /**
   * Bytes of the blocks the hot store holds (their stored form, what LMDB keeps for them: the
   * unfinalized window). LMDB's file does not shrink when blocks leave (freed pages are reused),
   * so this, not the file's size, is what finalization frees.
   */
  get bytes(): number {
    let n = 0
    for (const e of this.window) n += this.sizes.get(e) ?? 0
    return n
  }

  /** bytes of the window blocks numbered n or below (see `bytes`) */
  bytesUpTo(n: number): number {
    let total = 0
    for (const e of this.window) {
      if (e.header.number > n) break
      total += this.sizes.get(e) ?? 0
    }
    return total
  }

  /** the highest finalized block (the cold store's last), or null */
  get anchor(): HeadInfo | null {
    return this.anchorInfo
  }

  /** immutable snapshot of the window, ascending */
  entries(): readonly HotEntry[] {
    return this.window
  }

  get size(): number {
    return this.window.length
  }

  /** the window's tip, or null when the window is empty */
  tip(): HeadInfo | null {
    const e = this.window[this.window.length - 1]
    return e ? { number: e.header.number, hash: e.header.hash } : null
  }

  /** index in `entries` of the block numbered n, or -1 */
  indexOf(n: number, entries: readonly HotEntry[] = this.window): number {
    let lo = 0
    let hi = entries.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const v = entries[mid].header.number
      if (v === n) return mid
      if (v < n) lo = mid + 1
      else hi = mid - 1
    }
    return -1
  }

  /** true when ⟨number, hash⟩ is the anchor or a window block */
  contains(number: number, hash: string): boolean {
    if (this.anchorInfo && this.anchorInfo.number === number) return this.anchorInfo.hash === hash
    const i = this.indexOf(number)
    return i >= 0 && this.window[i].header.hash === hash
  }

  /**
   * store a block (EXTEND or REPLACE) or report why not. A packed block (packed-block.ts) is
   * written as it is and decoded only when a reader first needs its records.
   */
  push(block: Block | PackedBlock, marks?: PushMarks): Promise<PushResult> {
    return this.locked(async () => {
      if (marks) marks.locked = wallNow()
      this.checkOpen()
      const h = headerOf(block)
      if (!(h.parentNumber < h.number))
        throw new Error(`block ${h.number}: parent number ${h.parentNumber} is not below it`)
      const anchor = this.anchorInfo
      if (anchor && h.number <= anchor.number) return { status: 'stale' } as const
      const win = this.window
      const same = this.indexOf(h.number, win)
      if (same >= 0 && win[same].header.hash === h.hash) return { status: 'duplicate' } as const
      // position of the parent: -1 = the anchor (or an empty store without anchor)
      let parentIdx: number
      if (win.length === 0 && anchor === null) {
        parentIdx = -1
      } else if (anchor && h.parentNumber === anchor.number) {
        if (h.parentHash !== anchor.hash) return { status: 'unlinked' } as const
        parentIdx = -1
      } else {
        parentIdx = this.indexOf(h.parentNumber, win)
        if (parentIdx < 0 || win[parentIdx].header.hash !== h.parentHash) return { status: 'unlinked' } as const
      }
      const removed = win.slice(parentIdx + 1)
      // a block being moved to the cold store is final: not replaced (see finalize)
      if (this.finalizing !== null && removed.length && removed[0].header.number <= this.finalizing)
        return { status: 'unlinked' } as const
      let size = 0
      await this.txn(() => {
        for (const e of removed) settled(this.blocks.remove(e.header.number))
        // a block packed in parts is joined into the same memory block after block (LMDB copies
        // it during the put; pushes run one at a time, under the lock)
        const bytes = isPackedBlock(block) ? this.stored(block) : packBlock(block).packed
        size = bytes.byteLength
        settled(this.blocks.put(h.number, asBinary(bytes) as unknown as Block))
      })
      if (marks) marks.committed = wallNow()
      const entry = { header: h, block: isPackedBlock(block) ? lazyBlock(block) : block }
      this.sizes.set(entry, size)
      this.window = [...win.slice(0, parentIdx + 1), entry]
      this.emit('change')
      if (marks) marks.emitted = wallNow()
      if (removed.length === 0) return { status: 'extended' } as const
      return {
        status: 'replaced',
        removed: removed.map((e) => ({ number: e.header.number, hash: e.header.hash })),
      } as const
    })
  }

  /** drop the window blocks above n (n must be the anchor, a window block, or below the window) */
  rollbackTo(n: number): Promise<HeadInfo[]> {
    return this.locked(async () => {
      this.checkOpen()
      if (this.anchorInfo && n < this.anchorInfo.number)
        throw new Error(`rollback to ${n} is below the finalized block ${this.anchorInfo.number}`)
      if (this.finalizing !== null && n < this.finalizing)
        throw new Error(`rollback to ${n} is below the block ${this.finalizing} being finalized`)
      const win = this.window
      const keep = win.filter((e) => e.header.number <= n)
      const removed = win.slice(keep.length)
      if (removed.length === 0) return []
      await this.txn(() => {
        for (const e of removed) settled(this.blocks.remove(e.header.number))
      })
      this.window = keep
      this.emit('change')
      return removed.map((e) => ({ number: e.header.number, hash: e.header.hash }))
    })
  }

  /**
   * Move the window blocks numbered ≤ upTo to the cold store, in order: cold.append first
   * (durable when it resolves), then delete them here and move the anchor, atomically.
   * Returns the moved blocks.
   *
   * The write lock is not held while the cold store appends (with mainnet-sized blocks that takes
   * seconds): new blocks are pushed meanwhile. The blocks being moved are already final for the
   * window: until they leave it, a push that would replace them is `unlinked` and a rollback
   * below them throws, as for blocks below the anchor. One finalize runs at a time.
   */
  finalize(upTo: number, cold: ColdStore, hooks?: { afterColdAppend?: () => void | Promise<void> }): Promise<Block[]> {
    const run = this.finalizeQueue.then(() => this.finalizeNow(upTo, cold, hooks))
    this.finalizeQueue = run.catch(() => {})
    return run
  }

  private async finalizeNow(
    upTo: number,
    cold: ColdStore,
    hooks?: { afterColdAppend?: () => void | Promise<void> },
  ): Promise<Block[]> {
    const moving = await this.locked(async () => {
      this.checkOpen()
      const win = this.window
      let k = 0
      while (k < win.length && win[k].header.number <= upTo) k++
      if (k === 0) return []
      const m = win.slice(0, k)
      this.finalizing = m[k - 1].header.number
      return m
    })
    if (moving.length === 0) return []
    try {
      const coldLast = cold.lastBlock()
      // blocks already in the cold store (only after a crash in between; load() drops them too)
      const fresh = coldLast ? moving.filter((e) => e.header.number > coldLast.number) : moving
      if (fresh.length) await cold.append(fresh.map((e) => e.block))
      await hooks?.afterColdAppend?.()
      return await this.locked(async () => {
        this.checkOpen()
        const last = moving[moving.length - 1].header
        const anchor: HeadInfo = { number: last.number, hash: last.hash }
        await this.txn(() => {
          for (const e of moving) settled(this.blocks.remove(e.header.number))
          settled(this.meta.put(ANCHOR_KEY, anchor))
        })
        this.anchorInfo = anchor
        // the moved blocks are still the window's first (nothing could replace them meanwhile)
        this.window = this.window.slice(moving.length)
        this.emit('change')
        return moving.map((e) => e.block)
      })
    } finally {
      this.finalizing = null
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    await this.locked(async () => {
      this.closed = true
      // after a failed commit (a full disk), closing reports it again: the store closes anyway
      const closing = this.root.close().catch((e: { commitError?: Promise<unknown> }) => {
        if (!e?.commitError) throw e
        return e.commitError.catch(() => undefined)
      })
      // and lmdb-js may wait for ever for writes queued behind the failed commit (never
      // written, nothing to lose: the store's file holds the last good commit)
      if (!this.commitFailed) return closing
      let timer: NodeJS.Timeout | undefined
      await Promise.race([closing, new Promise((r) => (timer = setTimeout(r, CLOSE_AFTER_FAILURE_MS)))])
      clearTimeout(timer)
    })
  }
}

/**
 * A write inside a transaction answers a promise of its own, rejected too when the commit fails:
 * the transaction's outcome is awaited (`txn`), these are settled here so that none is left
 * unhandled.
 */
const CLOSE_AFTER_FAILURE_MS = 2_000

function settled(p: unknown): void {
  if (p instanceof Promise) p.catch(() => undefined)
}

let lmdbQuieted = false
/**
 * lmdb-js also prints a failed commit's cause with console.error (a stack on stderr) before
 * rejecting the commit's transactions, which report it: that print is dropped, every other
 * console.error passes through unchanged.
 */
function quietLmdbCommitErrors(): void {
  if (lmdbQuieted) return
  lmdbQuieted = true
  const print = console.error
  console.error = (...args: unknown[]) => {
    const e = args[0]
    if (
      args.length === 1 &&
      e instanceof Error &&
      typeof (e as { code?: unknown }).code === 'number' &&
      /[\\/]lmdb[\\/]write\.js:/.test(e.stack ?? '')
    )
      return
    print(...args)
  }
}
