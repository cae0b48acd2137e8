/**
 * The chunk index's files, record by record: a chunk's entry is a fixed record of 176 bytes with
 * its crc32 (its file name rebuilt from the blocks, generation and index it encodes); a log holds
 * batches (a header record, then entries); a segment holds an index of first and last blocks, then
 * entries. On-disk names (`CATALOGUE.json`, `catalogue/`) are the chunk catalogue's, as written by
 * earlier versions.
 */
import { readSync } from 'node:fs'
import { crc32 } from 'node:zlib'

export interface ChunkEntry {
  /** file name under chunks/ */
  file: string
  firstBlock: number
  lastBlock: number
  blockCount: number
  lastHash: string
  bytes: number
  sha256: string
  /** reached the size target when written; unsealed (small) chunks at the tail get merged */
  sealed: boolean
  /** merge level of an unsealed chunk: 0 = written by one append, L+1 = merged from `fanout` chunks of level L */
  level: number
}

/** a chunk index that cannot be read or written (messages name it "catalogue", as its files) */
export class ChunkIndexError extends Error {}

export const POINTER = 'CATALOGUE.json'
export const FORMAT = 'solportal-catalogue'
/** the directory of segments and logs */
export const SUBDIR = 'catalogue'
export const RECORD = 176
export const LOG_MAGIC = Buffer.from('SPCLOG01', 'latin1')
export const SEG_MAGIC = Buffer.from('SPCSEG01', 'latin1')
const T_BATCH = 1
export const T_ENTRY = 2
const HASH_MAX = 96

export const pad = (n: number) => String(n).padStart(12, '0')
/** the file name of a chunk (what `ChunkEntry.file` holds) */
export function chunkFileName(firstBlock: number, lastBlock: number, gen: number, i: number): string {
  return `${pad(firstBlock)}-${pad(lastBlock)}-g${gen}-${i}.spc`
}
const NAME = /^(\d+)-(\d+)-g(\d+)-(\d+)\.spc$/
export function parseChunkFileName(file: string): { first: number; last: number; gen: number; i: number } | null {
  const m = NAME.exec(file)
  return m ? { first: Number(m[1]), last: Number(m[2]), gen: Number(m[3]), i: Number(m[4]) } : null
}

function sealRecord(b: Buffer, at: number): void {
  b.writeUInt32LE(crc32(b.subarray(at + 4, at + RECORD)), at)
}

export function recordOk(b: Buffer, at: number): boolean {
  return b.readUInt32LE(at) === crc32(b.subarray(at + 4, at + RECORD))
}

function writeEntry(b: Buffer, at: number, e: ChunkEntry): void {
  const n = parseChunkFileName(e.file)
  if (!n || n.first !== e.firstBlock || n.last !== e.lastBlock)
    throw new ChunkIndexError(`catalogue: chunk file name ${e.file} does not match its blocks`)
  const hash = Buffer.from(e.lastHash, 'utf8')
  if (hash.length > HASH_MAX) throw new ChunkIndexError(`catalogue: block hash longer than ${HASH_MAX} bytes`)
  b.fill(0, at, at + RECORD)
  b[at + 4] = T_ENTRY
  b[at + 5] = e.sealed ? 1 : 0
  b[at + 6] = e.level
  b[at + 7] = hash.length
  b.writeUInt32LE(e.blockCount, at + 8)
  b.writeUInt32LE(n.gen, at + 12)
  b.writeUInt32LE(n.i, at + 16)
  b.writeDoubleLE(e.firstBlock, at + 24)
  b.writeDoubleLE(e.lastBlock, at + 32)
  b.writeDoubleLE(e.bytes, at + 40)
  b.write(e.sha256, at + 48, 32, 'hex')
  hash.copy(b, at + 80)
  sealRecord(b, at)
}

export function readEntry(b: Buffer, at: number): ChunkEntry {
  const firstBlock = b.readDoubleLE(at + 24)
  const lastBlock = b.readDoubleLE(at + 32)
  return {
    file: chunkFileName(firstBlock, lastBlock, b.readUInt32LE(at + 12), b.readUInt32LE(at + 16)),
    firstBlock,
    lastBlock,
    blockCount: b.readUInt32LE(at + 8),
    lastHash: b.toString('utf8', at + 80, at + 80 + b[at + 7]),
    bytes: b.readDoubleLE(at + 40),
    sha256: b.toString('hex', at + 48, at + 80),
    sealed: b[at + 5] === 1,
    level: b[at + 6],
  }
}

/** a batch: the sealed entries it adds after `sealedBefore` sealed ones, and the whole new tail */
export interface Batch {
  generation: number
  sealedBefore: number
  sealed: ChunkEntry[]
  tail: ChunkEntry[]
}

export function encodeBatch(x: Batch): Buffer {
  const n = 1 + x.sealed.length + x.tail.length
  const b = Buffer.alloc(n * RECORD)
  b[4] = T_BATCH
  b.writeUInt32LE(x.sealed.length, 8)
  b.writeUInt32LE(x.tail.length, 12)
  b.writeDoubleLE(x.generation, 24)
  b.writeDoubleLE(x.sealedBefore, 32)
  sealRecord(b, 0)
  let k = 1
  for (const e of [...x.sealed, ...x.tail]) writeEntry(b, RECORD * k++, e)
  return b
}

/** the complete, valid batches of a log's bytes (from `start`), and where the valid part ends */
export function decodeBatches(b: Buffer, start: number): { batches: Batch[]; end: number } {
  const batches: Batch[] = []
  let at = start
  while (at + RECORD <= b.length) {
    if (!recordOk(b, at) || b[at + 4] !== T_BATCH) break
    const ns = b.readUInt32LE(at + 8)
    const nt = b.readUInt32LE(at + 12)
    const end = at + RECORD * (1 + ns + nt)
    if (end > b.length) break
    const entries: ChunkEntry[] = []
    let ok = true
    for (let q = at + RECORD; q < end; q += RECORD) {
      if (!recordOk(b, q) || b[q + 4] !== T_ENTRY) {
        ok = false
        break
      }
      entries.push(readEntry(b, q))
    }
    if (!ok) break
    batches.push({
      generation: b.readDoubleLE(at + 24),
      sealedBefore: b.readDoubleLE(at + 32),
      sealed: entries.slice(0, ns),
      tail: entries.slice(ns),
    })
    at = end
  }
  return { batches, end: at }
}

/** bytes before a segment's index: magic, count, crc32 of the index */
export const SEG_HEADER = 16

export function encodeSegment(entries: readonly ChunkEntry[]): Buffer {
  const n = entries.length
  const b = Buffer.alloc(SEG_HEADER + 16 * n + RECORD * n)
  SEG_MAGIC.copy(b, 0)
  b.writeUInt32LE(n, 8)
  for (let k = 0; k < n; k++) {
    b.writeDoubleLE(entries[k].firstBlock, SEG_HEADER + 8 * k)
    b.writeDoubleLE(entries[k].lastBlock, SEG_HEADER + 8 * n + 8 * k)
    writeEntry(b, SEG_HEADER + 16 * n + RECORD * k, entries[k])
  }
  b.writeUInt32LE(crc32(b.subarray(SEG_HEADER, SEG_HEADER + 16 * n)), 12)
  return b
}

export function preadAll(fd: number, path: string, pos: number, len: number): Buffer {
  const b = Buffer.allocUnsafe(len)
  let done = 0
  while (done < len) {
    const k = readSync(fd, b, done, len - done, pos + done)
    if (k === 0) throw new ChunkIndexError(`${path}: unexpected end of file`)
    done += k
  }
  return b
}
