/**
 * Storage size: the bytes of a dataset written by `solportal import` against the same normalized
 * rows written as Parquet by DuckDB (zstd, otherwise DuckDB's defaults), in the same run, for
 *
 * - the bundled real mainnet blocks (data/mainnet: the whole block 254170887 and two trimmed ones);
 * - generated mainnet-shaped blocks (`solportal gen`, ~1,500 transactions per block, ~70% votes,
 *   which the import drops as the reference does).
 *
 * The Parquet files hold every stored column of every kind (the header table, the six record
 * kinds with their block number, the internal `dataPrefix` too): one file per kind, rows in the
 * dataset's order; u64 as UBIGINT, lists as LIST, json values as their JSON text.
 *
 * Env: STORAGE_BLOCKS (generated blocks, default 150), STORAGE_TXS (mean transactions per
 * generated block, default 1500), STORAGE_WORK (a directory to keep the archives, datasets and
 * Parquet files in; default a temporary one, deleted). Writes bench/results/storage.md.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance, LIST, UINTEGER, VARCHAR, type DuckDBAppender, type DuckDBListType } from '@duckdb/node-api'
import { HEADER_FIELDS, columnsOf, type FieldDef, type FieldType } from '../src/catalogue.ts'
import { runImport } from '../src/ingest/import/index.ts'
import { GEN_VERSION, writeArchive } from '../src/ingest/generate.ts'
import { REPO_ROOT } from '../src/ingest/sample.ts'
import { RECORD_KINDS, type Block } from '../src/model.ts'
import { LISTS, readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { readChunkIndex } from '../src/store/cold/chunk-index/chunk-index.ts'
import { coldDir } from '../src/store/dataset-dir.ts'

const BLOCKS = Number(process.env.STORAGE_BLOCKS ?? 150)
const TXS = Number(process.env.STORAGE_TXS ?? 1500)
const log = (s: string) => process.stderr.write(`storage bench: ${s}\n`)
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const mb = (n: number) => fmt(n / 1e6, 2)

const SQL_TYPE: Record<FieldType, string> = {
  u32: 'UINTEGER',
  u64: 'UBIGINT',
  i64: 'BIGINT',
  bool: 'BOOLEAN',
  version: 'INTEGER',
  safeAscii: 'VARCHAR',
  string: 'VARCHAR',
  json: 'VARCHAR',
  address: 'UINTEGER[]',
  safeAsciiList: 'VARCHAR[]',
}
const LIST_TYPE: Partial<Record<FieldType, DuckDBListType>> = { address: LIST(UINTEGER), safeAsciiList: LIST(VARCHAR) }

function append(app: DuckDBAppender, type: FieldType, x: unknown): void {
  if (x === null || x === undefined) return app.appendNull()
  switch (type) {
    case 'u32':
      return app.appendUInteger(x as number)
    case 'u64':
      return app.appendUBigInt(x as bigint)
    case 'i64':
      return app.appendBigInt(x as bigint)
    case 'bool':
      return app.appendBoolean(x as boolean)
    case 'version':
      return app.appendInteger(x === 'legacy' ? -1 : (x as number))
    case 'safeAscii':
    case 'string':
      return app.appendVarchar(x as string)
    case 'json':
      return app.appendVarchar(JSON.stringify(x))
    case 'address':
    case 'safeAsciiList':
      return app.appendList(x as readonly unknown[] as never, LIST_TYPE[type]!)
  }
}

/** bytes of the files of a directory tree */
function treeBytes(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    n += e.isDirectory() ? treeBytes(p) : statSync(p).size
  }
  return n
}

export interface ParquetSize {
  bytes: number
  perKind: Map<string, number>
}

/** Write every row of a dataset as Parquet (one file per kind) with each compression; their bytes. */
export async function parquetOf(
  dataset: string,
  work: string,
  compressions: readonly string[] = ['zstd'],
): Promise<Map<string, ParquetSize>> {
  const cold = coldDir(dataset)
  const entries = (await readChunkIndex(cold))!
  const duck = await DuckDBInstance.create(':memory:')
  const con = await duck.connect()
  const tables: { name: string; defs: readonly FieldDef[]; rows: (b: Block) => Record<string, unknown>[] }[] = [
    { name: 'header', defs: HEADER_FIELDS, rows: (b) => [b.header as unknown as Record<string, unknown>] },
    ...RECORD_KINDS.map((kind) => ({
      name: kind,
      defs: columnsOf(kind),
      rows: (b: Block) => b[LISTS[kind]] as unknown as Record<string, unknown>[],
    })),
  ]
  const apps: DuckDBAppender[] = []
  for (const t of tables) {
    const cols = t.defs.map((d) => `"${d.name}" ${SQL_TYPE[d.type]}`)
    await con.run(`CREATE TABLE "${t.name}" ("block" UINTEGER, ${cols.join(', ')})`)
    apps.push(await con.createAppender(t.name))
  }
  for (const e of entries) {
    for (const b of readChunkBlocks(join(cold, 'chunks', e.file))) {
      tables.forEach((t, i) => {
        const app = apps[i]
        for (const r of t.rows(b)) {
          app.appendUInteger(b.header.number)
          for (const d of t.defs) append(app, d.type, r[d.name])
          app.endRow()
        }
      })
    }
    for (const app of apps) app.flushSync()
  }
  for (const app of apps) app.closeSync()
  const out = new Map<string, ParquetSize>()
  for (const compression of compressions) {
    const perKind = new Map<string, number>()
    let bytes = 0
    for (const t of tables) {
      const file = join(work, `${t.name}-${compression}.parquet`)
      rmSync(file, { force: true })
      await con.run(`COPY "${t.name}" TO '${file}' (FORMAT parquet, COMPRESSION ${compression})`)
      const n = statSync(file).size
      perKind.set(t.name, n)
      bytes += n
    }
    out.set(compression, { bytes, perKind })
  }
  con.closeSync()
  duck.closeSync()
  return out
}

