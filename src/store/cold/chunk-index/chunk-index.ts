/**
 * The chunk index (the "chunk catalogue" of the docs and of its file names): which chunk files make
 * up a cold store, at a cost per append that does not
 * grow with the number of chunks (a year of mainnet is millions of chunks).
 *
 * Sealed chunks are never removed or changed once listed (only the short unsealed tail at the end
 * is replaced by merges), so the catalogue is an append-only list of sealed entries plus a small
 * tail:
 *
 *     CATALOGUE.json          the pointer: generation, the segment files, the current log file,
 *                             sha256 of its own body; replaced atomically (temp, fsync, rename,
 *                             fsync dir) only when a segment is cut or the log is rewritten
 *     catalogue/seg-<n>.bin   immutable: `segmentEntries` (4,096) sealed entries (fixed-size records) and an
 *                             index of their first/last blocks (two Float64Arrays)
 *     catalogue/log-<g>.bin   append-only: one batch per publication (a header record, the sealed
 *                             entries it adds, the whole new tail), fsynced; every record has a
 *                             crc32, so a torn or damaged end is ignored (and cut off by the next
 *                             writer)
 *
 * An append writes one batch to the log: a few hundred bytes whatever the catalogue's size. When
 * the sealed entries in the log reach `segmentEntries`, they become a new segment file; when the
 * log grows past twice the state it describes, it is rewritten as one batch. Both are a
 * bounded amount of work done every bounded number of appends.
 *
 * Opening reads the pointer and the log (bounded), not the segments: a segment's index (16 bytes
 * per chunk) is read the first time a lookup needs it, and its records (176 bytes each) are read
 * one at a time when a chunk is used. Memory: the index of the segments touched, plus the JS
 * objects of the entries in the log (at most `segmentEntries` + the tail).
 *
 * The same layout works on object storage: segments and logs are immutable once named by the
 * pointer if each log append is written as a new object (`log-<g>-<k>`) listed by the next pointer;
 * the pointer is the one object replaced.
 *
 * A store written by earlier versions (`MANIFEST.json`, one JSON list rewritten per append) is
 * read as it is by readers and converted by the first writer that opens it.
 */
import { createHash } from 'node:crypto'
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fsyncDir, writeFileAtomic } from '../../durable.ts'
import { readManifest, MANIFEST } from '../manifest.ts'
import { storageError, writeAll } from '../../write-all.ts'

import {
  ChunkIndexError,
  decodeBatches,
  encodeBatch,
  encodeSegment,
  FORMAT,
  LOG_MAGIC,
  pad,
  POINTER,
  RECORD,
  SUBDIR,
  type Batch,
  type ChunkEntry,
} from './records.ts'
import { Segment, Snapshot, type SegmentInfo } from './snapshot.ts'

export { ChunkIndexError, chunkFileName, parseChunkFileName, POINTER, RECORD, type ChunkEntry } from './records.ts'
export { Snapshot, type SegmentInfo } from './snapshot.ts'

interface PointerBody {
  format: typeof FORMAT
  version: 1
  generation: number
  log: string
  segments: SegmentInfo[]
}

export interface ChunkIndexOptions {
  readOnly?: boolean
  fsync?: boolean
  /** sealed entries per segment file (default 4,096) */
  segmentEntries?: number
  /** the log is rewritten when it exceeds this and twice the state it holds (default 1 MiB) */
  logBytes?: number
}

function digest(x: unknown): string {
  return createHash('sha256').update(JSON.stringify(x)).digest('hex')
}

