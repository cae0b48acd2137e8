// Format 2 and 3 index parts and bool columns: Table.match (filter push-down) and Table.rowView give exactly what the
// engine's own loops over column() give, on every string and list column; format versions.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { test } from 'node:test'
import { columnsOf } from '../src/catalogue.ts'
import { RECORD_KINDS } from '../src/model.ts'
import type { Chunk, MatchOp, Table } from '../src/store/chunk.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
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
    if ('bool' in op) return v === op.bool
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
  const rand = rng(7)
  let pushed = 0
  let views = 0
  let prefixes = 0
  let repeats = 0
  let candidates = 0
  let bools = 0
  // format 2 (postings without positions) and 3 (every occurrence with its position); default
  // cache: parts read whole; a 1-byte cache: every use re-reads, after the first (crc checked) by
  // pages from the file
  for (const [formatVersion, cacheBytes, frameLog, zstd] of [
    [2, undefined, undefined, false],
    [3, undefined, undefined, false],
    [3, 1, undefined, false],
    [4, undefined, undefined, false],
    [4, 1, undefined, false],
    // frames of 2 KiB: reads span several frames, pages of a frame are shared
    [4, undefined, 11, false],
    [4, 1, 11, false],
    // format 5: text and JSON parts in zstd frames
    [5, undefined, undefined, true],
    [5, 1, 11, true],
  ] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 12, formatVersion, frameLog, zstd })
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
          if (d.type === 'safeAscii' || d.type === 'string') {
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
          } else if (d.type === 'safeAsciiList') {
            const lists = Array.from(col as ArrayLike<string[]>)
            const present = [...new Set(lists.flat())]
            // rows listing a value twice: one posting per occurrence in format 3
            for (const l of lists) if (new Set(l).size < l.length) repeats++
            const pick = () => present[Math.floor(rand() * present.length)]
            if (present.length) {
              for (const at of [0, 1, 2, 7]) ops.push({ at, values: new Set([pick(), pick()]) })
              ops.push({ any: new Set([pick()]) }, { any: new Set([pick(), pick(), 'absent-value']) })
            }
            ops.push({ any: new Set(['absent-value']) }, { at: 0, values: new Set(['absent-value']) })
          } else if (d.type === 'bool') {
            ops.push({ bool: true }, { bool: false })
            bools++
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
            if (d.type === 'safeAsciiList') {
              // index lookups over the whole table and over a sub-range
              for (const [lo, hi] of [
                [0, n],
                [Math.floor(n / 3), Math.floor((2 * n) / 3)],
              ]) {
                const got = t.candidates!(d.name, op, lo, hi)
                assert.notEqual(got, null, `${kind}.${d.name}: list columns have postings`)
                candidates++
                assert.deepEqual(Array.from(got!), reference(col, op, all.slice(lo, hi)))
              }
            }
          }
        }
      }
    }
    await s.close()
  }
  assert.ok(
    pushed > 1000 && views > 100 && prefixes > 0 && repeats > 0 && candidates > 100 && bools > 0,
    `${pushed} match calls, ${candidates} index lookups, ${views} row views, ${prefixes} prefix columns, ${repeats} lists with a repeated value`,
  )
})