interface Row {
  name: string
  blocks: number
  source: number
  dataset: number
  parquet: ParquetSize
  parquetSnappy: number
}

async function measure(name: string, archive: string, work: string, sourceGz: number): Promise<Row> {
  const dataset = join(work, `dataset-${archive.replace(/.*\//, '').replace(/\..*/, '')}`)
  rmSync(dataset, { recursive: true, force: true })
  log(`${name}: import`)
  // (the trimmed mainnet blocks warn about their cut logs: not the point here)
  const r = await runImport(dataset, [archive], { progress: 'none', workers: 1 }, () => {})
  const bytes = treeBytes(dataset)
  log(`${name}: ${r.imported} blocks, dataset ${mb(bytes)} MB; Parquet`)
  const pq = await parquetOf(dataset, work, ['zstd', 'snappy'])
  return {
    name,
    blocks: r.imported,
    source: sourceGz,
    dataset: bytes,
    parquet: pq.get('zstd')!,
    parquetSnappy: pq.get('snappy')!.bytes,
  }
}

/** the bundled real mainnet blocks as one archive file (bare getBlock files get their slot) */
function mainnetArchive(out: string): number {
  const lines: string[] = []
  for (const [rel, slot] of [
    ['data/mainnet/chainstorage/client_solana_block.json', 100000000],
    ['data/mainnet/chainstorage/parser_solana_block_with_versioned_tx.json', 154808473],
  ] as const) {
    // one line: JSON strings hold no raw line breaks, so a break and its indentation are layout
    const text = readFileSync(join(REPO_ROOT, rel), 'utf8')
      .trim()
      .replace(/\r?\n\s*/g, '')
    lines.push(`{"slot":${slot},"block":${text}}`)
  }
  const whole = readFileSync(join(REPO_ROOT, 'data/mainnet/blocks/254170887.jsonl.gz'))
  lines.push(gunzipSync(whole).toString('utf8').trim())
  const gz = gzipSync(lines.join('\n') + '\n')
  writeFileSync(out, gz)
  return gz.byteLength
}

export async function run(): Promise<string> {
  const keep = process.env.STORAGE_WORK
  const work = keep ?? join(tmpdir(), `solportal-storage-bench-${process.pid}`)
  mkdirSync(work, { recursive: true })
  try {
    const rows: Row[] = []
    const mArchive = join(work, 'mainnet.jsonl.gz')
    rows.push(await measure('real mainnet (data/mainnet)', mArchive, work, mainnetArchive(mArchive)))
    const gArchive = join(work, `gen${GEN_VERSION}-b${BLOCKS}-t${TXS}.jsonl.gz`)
    if (!existsSync(gArchive)) {
      // deterministic: kept in STORAGE_WORK for the next run
      log(`generating ${BLOCKS} blocks of ~${TXS} transactions`)
      // (the temporary name ends in .gz too: writeArchive gzips by the name)
      const tmp = gArchive.replace(/\.gz$/, '.tmp.gz')
      await writeArchive(tmp, { blocks: BLOCKS, txsPerBlock: TXS, gzipLevel: 6 })
      renameSync(tmp, gArchive)
    }
    rows.push(await measure(`generated (${BLOCKS} blocks, ~${TXS} tx each)`, gArchive, work, statSync(gArchive).size))
    const out = [
      '## storage: dataset bytes vs Parquet of the same rows',
      '',
      '| blocks | source archive (gzip -6) | solportal dataset | Parquet zstd (DuckDB) | Parquet snappy | dataset / Parquet zstd |',
      '|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.name}: ${r.blocks} | ${mb(r.source)} MB | ${mb(r.dataset)} MB | ${mb(r.parquet.bytes)} MB | ${mb(r.parquetSnappy)} MB | ${fmt(r.dataset / r.parquet.bytes, 2)} |`,
      ),
    ]
    const md = out.join('\n')
    writeFileSync(join(import.meta.dirname, 'results', 'storage.md'), md + '\n')
    return md
  } finally {
    if (!keep) rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await run())
