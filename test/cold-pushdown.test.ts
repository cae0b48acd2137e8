// Format 2 index parts: Table.match (filter push-down) and Table.rowView give exactly what the
// engine's own loops over column() give, on every string and list column; format versions.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { test } from 'node:test'
import { columnsOf } from '../src/catalogue.ts'
import { RECORD_KINDS } from '../src/model.ts'
import type { Chunk, MatchOp, Table } from '../src/store/chunk.ts'
import { DiskColdStore } from '../src/store/cold.ts'
import { CorruptChunkError, FORMAT_VERSION, readFooter } from '../src/store/cold/chunk-file.ts'
import { generateBlocks, rng } from './support/cold/gen.ts'
import { tempDir, writeStore } from './support/cold/util.ts'

async function allChunks(s: DiskColdStore): Promise<Chunk[]> {
  const out: Chunk[] = []
  for await (const c of s.chunks(0, Number.MAX_SAFE_INTEGER)) out.push(c)
  return out
}

/** the engine's semantics of each op over decoded values */
function reference(col: ArrayLike<unknown>, op: MatchOp, rows: number[]): number[] {
  return rows.filter((r) => {
    const v = col[r]
    if ('in' in op) return op.in.has(v as string | null)
    if ('prefix' in op) {
      const s = v as string | null
      if (typeof s !== 'string') return false
      return op.prefix.some((g) => [...g.values].some((p) => s.startsWith(p)))
    }
    const list = v as readonly string[]
    if ('at' in op) return list.length > op.at && op.values.has(list[op.at])
    return list.some((e) => op.any.has(e))
  })
}

function runMatch(t: Table, field: string, op: MatchOp, rows: number[]): number[] | null {
  const buf = Int32Array.from(rows)
  const k = t.match!(field, op, buf, buf.length)
  return k < 0 ? null : Array.from(buf.subarray(0, k))
}