test('format versions: 5 written; 1 read without push-down, 2, 3, 4 and 5 with; others refused', async () => {
  const blocks = generateBlocks({ seed: 12, count: 10 })
  for (const v of [1, 2, 3, 4, 5] as const) {
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
  // rewrite the footer as version 6 (valid checksum, plain JSON footer): refused, not misread
  const b = readFileSync(file)
  const flen = b.readUInt32LE(b.length - 16)
  const fj = readFooter(file).footer as unknown as Record<string, unknown>
  fj.v = 6
  const nf = Buffer.from(JSON.stringify(fj), 'utf8')
  const tr = Buffer.from(b.subarray(b.length - 16))
  tr.writeUInt32LE(nf.length, 0)
  tr.writeUInt32LE(crc32(nf), 4)
  tr.write('SPCOLDZZ', 8, 'latin1')
  writeFileSync(file, Buffer.concat([b.subarray(0, b.length - 16 - flen), nf, tr]))
  assert.throws(
    () => readFooter(file),
    (e: unknown) => e instanceof CorruptChunkError && /version 6 is not supported/.test((e as Error).message),
  )
})

test('format 3 page checksums and format 4 frames: damaged bytes fail the reads that touch them, and only those', async () => {
  const blocks = generateBlocks({ seed: 13, count: 60 })
  for (const formatVersion of [3, 4] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 100, formatVersion })
    const file = join(dir, 'chunks', readdirSync(join(dir, 'chunks'))[0])
    const m = readFooter(file).footer.kinds.instruction.cols.accounts
    if (formatVersion === 3) assert.ok(m.pc && m.pc.length >= 3, `accounts blob spans ${m.pc?.length} pages`)
    else assert.ok(m.t === 'safeAsciiList' && m.fc && m.fc.length >= 7, `accounts blob in ${m.fc?.length} frames`)
    // expected values, from the intact file
    const s0 = await DiskColdStore.open(dir, { readOnly: true })
    const t0 = (await allChunks(s0))[0].table('instruction')
    const lists = Array.from(t0.column('accounts') as ArrayLike<string[]>)
    await s0.close()
    // flip a byte in the last page / frame: the postings' positions (the blob's last part) live there
    const b = readFileSync(file)
    b[m.o + m.l - 3] ^= 0xff
    writeFileSync(file, b)
    const s = await DiskColdStore.open(dir, { readOnly: true })
    const t = (await allChunks(s))[0].table('instruction')
    // a row read on demand touches the offsets, codes and dictionary only: served intact
    const view = t.rowView!('accounts', 1)!
    assert.deepEqual(view[0], lists[0])
    assert.deepEqual(view[lists.length - 1], lists[lists.length - 1])
    // an `a0` filter over every account reads all the positions: the damaged page is refused,
    // never misread
    const rows = Int32Array.from({ length: t.rowCount }, (_, i) => i)
    assert.throws(
      () => t.match!('accounts', { at: 0, values: new Set(lists.flat()) }, rows, rows.length),
      (e: unknown) => e instanceof CorruptChunkError && /checksum mismatch/.test((e as Error).message),
    )
    // the whole column's decode checks the whole blob
    assert.throws(() => t.column('accounts'), CorruptChunkError)
    await s.close()
  }
})

test('format 3 and 4 Bloom filters are read one at a time, each checked with its own crc32', async () => {
  const blocks = generateBlocks({ seed: 14, count: 20 })
  const loaded = new Set(blocks.flatMap((b) => b.transactions.flatMap((t) => t.loadedAddresses.writable)))
  const programs = new Set(blocks.flatMap((b) => b.instructions.map((i) => i.programId)))
  assert.ok(loaded.size > 0)
  for (const formatVersion of [2, 3, 4] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 100, formatVersion })
    const file = join(dir, 'chunks', readdirSync(join(dir, 'chunks'))[0])
    const { footer } = readFooter(file)
    // format 4 keeps Bloom filters only where no value-ordered dictionary answers (json columns)
    assert.equal('instruction.programId' in footer.prune.f, formatVersion < 4)
    const [off, len, crc] = footer.prune.f['transaction.loadedAddresses']
    assert.equal(crc === undefined, formatVersion === 2)
    // damage the loaded addresses filter only
    const b = readFileSync(file)
    b[footer.prune.o + off + Math.floor(len / 2)] ^= 0xff
    writeFileSync(file, b)
    const s = await DiskColdStore.open(dir, { readOnly: true })
    const [c] = await allChunks(s)
    if (formatVersion >= 3) {
      // another filter (format 4: the dictionary) is intact and answers; the damaged one is
      // refused, never misread
      assert.equal(c.mayContain!('instruction', 'programId', programs), true)
      assert.equal(c.mayContain!('instruction', 'programId', new Set(['absent-value'])), false)
      assert.throws(
        () => c.mayContain!('transaction', 'loadedAddresses', loaded),
        /Bloom filter transaction.loadedAddresses checksum/,
      )
    } else {
      // one crc for the whole section: any filter read fails
      assert.throws(() => c.mayContain!('instruction', 'programId', programs), /prune section checksum/)
    }
    await s.close()
  }
})
