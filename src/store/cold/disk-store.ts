/**
 * DiskColdStore: the finalized, append-only part of a dataset, as immutable columnar chunk files.
 *
 * Directory layout:
 *
 *     CATALOGUE.json  the catalogue's pointer; catalogue/ its segments and log (catalogue.ts)
 *     chunks/         <first>-<last>-g<generation>-<i>.spc chunk files (chunk-file.ts)
 *     tmp/            files being written; emptied on open
 *     LOCK            the one writer (src/store/lock.ts)
 *
 * Write protocol (crash-safe at every step): encode the chunk into tmp/, fsync, rename into
 * chunks/, fsync the directory; then append the catalogue batch listing it (fsync); only then
 * delete files the new state dropped. A file under chunks/ that the catalogue does not list is a
 * leftover of a crash and is deleted when a writer opens the store; nothing unlisted is ever
 * served. Every read is checked: footer and column crc32 on use, sizes of the recent files on
 * open, sha256 of every file with `verify()` / `{ verify: 'full' }`.
 *
 * Small appends (the real-time pipeline appends a few finalized blocks at a time) are written as
 * small "unsealed" chunks right away, so they are durable and queryable with one file + one
 * catalogue batch each. They are compacted like an LSM tail: `fanout` unsealed chunks of the same
 * level merge into one of the next level, and once the unsealed tail holds a chunk's worth of
 * blocks (targetBlocks or targetBytes) it is rewritten as sealed full-size chunks. Each block is
 * so rewritten about log_fanout(target / batch) times, and the tail never holds more than
 * (fanout - 1) * levels small files. Bulk imports append target-sized batches, written sealed at
 * once.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { rename } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { Block } from '../../model.ts'
import type { Chunk, HeadInfo } from '../chunk.ts'
import { readChunkBlocksAsync, writeChunkFile, writeEncodedChunk, type WriteOptions } from './chunk-file.ts'
import { CHUNK_OBJECT_BYTES, chunkKey, DiskChunk, type ColumnCache } from './disk-chunk.ts'
import { ByteLru, type CacheStats } from './lru.ts'
import { PageIo } from './raw/page-io.ts'
import { collect, prefetch, unwatch, watch } from './prefetch.ts'
import { ChunkIndex, chunkFileName, type ChunkEntry } from './chunk-index/chunk-index.ts'
import { fsyncDir } from './manifest.ts'
import { LockError, releaseLock, takeLock } from '../lock.ts'
import type { ColdStore } from '../types.ts'
import { estimateAll, Plan, splitBlocks, type PlanStore } from './tail-plan.ts'
import { TailColumns, writeColumnsFile } from './tail-columns.ts'
import type { ChunkColumns } from './chunk-file.ts'
import { checkFiles, removeLeftovers, wrap } from './disk-store-files.ts'
import {
  ColdStoreError,
  MAX_TARGET_BLOCKS,
  MAX_TARGET_BYTES,
  type DiskColdStoreOptions,
  type PreparedChunk,
  type PreparedChunkInfo,
} from './disk-store-options.ts'

export { estimateBlockBytes } from './tail-plan.ts'

export type { ChunkEntry } from './chunk-index/chunk-index.ts'
export {
  ColdStoreError,
  MAX_TARGET_BLOCKS,
  MAX_TARGET_BYTES,
  type DiskColdStoreOptions,
  type PreparedChunk,
  type PreparedChunkInfo,
} from './disk-store-options.ts'

export class DiskColdStore implements ColdStore, PlanStore {
  /** the chunk files that make up the store (on disk: the chunk catalogue, CATALOGUE.json) */
  private readonly chunkIndex: ChunkIndex
  private readonly cache: ColumnCache
  /** this store's open descriptors, scratch pages and read counters (reads of chunk files on demand) */
  readonly io = new PageIo()
  private queue: Promise<unknown> = Promise.resolve()
  /** running chunks() iterations per catalogue generation they started on */
  private readonly active = new Map<number, number>()
  /** files dropped by the catalogue generation `gen` at time `at`, not deleted yet */
  private garbage: { file: string; at: number; gen: number }[] = []
  private closed = false
  readonly targetBlocks: number
  readonly targetBytes: number
  readonly fanout: number
  /** the chunk files' directory and a separator: a chunk's path is this and its file name */
  private readonly chunkPrefix: string
  /**
   * each catalogue entry's chunk path and cache key, made once while the entry object lives (the
   * catalogue keeps its latest entries as objects; a held key is hashed once, a new one at every
   * lookup); not the chunk objects, which only the byte-bounded cache holds
   */
  private readonly keysOf = new WeakMap<ChunkEntry, { path: string; key: string }>()
  /** estimated bytes (`estimateBlockBytes`) of the blocks of each unsealed tail chunk, by file */
  private readonly estOf = new Map<string, number>()
  /** the blocks of the unsealed tail as columns, when this store wrote all of it (tail-columns.ts) */
  private readonly held = new TailColumns(() => this.encodeOptions)

  private constructor(
    readonly dir: string,
    private readonly opts: DiskColdStoreOptions,
    index: ChunkIndex,
  ) {
    this.chunkIndex = index
    this.chunkPrefix = join(dir, 'chunks') + sep
    this.cache = new ByteLru(opts.cacheBytes ?? 192 * 1024 * 1024)
    this.targetBlocks = opts.targetBlocks ?? 10_000
    this.targetBytes = opts.targetBytes ?? 32 * 1024 * 1024
    if (!Number.isInteger(this.targetBlocks) || this.targetBlocks < 1 || this.targetBlocks > MAX_TARGET_BLOCKS)
      throw new ColdStoreError(
        `targetBlocks must be an integer from 1 to ${MAX_TARGET_BLOCKS}, got ${this.targetBlocks}`,
      )
    if (!Number.isInteger(this.targetBytes) || this.targetBytes < 1 || this.targetBytes > MAX_TARGET_BYTES)
      throw new ColdStoreError(`targetBytes must be an integer from 1 to ${MAX_TARGET_BYTES}, got ${this.targetBytes}`)
    this.fanout = Math.max(2, opts.fanout ?? 8)
  }

  /** Open (a writer creates it when missing) the store in `dir`. */
  static async open(dir: string, opts: DiskColdStoreOptions = {}): Promise<DiskColdStore> {
    const chunksDir = join(dir, 'chunks')
    const indexOpts = { ...opts.catalogue, readOnly: opts.readOnly, fsync: opts.fsync }
    if (opts.readOnly) {
      const index = await wrap(() => ChunkIndex.open(dir, indexOpts))
      if (!index) throw new ColdStoreError(`${dir}: no cold store here (no catalogue)`)
      const s = new DiskColdStore(dir, opts, index)
      await checkFiles(dir, index, opts.verify ?? 'size')
      return s
    }
    mkdirSync(chunksDir, { recursive: true })
    try {
      await takeLock(join(dir, 'LOCK'), dir)
    } catch (e) {
      throw e instanceof LockError ? new ColdStoreError(e.message, { cause: e }) : e
    }
    try {
      const index = (await wrap(() => ChunkIndex.open(dir, indexOpts)))!
      removeLeftovers(dir, index)
      mkdirSync(join(dir, 'tmp'), { recursive: true })
      const s = new DiskColdStore(dir, opts, index)
      await checkFiles(dir, index, opts.verify ?? 'size')
      return s
    } catch (e) {
      await releaseLock(join(dir, 'LOCK'))
      throw e
    }
  }

  /** Check the sha256 of every chunk file against the catalogue (throws on the first mismatch). */
  verify(): Promise<void> {
    return checkFiles(this.dir, this.chunkIndex, 'full')
  }

  /**
   * Read-only stores: pick up what another process published since (a stat when nothing
   * changed, else the new log records). Returns true when the chunk list changed.
   */
  refresh(): boolean {
    const dropped = this.chunkIndex.refresh()
    if (dropped === null) return false
    for (const e of dropped) {
      this.forget(e.file)
      // its descriptor too (the writer deletes the file after its grace period)
      this.io.close(this.chunkPrefix + e.file)
    }
    return true
  }

  /** every entry, in order (reads the whole catalogue: for tools and tests) */
  get entries(): readonly ChunkEntry[] {
    return this.chunkIndex.snapshot().all()
  }

  /** a write of the catalogue that failed midway: the store publishes nothing more until reopened */
  get failed(): Error | null {
    return this.chunkIndex.failed
  }

  /** the number of chunks listed */
  get chunkCount(): number {
    return this.chunkIndex.snapshot().count
  }

  get cachedBytes(): number {
    return this.cache.bytes
  }

  /** the cache's size, budget and counters (metrics) */
  cacheStats(): CacheStats {
    return { bytes: this.cache.bytes, maxBytes: this.cache.maxBytes, entries: this.cache.size, ...this.cache.stats }
  }

  firstBlock(): number | null {
    const snap = this.chunkIndex.snapshot()
    return snap.count ? snap.firstBlockOf(0) : null
  }

  lastBlock(): HeadInfo | null {
    const last = this.chunkIndex.snapshot().last()
    return last ? { number: last.lastBlock, hash: last.lastHash } : null
  }

  /**
   * The chunk object of an entry. Chunk objects (each keeps its parsed footer, tens of KB) live in
   * the same byte-bounded cache as the columns, accounted for their footer once it is read
   * (`DiskChunk.footer`), so the memory budget covers them too: a query over thousands of chunks
   * keeps only the recently used ones.
   */
  private chunkOf(e: ChunkEntry, known: DiskChunk | null = null): DiskChunk {
    let k = this.keysOf.get(e)
    if (k === undefined) {
      const path = this.chunkPrefix + e.file
      this.keysOf.set(e, (k = { path, key: chunkKey(path) }))
    }
    const { path, key } = k
    // the object found for this entry a moment ago (read-ahead), when it is still the cached one
    if (known !== null && known.path === path && this.cache.touch(known.key) === (known as unknown)) return known
    let c = this.cache.touch(key) as unknown as DiskChunk | undefined
    if (c === undefined) {
      c = new DiskChunk(path, e, this.cache, undefined, undefined, this.io)
      this.cache.set(key, c as unknown as ArrayLike<unknown>, CHUNK_OBJECT_BYTES)
    }
    return c
  }

  private forget(file: string): void {
    const prefix = `${this.chunkPrefix}${file}\0`
    this.cache.deleteWhere((k) => k.startsWith(prefix))
  }

  async *chunks(from: number, to: number): AsyncIterable<Chunk> {
    if (to < from) return
    const snap = this.chunkIndex.snapshot() // immutable: later appends do not change it
    const gen = snap.generation
    this.active.set(gen, (this.active.get(gen) ?? 0) + 1)
    const releases: (() => void)[] = []
    const ahead = this.opts.readAhead !== false && !this.opts.acquireChunk
    /** the chunk before this one (its reads tell what to decompress ahead for the one after) */
    let prev: DiskChunk | null = null
    /** the chunk object of entry i + 1 when read-ahead looked it up */
    let following: DiskChunk | null = null
    try {
      for (let i = snap.atOrAfter(from); i < snap.count && snap.firstBlockOf(i) <= to; i++) {
        const e = snap.entry(i)
        if (this.opts.acquireChunk) releases.push(await this.opts.acquireChunk(e))
        const chunk = this.chunkOf(e, following)
        following = null
        if (ahead) {
          if (prev !== null) {
            const wanted = collect(prev.path, prev.footer)
            if (wanted.length > 0 && i + 1 < snap.count && snap.firstBlockOf(i + 1) <= to) {
              const next = (following = this.chunkOf(snap.entry(i + 1)))
              prefetch(next.path, next.footer, wanted, (kind, field, m) => next.holds(kind, field, m))
            }
          }
          watch(chunk.path)
          prev = chunk
        }
        if (e.lastBlock <= to) {
          yield chunk
          continue
        }
        const numbers = chunk.header('number')
        let lo = 0
        let hi = chunk.blockCount
        while (lo < hi) {
          const mid = (lo + hi) >>> 1
          if (numbers[mid] <= to) lo = mid + 1
          else hi = mid
        }
        if (lo > 0) yield chunk.prefix(lo)
      }
    } finally {
      if (prev !== null) unwatch(prev.path)
      for (const r of releases) r()
      const n = this.active.get(gen)! - 1
      if (n) this.active.set(gen, n)
      else this.active.delete(gen)
      this.collect()
    }
  }

  async chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    const snap = this.chunkIndex.snapshot()
    const out: HeadInfo[][] = []
    let need = limit
    let i = snap.atOrAfter(n) // first entry that may hold a block >= n
    if (i < snap.count && snap.firstBlockOf(i) < n) i++ // it also holds blocks below n
    for (i = i - 1; i >= 0 && need > 0; i--) {
      const e = snap.entry(i)
      const release = this.opts.acquireChunk ? await this.opts.acquireChunk(e) : null
      const c = this.chunkOf(e)
      let nums: ArrayLike<number>, hashes: ArrayLike<string>
      try {
        nums = c.header('number')
        hashes = c.header('hash')
      } finally {
        release?.()
      }
      const part: HeadInfo[] = []
      for (let b = c.blockCount - 1; b >= 0 && need > 0; b--) {
        if (nums[b] >= n) continue
        part.push({ number: nums[b], hash: hashes[b] })
        need--
      }
      out.push(part.reverse())
    }
    return out.reverse().flat()
  }

  /** Append finalized blocks (ascending, above lastBlock()); durable when the promise resolves. */
  append(blocks: Block[]): Promise<void> {
    if (this.opts.readOnly) return Promise.reject(new ColdStoreError('cold store opened read-only'))
    const run = this.queue.then(() => this.doAppend(blocks))
    this.queue = run.catch(() => undefined)
    return run
  }

  /** Rewrite the whole unsealed tail as sealed chunk(s) now. */
  compact(): Promise<void> {
    const run = this.queue.then(async () => {
      const tail = this.tail()
      if (tail.length > 1 || (tail.length === 1 && !tail[0].sealed)) await this.sealTail(tail)
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  private tail(): ChunkEntry[] {
    return [...this.chunkIndex.snapshot().tail]
  }

  private async doAppend(input: Block[]): Promise<void> {
    if (this.closed) throw new ColdStoreError('cold store closed')
    const blocks = await this.unstored(input)
    if (blocks.length === 0) return
    // The whole new state (new chunks, the tail's merges) is planned and its files written first,
    // then published in one catalogue batch: an append that throws published nothing (the files it
    // wrote are deleted), one that resolves published all of it.
    const snap = this.chunkIndex.snapshot()
    const tail = [...snap.tail]
    const plan = new Plan(this.chunkIndex.currentGeneration + 1, this)
    // taken: an append that throws leaves none (the next seal reads the tail's files)
    let held = this.held.take(tail)
    await this.applyPlan(plan, snap.count - tail.length, async () => {
      let tailBlocks = 0
      let tailEst = 0
      for (const e of tail) {
        tailBlocks += e.blockCount
        tailEst += await this.estimateOf(e)
      }
      const newEst = estimateAll(blocks)
      // An unsealed tail that the new blocks would fill is rewritten together with them, so unsealed
      // (small) chunks only ever exist at the end of the store. "Full" is judged by the same
      // estimate that splits blocks into chunks (`split`, `isFull`), never by file sizes: a tail
      // judged by one measure and split by the other wrote sealed chunks after unsealed ones.
      if (
        tail.length > 0 &&
        (tailBlocks + blocks.length >= this.targetBlocks || tailEst + newEst >= this.targetBytes)
      ) {
        // the tail's blocks from the columns held (below a chunk's size: it falls whole in the first chunk)
        if (held && tailBlocks < this.targetBlocks && tailEst < this.targetBytes) {
          const cols = held
          held = null
          await plan.groupsAfter(cols, tailEst, blocks, 0)
        } else await plan.groups([...(await this.readEntries(tail)), ...blocks], 0)
      } else {
        for (const e of tail) plan.tail.push({ e, est: this.estOf.get(e.file)!, blocks: null })
        if (tail.length === 0) await plan.groups(blocks, 0)
        else plan.tail.push({ e: await plan.chunk(blocks, false, 0), est: newEst, blocks })
      }
      await plan.merges()
    })
    this.held.settle(this.chunkIndex.snapshot().tail, held, blocks)
  }

  /**
   * The blocks of an append that are not stored yet. An append retried after an error whose blocks
   * were stored after all (a writer process that died after publishing, a caller that did not see
   * the answer) is recognized: blocks at or below the store's last block are skipped when the
   * store holds them with the same hashes; anything else below it is an error.
   */
  private async unstored(blocks: Block[]): Promise<Block[]> {
    const last = this.lastBlock()
    let k = 0
    if (last && blocks.length > 0 && blocks[0].header.number <= last.number) {
      while (k < blocks.length && blocks[k].header.number <= last.number) k++
      const first = blocks[0].header.number
      const stored = new Map<number, string>()
      for (const h of await this.chainBefore(last.number + 1, last.number - first + 1))
        if (h.number >= first) stored.set(h.number, h.hash)
      for (const b of blocks.slice(0, k))
        if (stored.get(b.header.number) !== b.header.hash)
          throw new ColdStoreError(
            stored.has(b.header.number)
              ? `append: block ${b.header.number} is stored with another hash (${stored.get(b.header.number)}, not ${b.header.hash})`
              : `append: block ${b.header.number} is not above the store's last block ${last.number}`,
          )
    }
    let prev = k > 0 ? blocks[k - 1].header.number : (last?.number ?? -1)
    for (const b of blocks.slice(k)) {
      if (!(b.header.number > prev))
        throw new ColdStoreError(`append: blocks must ascend (${b.header.number} after ${prev})`)
      prev = b.header.number
    }
    return k > 0 ? blocks.slice(k) : blocks
  }

  /** estimated bytes (`estimateBlockBytes`) of the blocks of an unsealed tail entry */
  private async estimateOf(e: ChunkEntry): Promise<number> {
    let v = this.estOf.get(e.file)
    if (v === undefined) {
      // a tail this process did not write (it was opened with it): read once
      v = estimateAll(await this.readEntries([e]))
      this.estOf.set(e.file, v)
    }
    return v
  }

  /** estimates kept only for the current unsealed tail */
  private pruneEstimates(): void {
    const live = new Set(this.chunkIndex.snapshot().tail.map((e) => e.file))
    for (const f of this.estOf.keys()) if (!live.has(f)) this.estOf.delete(f)
  }

  /** delete a chunk file the catalogue does not list (never published) */
  private removeUnlisted(file: string): void {
    this.forget(file)
    const p = join(this.dir, 'chunks', file)
    this.io.close(p)
    rmSync(p, { force: true })
  }

  /** the blocks of listed chunks, read from their files */
  async readEntries(entries: readonly ChunkEntry[]): Promise<Block[]> {
    const out: Block[] = []
    for (const e of entries)
      out.push(...(await readChunkBlocksAsync(join(this.dir, 'chunks', e.file), this.chunkOf(e).footer)))
    return out
  }

  /** write chunk file `i` of generation `gen` (tmp/, then chunks/, durably): its catalogue entry */
  async writeChunk(
    b: Block[] | ChunkColumns,
    gen: number,
    i: number,
    sealed: boolean,
    level: number,
  ): Promise<ChunkEntry> {
    const heads = Array.isArray(b) ? b.map((x) => x.header) : b.blockHeaders
    const last = heads[heads.length - 1]
    const range = { firstBlock: heads[0].number, lastBlock: last.number, blockCount: heads.length }
    return this.placeChunk({ ...range, lastHash: last.hash }, gen, i, sealed, level, (tmp) =>
      Array.isArray(b)
        ? writeChunkFile(tmp, b, { ...this.encodeOptions, transient: !sealed })
        : writeColumnsFile(tmp, b, this.opts.fsync !== false),
    )
  }

  /** write a chunk file with `write` into tmp/, move it into chunks/ (durably): its catalogue entry */
  private async placeChunk(
    c: PreparedChunkInfo,
    gen: number,
    i: number,
    sealed: boolean,
    level: number,
    write: (tmp: string) => Promise<{ bytes: number; sha256: string }>,
  ): Promise<ChunkEntry> {
    const file = chunkFileName(c.firstBlock, c.lastBlock, gen, i)
    const tmp = join(this.dir, 'tmp', file)
    const w = await write(tmp)
    await rename(tmp, join(this.dir, 'chunks', file))
    if (this.opts.fsync !== false) await fsyncDir(join(this.dir, 'chunks'))
    const { firstBlock, lastBlock, blockCount, lastHash } = c
    return { file, firstBlock, lastBlock, blockCount, lastHash, bytes: w.bytes, sha256: w.sha256, sealed, level }
  }

  /** how chunk files of this store are encoded (for `encodeChunk` elsewhere, e.g. import workers) */
  get encodeOptions(): WriteOptions {
    const { compress, formatVersion, frameLog, compressHere } = this.opts
    const zstd = this.opts.zstd ?? (compressHere ? true : undefined)
    const o: WriteOptions = { compress, fsync: this.opts.fsync !== false, formatVersion, frameLog, zstd }
    if (compressHere !== undefined) o.compressHere = compressHere
    return o
  }

  /** The unsealed chunks at the end of the store (see `appendEncoded`), oldest first. */
  unsealedTail(): readonly ChunkEntry[] {
    return this.tail().filter((e) => !e.sealed)
  }

  /** The path of a listed chunk file. */
  chunkPath(e: ChunkEntry): string {
    return join(this.dir, 'chunks', e.file)
  }

  /**
   * Bulk import: publish one chunk the caller encoded (`encodeChunk` of blocks above lastBlock(),
   * or, with `replacesTail`, of the blocks of the current `unsealedTail()` followed by new ones),
   * as it is: sealed or not, never split or merged. Without `replacesTail` the store must have no
   * unsealed tail. Durable when the promise resolves (same protocol as `append`).
   */
  appendEncoded(c: PreparedChunk, opts: { sealed: boolean; replacesTail: boolean }): Promise<void> {
    if (this.opts.readOnly) return Promise.reject(new ColdStoreError('cold store opened read-only'))
    const run = this.queue.then(async () => {
      if (this.closed) throw new ColdStoreError('cold store closed')
      const tail = opts.replacesTail ? this.unsealedTail() : []
      if (!opts.replacesTail && this.unsealedTail().length)
        throw new ColdStoreError('appendEncoded: the store has an unsealed tail that the chunk does not replace')
      const snap = this.chunkIndex.snapshot()
      const keep = snap.count - tail.length
      const below = keep > 0 ? snap.lastBlockOf(keep - 1) : -1
      if (
        tail.length
          ? c.firstBlock !== tail[0].firstBlock || c.lastBlock <= tail[tail.length - 1].lastBlock
          : c.firstBlock <= below
      )
        throw new ColdStoreError(`appendEncoded: blocks ${c.firstBlock}..${c.lastBlock} do not continue the store`)
      const gen = this.chunkIndex.currentGeneration + 1
      const e = await this.placeChunk(c, gen, 0, opts.sealed, 0, async (tmp) => {
        await writeEncodedChunk(tmp, c.parts, this.opts.fsync !== false)
        return c
      })
      await this.publish(keep, [e])
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /** publish: the first `keep` entries stay, `written` follow; files of the entries dropped go later */
  private async publish(keep: number, written: ChunkEntry[]): Promise<void> {
    const droppedEntries = await wrap(() => this.chunkIndex.publish(keep, written))
    const gen = this.chunkIndex.currentGeneration
    // an entry published again (a tail chunk now sealed) keeps its file
    const still = new Set(written.map((e) => e.file))
    const dropped = droppedEntries.map((e) => e.file).filter((f) => !still.has(f))
    for (const f of dropped) this.forget(f)
    const now = Date.now()
    for (const file of dropped) this.garbage.push({ file, at: now, gen })
    for (const file of this.chunkIndex.dropped.splice(0)) this.garbage.push({ file: join('..', file), at: now, gen })
    this.collect()
    if (this.garbage.length) setTimeout(() => this.collect(), (this.opts.graceMs ?? 30_000) + 10).unref()
  }

  /** delete dropped files once no reader may still be iterating an older catalogue state */
  private collect(all = false): void {
    if (this.garbage.length === 0 || this.closed) return
    let oldestReader = Infinity
    for (const g of this.active.keys()) if (g < oldestReader) oldestReader = g
    const limit = all ? Infinity : Date.now() - (this.opts.graceMs ?? 30_000)
    const keep: { file: string; at: number; gen: number }[] = []
    for (const g of this.garbage) {
      // readers that started on a catalogue state older than g.gen may still read the file
      if (g.at <= limit && oldestReader >= g.gen) {
        this.io.close(join(this.dir, 'chunks', g.file))
        rmSync(join(this.dir, 'chunks', g.file), { force: true })
      } else keep.push(g)
    }
    this.garbage = keep
  }

  /** Rewrite the unsealed tail as sealed chunk(s) (all or nothing, as an append). */
  private async sealTail(tail: ChunkEntry[]): Promise<void> {
    const keep = this.chunkIndex.snapshot().count - tail.length
    const plan = new Plan(this.chunkIndex.currentGeneration + 1, this)
    await this.applyPlan(plan, keep, async () => {
      for (const g of splitBlocks(this, await this.readEntries(tail))) plan.sealed.push(await plan.chunk(g, true, 0))
    })
  }

  /**
   * Write the files of a plan (`build`), then publish its entries after the first `keep` ones in
   * one catalogue batch. Throws only when nothing was published; then the plan's files are deleted.
   */
  private async applyPlan(plan: Plan, keep: number, build: () => Promise<void>): Promise<void> {
    try {
      await build()
      await this.publish(keep, plan.entries())
    } catch (e) {
      // `publish` throws only before its batch is durable (the generation has not moved)
      if (this.chunkIndex.currentGeneration < plan.gen) for (const f of plan.files) this.removeUnlisted(f)
      throw e
    }
    for (const t of plan.tail) this.estOf.set(t.e.file, t.est)
    // files written by the plan and merged again within it were never listed
    const listed = new Set(plan.entries().map((e) => e.file))
    for (const f of plan.files) if (!listed.has(f)) this.removeUnlisted(f)
    this.pruneEstimates()
  }

  async close(): Promise<void> {
    if (this.closed) return
    await this.queue
    if (!this.opts.readOnly) this.collect(true)
    this.closed = true
    this.chunkIndex.close()
    this.cache.clear()
    this.io.close(join(this.dir, 'chunks') + '/')
    if (!this.opts.readOnly) await releaseLock(join(this.dir, 'LOCK'))
  }
}
