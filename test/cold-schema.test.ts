// Schema evolution of chunk files: a chunk declares its columns; a column the reader knows but the
// chunk lacks reads as null; a column stored with another type is a clear error. The fixture is a
// format 3 chunk file (scripts/gen-cold-fixture.ts) of two trimmed real mainnet blocks.
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { columnsOf, HEADER_FIELDS, type FieldDef } from '../src/catalogue.ts'
import type { BlockHeader, RecordKind } from '../src/model.ts'
import { RECORD_KINDS } from '../src/model.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { FORMAT_VERSION, readChunkBlocks, readFooter, SchemaMismatchError } from '../src/store/cold/chunk-file.ts'
import { DiskChunk, type ColumnsOf } from '../src/store/cold/disk-chunk.ts'
import { ByteLru } from '../src/store/cold/lru.ts'
import { MemoryChunk } from '../src/store/memory.ts'
import { FIXTURE, fixtureBlocks } from '../scripts/gen-cold-fixture.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { tempDir, writeStore } from './support/cold/util.ts'

/** fields added to the catalogue after the chunk was written (one per kind, of several types) */
const ADDED: { readonly [K in RecordKind]: FieldDef } = {
  transaction: { name: 'priorityFee', type: 'u64', nullable: true, selectors: ['priorityFee'] },
  instruction: { name: 'stackHeight', type: 'u32', nullable: true, selectors: ['stackHeight'] },
  log: { name: 'decoded', type: 'json', nullable: true, selectors: ['decoded'] },
  balance: { name: 'owner', type: 'safeAscii', nullable: true, selectors: ['owner'] },
  tokenBalance: { name: 'extensions', type: 'safeAsciiList', nullable: true, selectors: ['extensions'] },
  reward: { name: 'note', type: 'string', nullable: true, selectors: ['note'] },
}
const extended: ColumnsOf = (kind) => [...columnsOf(kind), ADDED[kind]]

function open(path: string, columns?: ColumnsOf): DiskChunk {
  const { footer } = readFooter(path)
  return new DiskChunk(path, footer, new ByteLru(64 << 20), columns)
}

test('a format 3 chunk read after a field was added: old columns intact, the new ones null', async () => {
  const { footer } = readFooter(FIXTURE)
  assert.equal(footer.v, 3)
  const blocks = await fixtureBlocks()
  assert.deepEqual(
    blocks.map((b) => b.header.number),
    [100000000, 154808473],
  )
  const ref = new MemoryChunk(blocks)
  const c = open(FIXTURE, extended)
  for (const d of HEADER_FIELDS) {
    const k = d.name as keyof BlockHeader
    assert.deepEqual(Array.from(c.header(k)), Array.from(ref.header(k)), `header.${k}`)
  }
  let rows = 0
  for (const kind of RECORD_KINDS) {
    const t = c.table(kind)
    const r = ref.table(kind)
    assert.equal(t.rowCount, r.rowCount)
    rows += t.rowCount
    for (const d of columnsOf(kind))
      assert.deepEqual(Array.from(t.column(d.name)), Array.from(r.column(d.name)), `${kind}.${d.name}`)
    // the added field: null on every row, through every read path
    const added = ADDED[kind].name
    assert.deepEqual(Array.from(t.column(added)), new Array(t.rowCount).fill(null), `${kind}.${added}`)
    assert.equal(t.rowView!(added, 1), null)
    const all = Int32Array.from({ length: t.rowCount }, (_, i) => i)
    assert.equal(t.match!(added, { in: new Set(['x']) }, all, all.length), -1)
    assert.equal(t.candidates!(added, { any: new Set(['x']) }, 0, t.rowCount), null)
    // a name neither the chunk nor the reader knows is still refused
    assert.throws(() => t.column('nope'), /unknown column/)
  }
  assert.ok(rows > 40, `${rows} rows in the fixture`)
  // with today's catalogue the added names are unknown
  assert.throws(() => open(FIXTURE).table('instruction').column('stackHeight'), /unknown column/)
  // the whole-chunk reader (merges) gives the same blocks
  const back = readChunkBlocks(FIXTURE)
  assert.deepEqual(
    back.map((b) => b.instructions.length),
    blocks.map((b) => b.instructions.length),
  )
})

test('a column stored with another type than the reader declares is a clear error', () => {
  const retyped: ColumnsOf = (kind) =>
    columnsOf(kind).map((d) => (kind === 'instruction' && d.name === 'programId' ? { ...d, type: 'u64' } : d))
  const t = open(FIXTURE, retyped).table('instruction')
  assert.throws(
    () => t.column('programId'),
    (e: unknown) =>
      e instanceof SchemaMismatchError &&
      /column instruction\.programId is stored as encoding dict, but the catalogue declares it u64/.test(
        (e as Error).message,
      ),
  )
  assert.throws(() => t.rowView!('programId', 1), SchemaMismatchError)
  // other columns still read
  assert.equal(t.column('data').length, t.rowCount)
})

test('chunks (format 4 and up) declare every column with its type; added fields read as null, retyped ones fail', async () => {
  const blocks = generateBlocks({ seed: 21, count: 8 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 100 })
  const file = join(dir, 'chunks', readdirSync(join(dir, 'chunks'))[0])
  const { footer } = readFooter(file)
  assert.equal(footer.v, FORMAT_VERSION)
  for (const d of HEADER_FIELDS) assert.equal(footer.header.cols[d.name].t, d.type)
  for (const kind of RECORD_KINDS)
    for (const d of columnsOf(kind)) assert.equal(footer.kinds[kind].cols[d.name].t, d.type, `${kind}.${d.name}`)
  const c = open(file, extended)
  const t = c.table('transaction')
  assert.deepEqual(Array.from(t.column('priorityFee')), new Array(t.rowCount).fill(null))
  assert.deepEqual(Array.from(t.column('fee')), Array.from(new MemoryChunk(blocks).table('transaction').column('fee')))
  // same encoding, other declared type (string vs safeAscii share the dictionary encoding): the
  // declared type decides
  const retyped: ColumnsOf = (kind) =>
    columnsOf(kind).map((d) => (kind === 'log' && d.name === 'message' ? { ...d, type: 'safeAscii' } : d))
  assert.throws(
    () => open(file, retyped).table('log').column('message'),
    /stored as string, but the catalogue declares it safeAscii/,
  )
  // the store serves such chunks as before
  const s = await DiskColdStore.open(dir, { readOnly: true })
  await s.close()
})
