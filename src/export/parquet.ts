/**
 * `solportal export`: a dataset's records as Parquet files (zstd), one file per record kind.
 * Columns and types come from the dataset's declaration (src/dataset/types.ts); the mapping of field
 * types to Parquet types is documented in docs/export.md. u64 values go from the store's bigints
 * straight into INT64 (UINT_64) columns, never through a JS number.
 */
import { zstdCompressSync } from '../util/zstd.mjs'
import { ParquetWriter, fileWriter, type SchemaElement } from 'hyparquet-writer'
import { mkdirSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { DEFAULT_DATASET } from '../catalogue.ts'
import type { Dataset, FieldDef, FieldType } from '../dataset/types.ts'
import type { BlockStore, Chunk } from '../store/types.ts'

/** zstd level of the pages (3: zstd's default, a good speed/size balance) */
const ZSTD_LEVEL = 3
/** rows of a row group at most (rows are buffered per file until this many are in hand) */
export const ROW_GROUP_ROWS = 100_000
/** name of the block number column added to every record kind */
export const BLOCK_NUMBER_COLUMN = 'blockNumber'

type Leaf = Omit<SchemaElement, 'name' | 'repetition_type'>

const LEAF: Record<Exclude<FieldType, 'address' | 'safeAsciiList'>, Leaf> = {
  u32: { type: 'INT32', converted_type: 'UINT_32' },
  u64: { type: 'INT64', converted_type: 'UINT_64' },
  i64: { type: 'INT64', converted_type: 'INT_64' },
  safeAscii: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  string: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  bool: { type: 'BOOLEAN' },
  json: { type: 'BYTE_ARRAY', converted_type: 'JSON' },
  version: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
}

const LIST_ELEMENT: Record<'address' | 'safeAsciiList', Leaf> = {
  address: { type: 'INT32', converted_type: 'UINT_32' },
  safeAsciiList: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
}

/** Parquet schema elements (flattened, depth-first) of one catalogue field. */
function fieldSchema(fd: FieldDef): SchemaElement[] {
  const repetition_type = fd.nullable ? 'OPTIONAL' : 'REQUIRED'
  if (fd.type === 'address' || fd.type === 'safeAsciiList') {
    return [
      { name: fd.name, repetition_type, converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', repetition_type: 'REQUIRED', ...LIST_ELEMENT[fd.type] },
    ]
  }
  return [{ name: fd.name, repetition_type, ...LEAF[fd.type] }]
}

/** A stored value as the Parquet writer takes it for this field type. */
function encodeValue(type: FieldType, v: unknown): unknown {
  if (v === null || v === undefined) return null
  // json: the writer serializes the value itself (JSON.stringify; stored json values hold no bigint)
  if (type === 'version') return String(v)
  return v
}

export interface ExportFile {
  /** file name under OUTDIR */
  file: string
  /** columns (catalogue fields), the block number first for record kinds */
  fields: readonly FieldDef[]
  /** a record kind of the dataset, or 'block' for the headers */
  kind: string
}

/** The exported files, in order: blocks first, then each record kind (catalogue order). */
const BLOCK_NUMBER_FIELD: FieldDef = { name: BLOCK_NUMBER_COLUMN, type: 'u32', nullable: false, selectors: [] }

/** The exported files of a dataset: its headers, then a file per kind named by its block member. */
export function exportFiles(ds: Dataset): readonly ExportFile[] {
  return [
    { file: 'blocks.parquet', kind: 'block', fields: ds.header },
    ...ds.tables.map(({ kind, member, fields }) => ({
      file: `${member}.parquet`,
      kind,
      fields: [BLOCK_NUMBER_FIELD, ...fields],
    })),
  ]
}

/** the exported files of the default dataset */
export const EXPORT_FILES: readonly ExportFile[] = exportFiles(DEFAULT_DATASET)

export function exportSchema(f: ExportFile): SchemaElement[] {
  const leaves = f.fields.flatMap(fieldSchema)
  return [{ name: 'root', num_children: f.fields.length }, ...leaves]
}

class KindWriter {
  private readonly cols: unknown[][]
  private readonly writer: ParquetWriter
  readonly tmp: string
  rows = 0
  private buffered = 0

  constructor(
    readonly spec: ExportFile,
    readonly path: string,
    private readonly groupRows: number,
  ) {
    this.tmp = path + '.tmp'
    this.cols = spec.fields.map(() => [])
    this.writer = new ParquetWriter({
      writer: fileWriter(this.tmp),
      schema: exportSchema(spec),
      codec: 'ZSTD',
      compressors: { ZSTD: (b: Uint8Array) => zstdCompressSync(b, ZSTD_LEVEL) },
      createdBy: 'solportal export',
    })
  }

  /** append the rows of block positions [lo, hi) of a chunk */
  add(chunk: Chunk, lo: number, hi: number): void {
    const { spec } = this
    const numbers = chunk.header('number')
    if (spec.kind === 'block') {
      spec.fields.forEach((fd, i) => {
        const col = chunk.header(fd.name as 'number')
        for (let b = lo; b < hi; b++) this.cols[i].push(encodeValue(fd.type, col[b]))
      })
      this.count(hi - lo)
      return
    }
    const table = chunk.table(spec.kind)
    const off = table.blockOffsets
    const r0 = off[lo]
    const r1 = off[hi]
    if (r1 === r0) return
    const blockCol = this.cols[0]
    for (let b = lo; b < hi; b++) for (let r = off[b]; r < off[b + 1]; r++) blockCol.push(numbers[b])
    for (let i = 1; i < spec.fields.length; i++) {
      const fd = spec.fields[i]
      const col = table.column(fd.name)
      const out = this.cols[i]
      for (let r = r0; r < r1; r++) out.push(encodeValue(fd.type, col[r]))
    }
    this.count(r1 - r0)
  }

  private count(n: number): void {
    this.rows += n
    this.buffered += n
    if (this.buffered >= this.groupRows) this.flush()
  }

  private flush(): void {
    if (this.buffered === 0) return
    const columnData = this.spec.fields.map((fd, i) => ({ name: fd.name, data: this.cols[i] as never[] }))
    // a chunk's rows are added whole, so a flush may hold more than a group: the writer cuts them
    // into groups of at most groupRows
    void this.writer.write({ columnData, rowGroupSize: this.groupRows })
    for (const c of this.cols) c.length = 0
    this.buffered = 0
  }

  finish(): void {
    this.flush()
    void this.writer.finish()
    renameSync(this.tmp, this.path)
  }
}

export interface ExportResult {
  /** lowest and highest block exported, null when the range held no block */
  firstBlock: number | null
  lastBlock: number | null
  blocks: number
  /** rows written per file name */
  rows: Record<string, number>
}

/**
 * Write every kind's records of the produced blocks in [from, to] of `store` to OUTDIR as Parquet
 * files (written under a temporary name, renamed when complete).
 */
export async function exportParquet(
  store: BlockStore,
  outDir: string,
  from: number,
  to: number,
  opts: { rowGroupRows?: number; dataset?: Dataset } = {},
): Promise<ExportResult> {
  mkdirSync(outDir, { recursive: true })
  const groupRows = opts.rowGroupRows ?? ROW_GROUP_ROWS
  const files = opts.dataset ? exportFiles(opts.dataset) : EXPORT_FILES
  const writers = files.map((f) => new KindWriter(f, join(outDir, f.file), groupRows))
  let firstBlock: number | null = null
  let lastBlock: number | null = null
  for await (const chunk of store.chunks(from, to, true)) {
    const numbers = chunk.header('number')
    let lo = 0
    while (lo < chunk.blockCount && numbers[lo] < from) lo++
    let hi = lo
    while (hi < chunk.blockCount && numbers[hi] <= to) hi++
    if (hi === lo) continue
    firstBlock ??= numbers[lo]
    lastBlock = numbers[hi - 1]
    for (const w of writers) w.add(chunk, lo, hi)
  }
  for (const w of writers) w.finish()
  const rows: Record<string, number> = {}
  for (const w of writers) rows[w.spec.file] = w.rows
  return { firstBlock, lastBlock, blocks: rows['blocks.parquet'], rows }
}
