/**
 * `solportal export`: a dataset directory written from generated blocks (u64 values above 2^53
 * included) is exported by the CLI (a real process); DuckDB reads the Parquet files back and every
 * row of every kind must equal the query engine's answer for the same range, u64 values exact.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { DuckDBInstance } from '@duckdb/node-api'
import { BLOCK_MEMBERS, fieldsOf, type FieldDef } from '../src/catalogue.ts'
import { BLOCK_NUMBER_COLUMN, EXPORT_FILES, exportParquet } from '../src/export/parquet.ts'
import { executeQuery } from '../src/query/execute.ts'
import { parseQuery } from '../src/query/index.ts'
import { coldDir, openDatasetDir, writeDatasetMeta } from '../src/store/dataset-dir.ts'
import { cli } from './support/cli.ts'
import { tempDir, writeStore } from './support/cold/util.ts'
import { randomBlocks } from './support/random-blocks.ts'

/** The stream's answer: every field of every kind, all rows, blocks [from, to]. */
async function streamed(dir: string, from: number, to: number): Promise<Record<string, unknown>[]> {
  const all = (sel: Parameters<typeof fieldsOf>[0]) =>
    Object.fromEntries(fieldsOf(sel).map((f) => [f.selectors[0], true]))
  const body: Record<string, unknown> = {
    type: 'solana',
    fromBlock: from,
    toBlock: to,
    includeAllBlocks: true,
    fields: Object.fromEntries((['block', ...BLOCK_MEMBERS.map((m) => m.kind)] as const).map((s) => [s, all(s)])),
  }
  for (const { member } of BLOCK_MEMBERS) body[member] = [{}]
  const store = await openDatasetDir(dir)
  const out: Record<string, unknown>[] = []
  try {
    for await (const b of executeQuery(store, parseQuery(body), { to, finalizedOnly: true })) {
      out.push(JSON.parse(b.line) as Record<string, unknown>)
    }
  } finally {
    await store.close()
  }
  return out
}

/** a Parquet value (DuckDB JSON form) in the stream's JSON form for the field's type */
function asStreamed(fd: FieldDef, v: unknown): unknown {
  if (v === null) return null
  switch (fd.type) {
    case 'json':
      return JSON.parse(v as string)
    case 'version':
      return v === 'legacy' ? v : Number(v)
    case 'u64':
    case 'i64':
      return String(v)
    default:
      return v
  }
}

test('export writes every kind as zstd Parquet equal to the stream, u64 exact', async () => {
  const blocks = randomBlocks(7, { blocks: 60, firstSlot: 300_000_000, maxTx: 5 })
  const dir = tempDir('solportal-export-')
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false }, false)
  await writeStore(coldDir(dir), blocks, {}, [17])
  const from = blocks[5].header.number
  const to = blocks[50].header.number
  const out = join(tempDir('solportal-export-out-'), 'pq')

  const r = await cli(['export', dir, out, '--from', String(from), '--to', String(to)])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, new RegExp(`exported 46 blocks \\(blocks ${from}\\.\\.${to}\\)`))

  const expected = await streamed(dir, from, to)
  assert.equal(expected.length, 46)
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  let bigSeen = 0
  for (const f of EXPORT_FILES) {
    const path = join(out, f.file)
    const codecs = await conn.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`)
    assert.deepEqual(
      codecs.getRowObjectsJson().map((x) => x.compression),
      ['ZSTD'],
      f.file,
    )
    const types = await conn.runAndReadAll(`DESCRIBE SELECT * FROM '${path}'`)
    const typeOf = new Map(types.getRowObjectsJson().map((x) => [x.column_name as string, x.column_type as string]))
    for (const fd of f.fields) {
      if (fd.type === 'u64') assert.equal(typeOf.get(fd.name), 'UBIGINT', `${f.file} ${fd.name}`)
      if (fd.type === 'safeAsciiList') assert.equal(typeOf.get(fd.name), 'VARCHAR[]', `${f.file} ${fd.name}`)
    }
    const rows = (await conn.runAndReadAll(`SELECT * FROM '${path}'`)).getRowObjectsJson()
    const member = BLOCK_MEMBERS.find((m) => m.kind === f.kind)?.member
    const want: Record<string, unknown>[] = []
    for (const b of expected) {
      const header = b.header as Record<string, unknown>
      if (member === undefined) want.push(header)
      else
        for (const row of (b[member] ?? []) as Record<string, unknown>[])
          want.push({ ...row, [BLOCK_NUMBER_COLUMN]: header.number })
    }
    assert.equal(rows.length, want.length, `${f.file}: row count`)
    assert.ok(member === undefined || want.length > 0, `${f.file}: the generated data has rows`)
    for (let i = 0; i < rows.length; i++) {
      for (const fd of f.fields) {
        const key = fd.name === BLOCK_NUMBER_COLUMN ? fd.name : fd.selectors[0]
        const got = asStreamed(fd, rows[i][fd.name])
        assert.deepEqual(got, want[i][key], `${f.file} row ${i} ${fd.name}`)
        if ((fd.type === 'u64' || fd.type === 'i64') && got !== null && BigInt(got as string) > 2n ** 53n) bigSeen++
      }
    }
  }
  conn.closeSync()
  assert.ok(bigSeen > 0, 'the data holds u64 values above 2^53')

  // misuse: one line, exit 2
  const bad = await cli(['export', dir, out, '--from', '10', '--to', '5'])
  assert.equal(bad.code, 2)
  assert.equal(bad.stderr.trim().split('\n').length, 1)
  const notDs = await cli(['export', out, join(out, 'x')])
  assert.equal(notDs.code, 2)
  assert.match(notDs.stderr, /not a dataset directory/)
})

test('row groups hold at most the configured rows, a chunk holding more than that included', async () => {
  const blocks = randomBlocks(11, { blocks: 40, firstSlot: 300_000_000, maxTx: 5 })
  const dir = tempDir('solportal-export-groups-')
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false }, false)
  // one chunk holds every block: its rows of each kind come to the writer at once
  await writeStore(coldDir(dir), blocks, {}, [40])
  const out = join(tempDir('solportal-export-groups-out-'), 'pq')
  const store = await openDatasetDir(dir)
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const r = await exportParquet(store, out, first, last, { rowGroupRows: 50 })
  await store.close()
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  let cut = 0
  for (const f of EXPORT_FILES) {
    const path = join(out, f.file)
    const groups = (
      await conn.runAndReadAll(
        `SELECT row_group_id, any_value(row_group_num_rows) AS n FROM parquet_metadata('${path}') GROUP BY row_group_id`,
      )
    ).getRowObjectsJson()
    const sizes = groups.map((g) => Number(g.n))
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      r.rows[f.file],
      `${f.file}: rows`,
    )
    for (const n of sizes) assert.ok(n <= 50, `${f.file}: a row group of ${n} rows`)
    if (r.rows[f.file] > 50) cut++
  }
  conn.closeSync()
  assert.ok(cut >= 3, `${cut} files held more than one group's rows`)
})
