/**
 * What positioned reads of chunk files share within one store: a pool of open file descriptors,
 * a small first-in-first-out pool of pages read in passing (`Parts` in transient mode, and the
 * other pages of a decompressed frame), and counters. A `DiskColdStore` owns one and hands it to
 * every column it reads; closing the store closes its descriptors.
 */
import { closeSync, openSync, readSync } from 'node:fs'
import { CRC_PAGE } from '../chunk-file.ts'

/** pages of on-demand reads = the checksummed pages of format 3 (parts are 8-aligned in the blob: u16/u32 elements never straddle pages) */
export const PAGE = 16384
if (PAGE !== CRC_PAGE) throw new Error('raw/page-io.ts: PAGE must equal CRC_PAGE')

/** open descriptors kept at most (the least recently used closed) */
const MAX_FDS = 512
/** pages kept in the scratch pool at most (SCRATCH_PAGES × 16 KiB = 8 MiB) */
const SCRATCH_PAGES = 512
/** a page's scratch key: `Parts` id × this + page index */
const PAGES_PER_ID = 1048576

/**
 * Counters for tests and benches: reads of a column's stored frames (format 4) from its file, and
 * their bytes (frames all decompressed ahead are not read: see `Parts.readFramed`)
 */
export interface ReadStats {
  reads: number
  bytes: number
}

/**
 * The same counters summed over every store of this process (tests compare a store's reads with
 * readers that open and close their own stores).
 */
export const storedReads: ReadStats = { reads: 0, bytes: 0 }

export class PageIo {
  private readonly fds = new Map<string, number>()
  /** pages read in transient mode (not kept with their column), first in first out */
  private readonly scratch = new Map<number, Buffer>()
  private nextPartsId = 1
  /** this store's reads of stored frames */
  readonly stats: ReadStats = { reads: 0, bytes: 0 }

  /** an id for a new `Parts` (its pages' scratch keys) */
  partsId(): number {
    return this.nextPartsId++
  }

  /** the scratch key of page k of the `Parts` with this id */
  key(id: number, k: number): number {
    return id * PAGES_PER_ID + k
  }

  scratchGet(key: number): Buffer | undefined {
    return this.scratch.get(key)
  }

  scratchHas(key: number): boolean {
    return this.scratch.has(key)
  }

  scratchSet(key: number, pg: Buffer): void {
    const s = this.scratch
    s.set(key, pg)
    if (s.size > SCRATCH_PAGES) s.delete(s.keys().next().value as number)
  }

  /** an open descriptor of `path` (opened when not pooled) */
  private fdOf(path: string): number {
    const fds = this.fds
    let fd = fds.get(path)
    if (fd !== undefined) {
      fds.delete(path)
      fds.set(path, fd)
      return fd
    }
    fd = openSync(path, 'r')
    fds.set(path, fd)
    if (fds.size > MAX_FDS) {
      const [oldPath, oldFd] = fds.entries().next().value as [string, number]
      fds.delete(oldPath)
      closeSync(oldFd)
    }
    return fd
  }

  /** close the pooled descriptors of files whose path starts with `prefix` (a file deleted, a store closing) */
  close(prefix: string): void {
    for (const [path, fd] of this.fds) {
      if (path.startsWith(prefix)) {
        this.fds.delete(path)
        closeSync(fd)
      }
    }
  }

  /** `len` bytes of `path` at `pos`, in a fresh buffer at offset 0 (8-aligned views), not zero-filled: every byte is read */
  read(path: string, pos: number, len: number): Buffer {
    const b = Buffer.allocUnsafeSlow(len)
    const fd = this.fdOf(path)
    let done = 0
    while (done < len) {
      const k = readSync(fd, b, done, len - done, pos + done)
      if (k === 0) throw new Error(`${path}: unexpected end of file`)
      done += k
    }
    return b
  }

  /** count a read of stored frames */
  countStored(bytes: number): void {
    this.stats.reads++
    this.stats.bytes += bytes
    storedReads.reads++
    storedReads.bytes += bytes
  }
}

let standalone: PageIo | null = null

/** the page I/O of columns read outside a store (tests, tools): one for the process */
export function standaloneIo(): PageIo {
  return (standalone ??= new PageIo())
}
