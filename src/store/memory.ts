/**
 * In-memory chunk: normalized blocks transposed into columns. Used for the bundled sample, the
 * hot (unfinalized) blocks and as the reference backend of the conformance suite.
 */
import { DEFAULT_DATASET } from '../catalogue.ts'
import type { Dataset, StoredBlock } from '../dataset/types.ts'
import type { BlockHeader } from '../model.ts'
import { RECORD_KINDS } from '../model.ts'
import type { JsonTokens } from '../util/json-bytes.ts'
import type { Chunk, Table } from './chunk.ts'

/** the rows of a kind of a block: the list under the kind's block member */
function rowsOf(block: StoredBlock, member: string): Record<string, unknown>[] {
  return (block as unknown as Record<string, Record<string, unknown>[]>)[member]
}

class MemoryTable implements Table {
  readonly rowCount: number
  readonly blockOffsets: Uint32Array
  private readonly columns: Map<string, unknown[]>

  constructor(ds: Dataset, kind: string, blocks: readonly StoredBlock[]) {
    const defs = ds.columnsOf(kind)
    const member = ds.table(kind).member
    this.blockOffsets = new Uint32Array(blocks.length + 1)
    let total = 0
    for (let b = 0; b < blocks.length; b++) {
      this.blockOffsets[b] = total
      total += rowsOf(blocks[b], member).length
    }
    this.blockOffsets[blocks.length] = total
    this.rowCount = total
    this.columns = new Map()
    for (const d of defs) this.columns.set(d.name, new Array(total))
    let i = 0
    for (const block of blocks) {
      for (const row of rowsOf(block, member)) {
        for (const d of defs) this.columns.get(d.name)![i] = row[d.name] ?? null
        i++
      }
    }
  }

  column(field: string): ArrayLike<unknown> {
    const c = this.columns.get(field)
    if (!c) throw new Error(`unknown column ${field}`)
    return c
  }

  /**
   * No column is held in JSON form, but having this method puts the engine on its byte output
   * for these tables: each block's line is written as UTF-8 into one growing buffer from the
   * values (src/util/json-bytes.ts), instead of a string concatenated row by row and then encoded by
   * the response writer (a mainnet block's 5 MB line was built, measured and copied as strings:
   * young-generation garbage and GC pauses under load).
   */
  tokens(): JsonTokens | null {
    return null
  }
}

export class MemoryChunk implements Chunk {
  readonly firstBlock: number
  readonly lastBlock: number
  readonly blockCount: number
  private readonly headers: BlockHeader[]
  private readonly tables = new Map<string, MemoryTable>()
  private readonly blocks: readonly StoredBlock[]

  /** blocks must be ascending by number; their lists are the dataset's (default: the default dataset) */
  constructor(
    blocks: readonly StoredBlock[],
    private readonly dataset: Dataset = DEFAULT_DATASET,
  ) {
    if (blocks.length === 0) throw new Error('empty chunk')
    for (let i = 1; i < blocks.length; i++) {
      if (blocks[i].header.number <= blocks[i - 1].header.number) throw new Error('blocks of a chunk must ascend')
    }
    this.blocks = blocks
    this.headers = blocks.map((b) => b.header)
    this.firstBlock = blocks[0].header.number
    this.lastBlock = blocks[blocks.length - 1].header.number
    this.blockCount = blocks.length
  }

  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]> {
    return this.headers.map((h) => h[field])
  }

  table(kind: string): Table {
    let t = this.tables.get(kind)
    if (!t) {
      t = new MemoryTable(this.dataset, kind, this.blocks)
      this.tables.set(kind, t)
    }
    return t
  }
}

export { RECORD_KINDS }
