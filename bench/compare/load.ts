/**
 * Loads the normalized rows of a dataset directory (read back from solportal's own cold store, so that
 * PostgreSQL holds exactly the rows solportal serves) into PostgreSQL with COPY FROM STDIN, one psql
 * process per table fed in one pass over the chunks. The same COPY text is optionally written to files
 * (tab-separated) for the DuckDB lower bound.
 */
import { createWriteStream, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import type { Writable } from 'node:stream'
import { HEADER_FIELDS, RECORD_FIELDS } from '../../src/catalogue.ts'
import type { RecordKind } from '../../src/model.ts'
import { DiskColdStore } from '../../src/store/cold/disk-store.ts'
import { coldDir } from '../../src/store/dataset-dir.ts'
import { encoder, TABLE } from './sql.ts'
import type { PgCluster } from './pg.ts'

const FLUSH = 1 << 20

class Sink {
  private buf: string[] = []
  private len = 0
  rows = 0
  constructor(private readonly outs: Writable[]) {}
  async add(line: string): Promise<void> {
    this.buf.push(line)
    this.len += line.length
    this.rows++
    if (this.len >= FLUSH) await this.flush()
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return
    const data = Buffer.from(this.buf.join(''))
    this.buf = []
    this.len = 0
    await Promise.all(
      this.outs.map((o) => (o.write(data) ? undefined : new Promise<void>((r) => o.once('drain', () => r())))),
    )
  }
}

export interface LoadResult {
  rows: Record<string, number>
  blocks: number
  seconds: number
}

export async function loadDataset(pg: PgCluster, datasetDir: string, teeDir: string | null): Promise<LoadResult> {
  const t0 = performance.now()
  const store = await DiskColdStore.open(coldDir(datasetDir), { readOnly: true })
  const kinds = Object.keys(TABLE) as RecordKind[]
  const tables = ['blocks', ...kinds.map((k) => TABLE[k])]
  const copies = tables.map((t) => pg.copyIn(t))
  const files: (WriteStream | null)[] = tables.map((t) => (teeDir ? createWriteStream(join(teeDir, `${t}.tsv`)) : null))
  const sinks = tables.map((_, i) => new Sink([copies[i].proc.stdin!, ...(files[i] ? [files[i]!] : [])]))
  const hdrEnc = HEADER_FIELDS.map((f) => encoder(f.type))
  const recEnc = kinds.map((k) => RECORD_FIELDS[k].map((f) => encoder(f.type)))
  let blocks = 0
  try {
    const first = store.firstBlock()
    const last = store.lastBlock()
    if (first === null || !last) throw new Error(`${datasetDir}: empty dataset`)
    for await (const chunk of store.chunks(first, last.number)) {
      const hcols = HEADER_FIELDS.map((f) => chunk.header(f.name as 'number'))
      const numbers = chunk.header('number')
      for (let b = 0; b < chunk.blockCount; b++) {
        let line = ''
        for (let c = 0; c < hcols.length; c++) line += (c ? '\t' : '') + hdrEnc[c](hcols[c][b])
        await sinks[0].add(line + '\n')
      }
      blocks += chunk.blockCount
      for (let k = 0; k < kinds.length; k++) {
        const table = chunk.table(kinds[k])
        const fields = RECORD_FIELDS[kinds[k]]
        const cols = fields.map((f) => table.column(f.name))
        const enc = recEnc[k]
        const offs = table.blockOffsets
        const sink = sinks[k + 1]
        for (let b = 0; b < chunk.blockCount; b++) {
          const bn = String(numbers[b])
          for (let i = offs[b]; i < offs[b + 1]; i++) {
            let line = bn
            for (let c = 0; c < cols.length; c++) line += '\t' + enc[c](cols[c][i])
            await sink.add(line + '\n')
          }
        }
      }
    }
    for (const s of sinks) await s.flush()
  } finally {
    for (const c of copies) c.proc.stdin!.end()
    for (const f of files) f?.end()
    await store.close()
  }
  await Promise.all(copies.map((c) => c.done))
  await Promise.all(
    files.map((f) => (f ? new Promise<void>((r) => (f.writableFinished ? r() : f.once('finish', () => r()))) : null)),
  )
  const rows: Record<string, number> = {}
  tables.forEach((t, i) => (rows[t] = sinks[i].rows))
  return { rows, blocks, seconds: (performance.now() - t0) / 1000 }
}
