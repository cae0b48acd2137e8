/**
 * The files of a cold store directory as a store opens it: crash leftovers removed (a writer), and
 * the listed chunk files checked against the chunk index (size, or sha256 with `verify`).
 */
import { opendirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  ChunkIndexError,
  parseChunkFileName,
  type ChunkEntry,
  type ChunkIndex,
  type Snapshot,
} from './chunk-index/chunk-index.ts'
import { ColdStoreError } from './disk-store-options.ts'
import { sha256File } from './manifest.ts'

/**
 * crash leftovers (a writer opening): anything in tmp/, chunk index files the pointer does not
 * name, chunk files the index does not list (written but not published, or dropped but not
 * deleted yet)
 */
export function removeLeftovers(dir: string, index: ChunkIndex): void {
  const chunksDir = join(dir, 'chunks')
  rmSync(join(dir, 'tmp'), { recursive: true, force: true })
  index.cleanLeftovers()
  const snap = index.snapshot()
  const dirents = opendirSync(chunksDir)
  try {
    for (let d = dirents.readSync(); d !== null; d = dirents.readSync())
      if (!listedIn(snap, d.name)) rmSync(join(chunksDir, d.name), { force: true })
  } finally {
    dirents.closeSync()
  }
}

/**
 * 'size': the chunks a crash could have touched (the tail and the last sealed ones) exist with
 * their sizes (the others are checked when used: footer and blob checksums); 'full': the sha256
 * of every chunk file and catalogue segment.
 */
export async function checkFiles(dir: string, index: ChunkIndex, level: 'size' | 'full' | 'none'): Promise<void> {
  if (level === 'none') return
  const snap = index.snapshot()
  const from = level === 'full' ? 0 : Math.max(0, snap.count - snap.tail.length - 8)
  let prev: ChunkEntry | null = null
  for (let i = from; i < snap.count; i++) {
    const c = snap.entry(i)
    if (prev && c.firstBlock <= prev.lastBlock)
      throw new ColdStoreError(`${dir}: catalogue chunks overlap at ${c.file}`)
    prev = c
    const p = join(dir, 'chunks', c.file)
    let size: number
    try {
      size = statSync(p).size
    } catch {
      throw new ColdStoreError(`${dir}: chunk file ${c.file} listed in the catalogue is missing`)
    }
    if (size !== c.bytes)
      throw new ColdStoreError(`${dir}: chunk file ${c.file} has ${size} bytes, the catalogue says ${c.bytes}`)
    if (level === 'full' && (await sha256File(p)) !== c.sha256) {
      throw new ColdStoreError(`${dir}: chunk file ${c.file} fails its sha256 check`)
    }
  }
  if (level === 'full')
    for (const seg of index.segmentInfos())
      if ((await sha256File(index.segmentPath(seg))) !== seg.sha256)
        throw new ColdStoreError(`${dir}: catalogue segment ${seg.file} fails its sha256 check`)
}

/** chunk index errors surface as ColdStoreError */
export async function wrap<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f()
  } catch (e) {
    throw e instanceof ChunkIndexError ? new ColdStoreError(e.message) : e
  }
}

/** whether chunk file `name` is listed in `snap` (a binary search by its first block) */
function listedIn(snap: Snapshot, name: string): boolean {
  const n = parseChunkFileName(name)
  if (!n) return false
  const i = snap.atOrAfter(n.first)
  return i < snap.count && snap.firstBlockOf(i) === n.first && snap.entry(i).file === name
}