function readPointer(dir: string): PointerBody | null {
  const p = join(dir, POINTER)
  let text: string
  try {
    text = readFileSync(p, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
  let parsed: { body: PointerBody; sha256: string }
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ChunkIndexError(`${p}: not JSON`)
  }
  if (!parsed?.body || parsed.body.format !== FORMAT) throw new ChunkIndexError(`${p}: not a solportal catalogue`)
  if (digest(parsed.body) !== parsed.sha256) throw new ChunkIndexError(`${p}: checksum mismatch`)
  if (parsed.body.version !== 1) throw new ChunkIndexError(`${p}: unsupported version ${parsed.body.version}`)
  return parsed.body
}

function statStamp(path: string): string {
  try {
    const s = statSync(path)
    return `${s.mtimeMs}:${s.size}:${s.ino}`
  } catch {
    return ''
  }
}

export class ChunkIndex {
  private pointer: PointerBody
  private segments: Segment[] = []
  private sealed: ChunkEntry[] = []
  private tail: ChunkEntry[] = []
  private generation = 0
  /** log bytes applied (readers: where the next batch starts) */
  private logEnd = 0
  private pointerStamp = ''
  /** read-only over a legacy MANIFEST.json */
  private legacy = false
  private legacyStamp = ''
  readonly segmentEntries: number
  /** files (logs, segments) no longer listed, for the store's garbage collection */
  readonly dropped: string[] = []
  /**
   * a write of the log, a segment or the pointer that failed after it began: the files may hold
   * part of it, which a writer opening the catalogue repairs; this one publishes nothing more
   */
  private broken: Error | null = null

  /** (use `ChunkIndex.open` or `writeChunkIndex`) */
  constructor(
    readonly dir: string,
    private readonly opts: ChunkIndexOptions,
    pointer: PointerBody,
  ) {
    this.pointer = pointer
    this.segmentEntries = Math.max(1, opts.segmentEntries ?? 4096)
  }

  /** the failed write that stops this writer publishing (null while it can): reopen to go on */
  get failed(): Error | null {
    return this.broken
  }

  private get fsync(): boolean {
    return this.opts.fsync !== false
  }

  /** whether a catalogue (or a legacy manifest) exists in `dir` */
  static exists(dir: string): boolean {
    return statStamp(join(dir, POINTER)) !== '' || statStamp(join(dir, MANIFEST)) !== ''
  }

  /**
   * Open the catalogue of `dir`. Read-only: null when there is none. A writer creates an empty one,
   * or converts a legacy MANIFEST.json (then removes it).
   */
  static async open(dir: string, opts: ChunkIndexOptions = {}): Promise<ChunkIndex | null> {
    const ptr = readPointer(dir)
    if (ptr) {
      const c = new ChunkIndex(dir, opts, ptr)
      c.load(ptr)
      if (!opts.readOnly) await c.cutTornTail()
      return c
    }
    const m = readManifest(dir)
    if (opts.readOnly) {
      if (!m) return null
      const c = new ChunkIndex(dir, opts, { format: FORMAT, version: 1, generation: 0, log: '', segments: [] })
      c.loadLegacy()
      return c
    }
    mkdirSync(join(dir, SUBDIR), { recursive: true })
    const c = new ChunkIndex(dir, opts, { format: FORMAT, version: 1, generation: 0, log: '', segments: [] })
    const entries = m ? m.chunks : []
    let s = 0
    while (s < entries.length && entries[s].sealed) s++
    c.generation = m ? m.generation : 0
    await c.rewrite(entries.slice(0, s), entries.slice(s))
    if (m) {
      await rm(join(dir, MANIFEST), { force: true })
      if (c.fsync) await fsyncDir(dir)
    }
    return c
  }

  private loadLegacy(): void {
    const m = readManifest(this.dir)
    if (!m) throw new ChunkIndexError(`${this.dir}: the manifest disappeared`)
    this.legacy = true
    this.legacyStamp = statStamp(join(this.dir, MANIFEST))
    let s = 0
    while (s < m.chunks.length && m.chunks[s].sealed) s++
    this.segments = []
    this.sealed = m.chunks.slice(0, s)
    this.tail = m.chunks.slice(s)
    this.generation = m.generation
  }

  private load(ptr: PointerBody): void {
    // segments stay the same objects (and keep their index) across reloads: they never change
    const known = new Map(this.segments.map((s) => [s.info.file, s]))
    this.pointer = ptr
    this.pointerStamp = statStamp(join(this.dir, POINTER))
    let base = 0
    this.segments = ptr.segments.map((info) => {
      const old = known.get(info.file)
      const s =
        old && old.base === base && old.info.sha256 === info.sha256
          ? old
          : new Segment(info, base, join(this.dir, SUBDIR, info.file))
      base += info.count
      return s
    })
    this.sealed = []
    this.tail = []
    this.generation = ptr.generation
    this.logEnd = LOG_MAGIC.length
    const b = this.readLog()
    if (!b.subarray(0, LOG_MAGIC.length).equals(LOG_MAGIC))
      throw new ChunkIndexError(`${this.logPath()}: not a catalogue log`)
    this.apply(b)
  }

  private logPath(): string {
    return join(this.dir, SUBDIR, this.pointer.log)
  }

  private readLog(): Buffer {
    try {
      return readFileSync(this.logPath())
    } catch (e) {
      throw new ChunkIndexError(
        `${this.logPath()}: the catalogue log is missing (${(e as NodeJS.ErrnoException).code ?? String(e)})`,
      )
    }
  }

  /** apply the complete batches of log bytes `b` after logEnd; true when something was applied */
  private apply(b: Buffer): boolean {
    const { batches, end } = decodeBatches(b, this.logEnd)
    for (const x of batches) {
      const sealedNow = this.segmentTotal() + this.sealed.length
      if (x.sealedBefore !== sealedNow)
        throw new ChunkIndexError(
          `${this.logPath()}: a batch follows ${x.sealedBefore} sealed chunks, the catalogue has ${sealedNow}`,
        )
      for (const e of x.sealed) this.sealed.push(e) // snapshots hold a length: pushing keeps them
      this.tail = x.tail
      this.generation = x.generation
    }
    this.logEnd = end
    return batches.length > 0
  }

  private segmentTotal(): number {
    const ls = this.segments[this.segments.length - 1]
    return ls ? ls.base + ls.info.count : 0
  }

  /** writer open: cut a torn batch at the end of the log, so that appends follow valid bytes */
  private async cutTornTail(): Promise<void> {
    const size = statSync(this.logPath()).size
    if (size === this.logEnd) return
    const fh = await open(this.logPath(), 'r+')
    try {
      await fh.truncate(this.logEnd)
      if (this.fsync) await fh.sync()
    } finally {
      await fh.close()
    }
  }

  snapshot(): Snapshot {
    return new Snapshot(this.generation, this.segments, this.sealed, this.sealed.length, this.tail)
  }

  get currentGeneration(): number {
    return this.generation
  }

  /**
   * Publish a new state: the first `keep` entries stay (all sealed ones at least), `written` follow.
   * Durable when it resolves. The entries of the tail not kept are returned (their files may go).
   */
  async publish(keep: number, written: readonly ChunkEntry[]): Promise<ChunkEntry[]> {
    if (this.opts.readOnly || this.legacy) throw new ChunkIndexError('catalogue opened read-only')
    if (this.broken)
      throw new ChunkIndexError(`catalogue: a write failed (${this.broken.message}); reopen the store to go on`)
    const sealedCount = this.segmentTotal() + this.sealed.length
    if (keep < sealedCount || keep > sealedCount + this.tail.length)
      throw new ChunkIndexError(`catalogue: cannot keep ${keep} entries (${sealedCount} sealed)`)
    const kept = this.tail.slice(0, keep - sealedCount)
    const dropped = this.tail.slice(keep - sealedCount)
    const next = [...kept, ...written]
    let s = 0
    while (s < next.length && next[s].sealed) s++
    if (next.slice(s).some((e) => e.sealed))
      throw new ChunkIndexError('catalogue: a sealed chunk after an unsealed one')
    const batch: Batch = {
      generation: this.generation + 1,
      sealedBefore: sealedCount,
      sealed: next.slice(0, s),
      tail: next.slice(s),
    }
    const bytes = encodeBatch(batch)
    try {
      const fh = await open(this.logPath(), 'r+')
      try {
        // checked for its length (write-all.ts): a short write is continued or fails
        await writeAll(fh, [bytes], this.logEnd, this.logPath())
        if (this.fsync) await fh.sync()
      } finally {
        await fh.close()
      }
    } catch (e) {
      // the log may end with part of the batch (ignored by readers, cut by the next writer)
      this.broken = storageError(e, this.logPath()) as Error
      throw this.broken
    }
    this.logEnd += bytes.length
    for (const e of batch.sealed) this.sealed.push(e)
    this.tail = batch.tail
    this.generation = batch.generation
    try {
      await this.maintain()
    } catch (e) {
      // the batch is durable (published); a segment or log rewrite that failed midway is
      // repaired by the next writer's open (files the pointer does not name are leftovers)
      this.broken = e as Error
    }
    return dropped
  }

  /** cut segments, rewrite an overgrown log */
  private async maintain(): Promise<void> {
    const stateBytes = (1 + this.sealed.length + this.tail.length) * RECORD
    if (
      this.sealed.length >= this.segmentEntries ||
      this.logEnd > Math.max(this.opts.logBytes ?? 1 << 20, 2 * stateBytes)
    )
      await this.rewrite(this.sealed, this.tail)
  }

  /**
   * Write full segments of `sealed` (beyond the existing segments), a new log holding the rest
   * and `tail`, and the pointer naming them.
   */
  private async rewrite(sealed: readonly ChunkEntry[], tail: readonly ChunkEntry[]): Promise<void> {
    const sub = join(this.dir, SUBDIR)
    const infos = [...this.pointer.segments]
    let k = 0
    while (sealed.length - k >= this.segmentEntries) {
      const part = sealed.slice(k, k + this.segmentEntries)
      const body = encodeSegment(part)
      // named after the generation too: a name is never reused for other content (a backup's
      // copy rewrites its catalogue from scratch while the previous pointer still names its files)
      const file = `seg-${pad(infos.length)}-g${this.generation + 1}.bin`
      await this.writeNew(join(sub, file), body)
      infos.push({
        file,
        count: part.length,
        firstBlock: part[0].firstBlock,
        lastBlock: part[part.length - 1].lastBlock,
        sha256: createHash('sha256').update(body).digest('hex'),
      })
      k += this.segmentEntries
    }
    const rest = sealed.slice(k)
    const total = infos.reduce((a, s) => a + s.count, 0)
    const gen = this.generation + 1
    const log = `log-${pad(gen)}.bin`
    const batch = encodeBatch({ generation: gen, sealedBefore: total, sealed: rest, tail: [...tail] })
    await this.writeNew(join(sub, log), Buffer.concat([LOG_MAGIC, batch]))
    if (this.fsync) await fsyncDir(sub)
    const body: PointerBody = { format: FORMAT, version: 1, generation: gen, log, segments: infos }
    await writeFileAtomic(join(this.dir, POINTER), JSON.stringify({ body, sha256: digest(body) }), this.fsync)
    if (this.pointer.log) this.dropped.push(join(SUBDIR, this.pointer.log))
    this.load(body)
  }

  /** write a new file (tmp name, fsync, rename) */
  private async writeNew(path: string, data: Buffer): Promise<void> {
    const tmp = `${path}.tmp`
    await rm(tmp, { force: true })
    const fh = await open(tmp, 'wx')
    try {
      await fh.writeFile(data)
      if (this.fsync) await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
  }

  /**
   * Readers: pick up what a writer (another process) published since. Returns the entries of the
   * previous tail that are no longer listed (their files may be deleted), or null when nothing
   * changed.
   */
  refresh(): ChunkEntry[] | null {
    if (!this.opts.readOnly) return null // a writer's state is the latest (and is being changed)
    const before = this.tail
    const gen = this.generation
    if (this.legacy) {
      const st = statStamp(join(this.dir, MANIFEST))
      if (st === this.legacyStamp) {
        if (st !== '' || !existsPointer(this.dir)) return null
        // converted by a writer meanwhile
        const ptr = readPointer(this.dir)
        if (!ptr) return null
        this.legacy = false
        this.load(ptr)
      } else if (st === '') {
        const ptr = readPointer(this.dir)
        if (!ptr) return null
        this.legacy = false
        this.load(ptr)
      } else this.loadLegacy()
    } else {
      const st = statStamp(join(this.dir, POINTER))
      if (st !== this.pointerStamp) {
        const ptr = readPointer(this.dir)
        if (!ptr) return null
        this.load(ptr)
      } else {
        // the same log: read what was appended
        if (statSize(this.logPath()) <= this.logEnd) return null
        const fd = openSync(this.logPath(), 'r')
        try {
          const size = fstatSync(fd).size
          if (size <= this.logEnd) return null
          const b = Buffer.allocUnsafe(size)
          let done = 0
          while (done < size) {
            const n = readSync(fd, b, done, size - done, done)
            if (n === 0) break
            done += n
          }
          if (!this.apply(b.subarray(0, done))) return null
        } finally {
          closeSync(fd)
        }
      }
    }
    if (this.generation === gen) return null
    const live = new Set(this.tail.map((e) => e.file))
    const snap = this.snapshot()
    // entries of the previous tail that became sealed stay listed
    const last = snap.sealedCount
    return before.filter((e) => {
      if (live.has(e.file)) return false
      if (e.sealed) return false
      // sealed now? (the same file moved from the tail to the sealed list)
      for (let i = Math.max(0, last - before.length - 1); i < last; i++) if (snap.entry(i).file === e.file) return false
      return true
    })
  }

  /** (writeChunkIndex) write the catalogue of `entries` at generation `generation` + 1 */
  async replaceWith(entries: readonly ChunkEntry[], generation: number): Promise<void> {
    this.generation = generation
    let s = 0
    while (s < entries.length && entries[s].sealed) s++
    await this.rewrite(entries.slice(0, s), entries.slice(s))
  }

  /** close the segment files kept open */
  close(): void {
    for (const s of this.segments) s.close()
  }

  /** the catalogue's files, for `verify` */
  segmentInfos(): readonly SegmentInfo[] {
    return this.pointer.segments
  }

  segmentPath(s: SegmentInfo): string {
    return join(this.dir, SUBDIR, s.file)
  }

  /** remove files of the catalogue directory that the pointer does not name (writer open) */
  cleanLeftovers(): void {
    const listed = new Set([this.pointer.log, ...this.pointer.segments.map((s) => s.file)])
    for (const f of readdirSafe(join(this.dir, SUBDIR)))
      if (!listed.has(f)) rmSync(join(this.dir, SUBDIR, f), { force: true })
  }
}

function statSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return -1
  }
}

function existsPointer(dir: string): boolean {
  return statStamp(join(dir, POINTER)) !== ''
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/** Every entry of the catalogue of `dir` (read-only), null when there is none: for tools and tests. */
export async function readChunkIndex(dir: string): Promise<ChunkEntry[] | null> {
  const c = await ChunkIndex.open(dir, { readOnly: true })
  return c ? c.snapshot().all() : null
}

/**
 * Write a catalogue listing exactly `entries` into `dir` (a backup's copy): new segment and log
 * files, then the pointer; the files of a catalogue there before are removed after.
 */
export async function writeChunkIndex(
  dir: string,
  entries: readonly ChunkEntry[],
  generation: number,
  fsync = true,
): Promise<void> {
  mkdirSync(join(dir, SUBDIR), { recursive: true })
  const prev = readPointer(dir)
  const c = new ChunkIndex(dir, { fsync }, { format: FORMAT, version: 1, generation: 0, log: '', segments: [] })
  await c.replaceWith(entries, Math.max(generation, prev ? prev.generation : 0))
  c.cleanLeftovers()
  c.close()
  await rm(join(dir, MANIFEST), { force: true })
}