test('Table.match equals filtering column() for every string and list column; rowView equals column()', async () => {
  const blocks = generateBlocks({ seed: 11, count: 50, accounts: 400 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 12 })
  const rand = rng(7)
  let pushed = 0
  let views = 0
  let prefixes = 0
  // default cache: parts read whole; a 1-byte cache: every use re-reads, after the first (crc
  // checked) by ranges from the file
  for (const cacheBytes of [undefined, 1]) {
    const s = await DiskColdStore.open(dir, { readOnly: true, cacheBytes })
    for (const c of await allChunks(s)) {
      for (const kind of RECORD_KINDS) {
        const t = c.table(kind)
        const n = t.rowCount
        const all = Array.from({ length: n }, (_, i) => i)
        // a random subset of candidates too (ascending)
        const some = all.filter(() => rand() < 0.3)
        const few = all.filter(() => rand() < 0.01)
        for (const d of columnsOf(kind)) {
          const view = t.rowView!(d.name, 3)
          const col = t.column(d.name)
          const checkView = (v: ArrayLike<unknown> | null) => {
            if (!v) return
            views++
            assert.equal(v.length, n)
            for (let r = 0; r < n; r++) assert.deepEqual(v[r], col[r], `${kind}.${d.name} row ${r}`)
          }
          checkView(view)
          // with the 1-byte cache the decoded column is dropped again by the next read: a view
          // reading by ranges from the file
          if (cacheBytes === 1) {
            t.column(columnsOf(kind).find((o) => o.name !== d.name)!.name)
            checkView(t.rowView!(d.name, 3))
          }
          const ops: MatchOp[] = []
          if (d.type === 'base58' || d.type === 'string') {
            const present = [...new Set(Array.from(col as ArrayLike<string | null>).filter((x) => x !== null))]
            const pick = () => present[Math.floor(rand() * present.length)]
            if (present.length) ops.push({ in: new Set([pick()]) }, { in: new Set([pick(), pick(), 'absent-value']) })
            ops.push({ in: new Set(['absent-value']) }, { in: new Set([null]) }, { in: new Set(['', 'é', '"\\']) })
            // prefixes of present values (the d1..d8 form), and of absent ones
            const withPrefix = present.filter((x) => x.startsWith('0x') && x.length >= 6)
            if (withPrefix.length) {
              prefixes++
              const p4 = withPrefix.map((x) => x.slice(0, 4))
              const p6 = withPrefix.map((x) => x.slice(0, 6))
              ops.push({ prefix: [{ length: 4, values: new Set([p4[0]]) }] })
              ops.push({
                prefix: [
                  { length: 4, values: new Set(p4.slice(0, 3)) },
                  { length: 6, values: new Set(p6.slice(3, 6)) },
                ],
              })
              ops.push({ prefix: [{ length: 6, values: new Set(['0xzzzz']) }] })
            }
          } else if (d.type === 'base58List') {
            const present = [...new Set(Array.from(col as ArrayLike<string[]>).flat())]
            const pick = () => present[Math.floor(rand() * present.length)]
            if (present.length) {
              for (const at of [0, 1, 2, 7]) ops.push({ at, values: new Set([pick(), pick()]) })
              ops.push({ any: new Set([pick()]) }, { any: new Set([pick(), pick(), 'absent-value']) })
            }
            ops.push({ any: new Set(['absent-value']) }, { at: 0, values: new Set(['absent-value']) })
          } else continue
          for (const op of ops) {
            for (const rows of [all, some, few, few.slice(0, 1)]) {
              const got = runMatch(t, d.name, op, rows)
              assert.notEqual(got, null, `${kind}.${d.name}: format 2 columns answer`)
              pushed++
              assert.deepEqual(
                got,
                reference(col, op, rows),
                `${kind}.${d.name} ${JSON.stringify(op, (_, v) => (v instanceof Set ? [...v] : v))}`,
              )
            }
          }
        }
      }
    }
    await s.close()
  }
  assert.ok(
    pushed > 1000 && views > 100 && prefixes > 0,
    `${pushed} match calls, ${views} row views, ${prefixes} prefix columns`,
  )
})

test('format versions: 2 written; 1 read without push-down; others refused', async () => {
  const blocks = generateBlocks({ seed: 12, count: 10 })
  for (const v of [1, 2] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 100, formatVersion: v })
    const file = join(dir, 'chunks', readdirSync(join(dir, 'chunks'))[0])
    assert.equal(readFooter(file).footer.v, v)
    const s = await DiskColdStore.open(dir, { readOnly: true })
    const [c] = await allChunks(s)
    const t = c.table('instruction')
    const rows = Int32Array.from({ length: t.rowCount }, (_, i) => i)
    const k = t.match!('programId', { in: new Set([(t.column('programId') as string[])[0]]) }, rows, rows.length)
    assert.ok(v === 1 ? k === -1 : k > 0)
    await s.close()
  }
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 100 })
  const file = join(dir, 'chunks', readdirSync(join(dir, 'chunks'))[0])
  assert.equal(readFooter(file).footer.v, FORMAT_VERSION)
  // rewrite the footer as version 3 (valid checksum): refused, not misread
  const b = readFileSync(file)
  const flen = b.readUInt32LE(b.length - 16)
  const fj = JSON.parse(b.subarray(b.length - 16 - flen, b.length - 16).toString('utf8'))
  fj.v = 3
  const nf = Buffer.from(JSON.stringify(fj), 'utf8')
  const tr = Buffer.from(b.subarray(b.length - 16))
  tr.writeUInt32LE(nf.length, 0)
  tr.writeUInt32LE(crc32(nf), 4)
  writeFileSync(file, Buffer.concat([b.subarray(0, b.length - 16 - flen), nf, tr]))
  assert.throws(
    () => readFooter(file),
    (e: unknown) => e instanceof CorruptChunkError && /version 3 is not supported/.test((e as Error).message),
  )
})
