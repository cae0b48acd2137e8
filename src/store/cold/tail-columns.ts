/**
 * A writer's unsealed tail held as columns (`ChunkColumns`: dictionaries, codes, typed arrays), so
 * that the append that seals the tail encodes the sealed chunk from them and its new blocks instead
 * of reading the tail's files back. The blocks are taken in as they are appended (once each, as a
 * rewrite from the files took them in again), and the reading back — decoding every column of the
 * tail's files, building their records, collecting them — is not done at all: in the soak of the
 * follower's cold path (test/realtime-soak-cold.test.ts), where each block is written unsealed once
 * and sealed once, it was about a tenth of the writer's CPU.
 *
 * Bounded by the tail, which holds less than a chunk's worth of blocks (else it is sealed): the
 * chunk's columns before compression. Held only while it holds exactly the tail's blocks (checked
 * against the catalogue's entries after every append): a store opened with a tail, or one whose
 * append failed, reads the tail's files at the next seal, as before.
 */
import type { Block } from '../../model.ts'
import { ChunkColumns, writeEncodedChunk, type WriteOptions } from './chunk-file.ts'
import type { ChunkEntry } from './chunk-index/chunk-index.ts'

/** whether `cols` hold exactly the blocks of the unsealed tail `tail` (its entries, in order) */
function holds(cols: ChunkColumns, tail: readonly ChunkEntry[]): boolean {
  let n = 0
  for (const e of tail) n += e.blockCount
  if (cols.blockCount !== n) return false
  if (n === 0) return true
  const h = cols.blockHeaders
  const last = tail[tail.length - 1]
  return h[0].number === tail[0].firstBlock && h[n - 1].number === last.lastBlock && h[n - 1].hash === last.lastHash
}

export class TailColumns {
  private cols: ChunkColumns | null = null

  constructor(
    /** the options the store encodes its chunks with */
    private readonly opts: () => WriteOptions,
  ) {}

  /** the columns of the blocks of `tail` (the store's unsealed tail), handed over (no longer held), or null */
  take(tail: readonly ChunkEntry[]): ChunkColumns | null {
    const c = this.cols
    this.cols = null
    return c !== null && c.blockCount > 0 && holds(c, tail) ? c : null
  }

  /**
   * After an append of `blocks` published `tail` as the store's unsealed tail: hold its blocks as
   * columns. `before`: the columns of the tail before the append when they were not used (the new
   * tail then starts with them), else null. A tail of new blocks only is taken in from `blocks`.
   */
  settle(tail: readonly ChunkEntry[], before: ChunkColumns | null, blocks: readonly Block[]): void {
    this.cols = null
    if (tail.length === 0 || blocks.length === 0) return
    const from = tail[0].firstBlock
    let cols: ChunkColumns
    let k = 0
    if (from >= blocks[0].header.number) {
      cols = new ChunkColumns(this.opts())
      while (k < blocks.length && blocks[k].header.number < from) k++
    } else if (before !== null && before.blockCount > 0 && before.blockHeaders[0].number === from) cols = before
    else return
    try {
      for (; k < blocks.length; k++) cols.add(blocks[k])
    } catch {
      // columns left half taken are not encoded: the tail is read from its files at the next seal
      return
    }
    if (holds(cols, tail)) this.cols = cols
  }
}

/** encode `cols` and write the chunk file at `path` (`writeChunkFile` of their blocks) */
export async function writeColumnsFile(
  path: string,
  cols: ChunkColumns,
  fsync: boolean,
): Promise<{ bytes: number; sha256: string }> {
  const enc = await cols.encode()
  await writeEncodedChunk(path, enc.parts, fsync)
  return { bytes: enc.bytes, sha256: enc.sha256 }
}
