// DiskColdStore: exact round trips of every column type, pruning, range selection, compaction,
// integrity checks.
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { columnsOf, HEADER_FIELDS } from '../src/catalogue.ts'
import type { Block, BlockHeader } from '../src/model.ts'
import { RECORD_KINDS } from '../src/model.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { ColdStoreError, DiskColdStore } from '../src/store/cold/disk-store.ts'
import { CorruptChunkError, PRUNE_FIELDS, readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { encodeColumn } from '../src/store/cold/encode/column.ts'
import { decodeColumn, lazyRows } from '../src/store/cold/encode/decode.ts'
import { MemoryChunk } from '../src/store/memory.ts'
import { generateBlocks, makeAddressPool, rng } from './support/cold/gen.ts'
import { tempDir, writeStore } from './support/cold/util.ts'

async function allChunks(s: DiskColdStore, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<Chunk[]> {
  const out: Chunk[] = []
  for await (const c of s.chunks(from, to)) out.push(c)
  return out
}

function plain(a: ArrayLike<unknown>): unknown[] {
  return Array.from(a)
}

/** every column of every kind and the header of `c` equal those of the in-memory reference chunk */
function assertSameChunk(c: Chunk, blocks: Block[]): void {
  const ref = new MemoryChunk(blocks)
  assert.equal(c.blockCount, ref.blockCount)
  assert.equal(c.firstBlock, ref.firstBlock)
  assert.equal(c.lastBlock, ref.lastBlock)
  for (const d of HEADER_FIELDS) {
    const k = d.name as keyof BlockHeader
    assert.deepEqual(plain(c.header(k)), plain(ref.header(k)), `header.${k}`)
  }
  for (const kind of RECORD_KINDS) {
    const t = c.table(kind)
    const r = ref.table(kind)
    assert.equal(t.rowCount, r.rowCount, `${kind} rows`)
    assert.deepEqual(plain(t.blockOffsets), plain(r.blockOffsets), `${kind} offsets`)
    for (const d of columnsOf(kind))
      assert.deepEqual(plain(t.column(d.name)), plain(r.column(d.name)), `${kind}.${d.name}`)
    assert.throws(() => t.column('nope'), /unknown column/)
  }
}

test('every column type round-trips exactly (u64 > 2^53, i64 extremes, nulls, empty lists, unicode)', async () => {
  const blocks = generateBlocks({ seed: 3, count: 60 })
  // the generator really produces the edge cases checked here
  const ix = blocks.flatMap((b) => b.instructions)
  const txs = blocks.flatMap((b) => b.transactions)
  assert.ok(txs.some((t) => t.fee > 2n ** 53n))
  assert.ok(ix.some((i) => i.computeUnitsConsumed === null) && ix.some((i) => i.computeUnitsConsumed! > 2n ** 63n))
  assert.ok(ix.some((i) => i.accounts.length === 0) && ix.some((i) => i.d8 === null))
  assert.ok(blocks.flatMap((b) => b.rewards).some((r) => r.lamports === -(2n ** 63n)))
  assert.ok(blocks.flatMap((b) => b.logs).some((l) => l.message.includes('\ud800')))
  assert.ok(blocks.some((b) => b.header.height === null) && blocks.some((b) => b.transactions.length === 0))
  for (const opts of [{ targetBlocks: 13 }, { targetBlocks: 1000, compress: true }]) {
    const dir = tempDir()
    await writeStore(dir, blocks, opts)
    const s = await DiskColdStore.open(dir, { readOnly: true, verify: 'full' })
    const chunks = await allChunks(s)
    assert.equal(
      chunks.reduce((n, c) => n + c.blockCount, 0),
      blocks.length,
    )
    let i = 0
    for (const c of chunks) {
      assertSameChunk(c, blocks.slice(i, i + c.blockCount))
      i += c.blockCount
    }
    // whole records too (the path merges use)
    const back = s.entries.flatMap((e) => readChunkBlocks(join(dir, 'chunks', e.file)))
    assert.deepEqual(back, blocks)
    await s.close()
  }
})

test('encodings: edge values, empty columns, all-null columns, dictionary vs plain choice', () => {
  const cases: [string, Parameters<typeof encodeColumn>[1], unknown[]][] = [
    ['u32', 'u32', [0, 1, 0xffffffff, null, 7]],
    ['u32 empty', 'u32', []],
    ['u64', 'u64', [0n, 2n ** 64n - 1n, 2n ** 53n + 1n, null]],
    ['i64', 'i64', [-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n]],
    ['bool', 'bool', [true, false, null, true]],
    ['version', 'version', ['legacy', 0, 1, 'legacy']],
    ['string nulls', 'string', [null, null, null]],
    ['string', 'string', ['', 'é', '😀', '\ud800', 'a\nb', '"\\', 'x']],
    [
      'json',
      'json',
      [null, { InstructionError: [0, { Custom: 1 }] }, 'BlockhashNotFound', { writable: [], readonly: [] }, [1, 'a']],
    ],
    ['address', 'address', [[0], [0, 0], [], [70000, 3]]],
    ['list', 'safeAsciiList', [[], ['a', 'b', 'a'], [], ['c']]],
  ]
  for (const [name, type, values] of cases) {
    const enc = encodeColumn(name, type, values)
    // decode from a copy laid out like the file (8-aligned parts)
    const parts = enc.parts.map((p) => new Uint8Array(p))
    const dec = decodeColumn(enc.e, values.length, parts, enc.w, enc.v)
    assert.deepEqual(Array.from(dec.values), values, name)
  }
  // list columns build rows lazily; they behave like arrays everywhere
  let built = 0
  const lazy = lazyRows(4, (i) => (built++, [`r${i}`]))
  assert.deepEqual(lazy[2], ['r2'])
  assert.equal(lazy[2], lazy[2], 'built once')
  assert.equal(built, 1)
  assert.equal(lazy.length, 4)
  assert.ok(Array.isArray(lazy) && 3 in lazy && !(4 in lazy) && lazy[4] === undefined)
  assert.deepEqual(lazy.slice(1, 3), [['r1'], ['r2']])
  assert.deepEqual(Array.from(lazy), [['r0'], ['r1'], ['r2'], ['r3']])
  assert.equal(JSON.stringify(lazy), '[["r0"],["r1"],["r2"],["r3"]]')
  assert.deepEqual([...lazy].length, 4)
  const rep = Array.from({ length: 100 }, (_, i) => `prog${i % 3}`)
  assert.equal(encodeColumn('p', 'safeAscii', rep).e, 'dict')
  assert.equal(
    encodeColumn(
      'p',
      'safeAscii',
      rep.map((x, i) => x + i),
    ).e,
    'plain',
  )
  // 44-character addresses, 60% distinct: the dictionary is smaller than the plain list
  const addrs = makeAddressPool(rng(1), 60)
  assert.equal(
    encodeColumn(
      'a',
      'safeAscii',
      Array.from({ length: 100 }, (_, i) => addrs[i % 60]),
    ).e,
    'dict',
  )
  assert.throws(() => encodeColumn('fee', 'u64', [-1n]), /expected a u64/)
  assert.throws(() => encodeColumn('fee', 'u64', [5]), /expected a u64/)
  assert.throws(() => encodeColumn('n', 'u32', [1.5]), /expected a u32/)
  assert.throws(() => encodeColumn('n', 'i64', [2n ** 63n]), /expected a i64/)
})

test('mayContain never says false for a present value, and prunes absent ones', async () => {
  const blocks = generateBlocks({ seed: 5, count: 40, accounts: 3000 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 10 })
  const s = await DiskColdStore.open(dir, { readOnly: true })
  const absent = makeAddressPool(rng(999), 2000) // not in the generator's pool (other seed)
  let probes = 0
  let falsePositives = 0
  let i = 0
  for (const c of await allChunks(s)) {
    const part = blocks.slice(i, i + c.blockCount)
    i += c.blockCount
    assert.ok(c.mayContain)
    for (const kind of RECORD_KINDS) {
      for (const field of PRUNE_FIELDS[kind]) {
        const present = new Set<string>()
        const t = c.table(kind)
        const col = t.column(field)
        for (let r = 0; r < t.rowCount; r++) {
          const v = col[r] as unknown
          if (typeof v === 'string') present.add(v)
          else if (Array.isArray(v)) for (const x of v) present.add(x)
          else if (v && typeof v === 'object')
            for (const x of [...(v as { writable: string[] }).writable, ...(v as { readonly: string[] }).readonly])
              present.add(x)
        }
        for (const v of present) assert.equal(c.mayContain!(kind, field, new Set([v])), true, `${kind}.${field} ${v}`)
        // a set holding one present value among absent ones is "maybe"
        if (present.size)
          assert.equal(c.mayContain!(kind, field, new Set([...absent.slice(0, 5), [...present][0]])), true)
        for (const a of absent) {
          probes++
          if (c.mayContain!(kind, field, new Set([a]))) falsePositives++
        }
      }
      assert.equal(c.mayContain!(kind, 'unknownField', new Set(['x'])), true, 'unknown fields are "maybe"')
      assert.equal(c.mayContain!(kind, PRUNE_FIELDS[kind][0], new Set()), false, 'an empty set matches nothing')
    }
    assert.equal(part.length, c.blockCount)
  }
  assert.ok(falsePositives / probes < 0.03, `false positive rate ${falsePositives}/${probes}`)
  await s.close()
})

test('chunks(from, to) covers exactly the produced blocks of the range, never above to; chainBefore', async () => {
  const blocks = generateBlocks({ seed: 8, count: 70, txPerBlock: 2 })
  const nums = blocks.map((b) => b.header.number)
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 9, fanout: 3 }, [4, 1, 1, 20, 2])
  const s = await DiskColdStore.open(dir, { readOnly: true })
  const r = rng(17)
  const lo = nums[0] - 5
  const hi = nums[nums.length - 1] + 5
  for (let k = 0; k < 200; k++) {
    let from = lo + Math.floor(r() * (hi - lo))
    let to = lo + Math.floor(r() * (hi - lo))
    if (k % 10 === 0)
      to = from - 1 // empty range
    else if (from > to) [from, to] = [to, from]
    const got: number[] = []
    let prevLast = -Infinity
    for await (const c of s.chunks(from, to)) {
      assert.ok(c.lastBlock <= to, 'never a block above to')
      assert.ok(c.firstBlock > prevLast, 'ascending')
      prevLast = c.lastBlock
      const h = Array.from(c.header('number'))
      assert.equal(h.length, c.blockCount)
      assert.equal(h[h.length - 1], c.lastBlock)
      // tables agree with the blocks the chunk holds
      const off = c.table('transaction').blockOffsets
      assert.equal(off.length, c.blockCount + 1)
      assert.equal(c.table('transaction').rowCount, off[c.blockCount])
      assert.equal(c.table('transaction').column('fee').length, c.table('transaction').rowCount)
      got.push(...h.filter((n) => n >= from))
    }
    assert.deepEqual(
      got,
      nums.filter((n) => n >= from && n <= to),
      `[${from}, ${to}]`,
    )
  }
  for (let k = 0; k < 50; k++) {
    const n = lo + Math.floor(r() * (hi - lo))
    const limit = 1 + Math.floor(r() * 30)
    const want = blocks
      .filter((b) => b.header.number < n)
      .slice(-limit)
      .map((b) => ({ number: b.header.number, hash: b.header.hash }))
    assert.deepEqual(await s.chainBefore(n, limit), want, `chainBefore(${n}, ${limit})`)
  }
  assert.deepEqual(await s.chainBefore(nums[0], 10), [])
  assert.equal(s.firstBlock(), nums[0])
  assert.deepEqual(s.lastBlock(), { number: nums[nums.length - 1], hash: blocks[blocks.length - 1].header.hash })
  await s.close()
})

test('small appends: durable at once, compacted into full chunks, bounded file count', async () => {
  const blocks = generateBlocks({ seed: 21, count: 120, txPerBlock: 1 })
  const dir = tempDir()
  const s = await DiskColdStore.open(dir, { targetBlocks: 25, fanout: 3, fsync: false, graceMs: 0 })
  let maxTail = 0
  for (let i = 0; i < blocks.length; i++) {
    await s.append([blocks[i]])
    const e = s.entries
    // unsealed chunks only at the end
    const firstUnsealed = e.findIndex((x) => !x.sealed)
    if (firstUnsealed >= 0) assert.ok(e.slice(firstUnsealed).every((x) => !x.sealed))
    maxTail = Math.max(maxTail, e.length - (firstUnsealed < 0 ? e.length : firstUnsealed))
    assert.equal(s.lastBlock()!.number, blocks[i].header.number)
  }
  assert.ok(maxTail <= 2 * 3, `unsealed tail of ${maxTail} chunks`)
  const sealed = s.entries.filter((e) => e.sealed)
  assert.ok(
    sealed.length >= 4 && sealed.every((e) => e.blockCount === 25),
    JSON.stringify(s.entries.map((e) => e.blockCount)),
  )
  // dropped files are gone, only listed files remain
  assert.deepEqual(readdirSync(join(dir, 'chunks')).sort(), s.entries.map((e) => e.file).sort())
  await s.compact()
  assert.ok(s.entries.every((e) => e.sealed))
  await s.close()
  const r = await DiskColdStore.open(dir, { readOnly: true, verify: 'full' })
  assert.deepEqual(
    r.entries.flatMap((e) => readChunkBlocks(join(dir, 'chunks', e.file))),
    blocks,
  )
  await r.close()
})

test('append checks order; one writer at a time; reopen keeps the data', async () => {
  const blocks = generateBlocks({ seed: 2, count: 12, txPerBlock: 1 })
  const dir = tempDir()
  const s = await DiskColdStore.open(dir, { fsync: false })
  await s.append(blocks.slice(0, 5))
  // a block stored already: a retried append, recognized when it is the same block
  await s.append([blocks[3]])
  const changed = { ...blocks[3], header: { ...blocks[3].header, hash: 'X'.repeat(44) } }
  await assert.rejects(s.append([changed]), /block \d+ is stored with another hash/)
  await assert.rejects(s.append([blocks[7], blocks[6]]), /must ascend/)
  await s.append([]) // nothing
  await assert.rejects(DiskColdStore.open(dir), ColdStoreError) // the writer lock
  await s.append(blocks.slice(5))
  await s.close()
  const again = await DiskColdStore.open(dir, { fsync: false })
  assert.deepEqual(again.lastBlock(), { number: blocks[11].header.number, hash: blocks[11].header.hash })
  await assert.rejects(DiskColdStore.open(dir, { readOnly: false }), /already open for writing/)
  await again.close()
  await assert.rejects(DiskColdStore.open(join(dir, 'nothing-here'), { readOnly: true }), /no cold store here/)
})

test('crash leftovers are cleaned, corruption is detected, never served', async () => {
  const blocks = generateBlocks({ seed: 4, count: 30 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 10 })
  const listed = readdirSync(join(dir, 'chunks')).sort()
  // leftovers of a crash: a half-written temp file, an unlisted chunk (written, manifest not yet
  // swapped), a temp manifest
  mkdirSync(join(dir, 'tmp'), { recursive: true })
  writeFileSync(join(dir, 'tmp', 'half.spc'), 'partial')
  writeFileSync(
    join(dir, 'chunks', '000000009999-000000009999-g99-0.spc'),
    readFileSync(join(dir, 'chunks', listed[0])),
  )
  writeFileSync(join(dir, 'catalogue', 'seg-000000000099.bin.tmp'), 'half')
  const ro = await DiskColdStore.open(dir, { readOnly: true })
  assert.equal((await allChunks(ro)).length, 3, 'a reader serves only what the manifest lists')
  await ro.close()
  const s = await DiskColdStore.open(dir, { fsync: false })
  assert.deepEqual(readdirSync(join(dir, 'chunks')).sort(), listed)
  assert.deepEqual(readdirSync(join(dir, 'tmp')), [])
  assert.ok(!existsSync(join(dir, 'catalogue', 'seg-000000000099.bin.tmp')))
  await s.close()

  // a flipped byte inside a column blob: the column read fails its crc, full verify fails
  const victim = join(dir, 'chunks', listed[1])
  const buf = readFileSync(victim)
  buf[100] ^= 0xff
  writeFileSync(victim, buf)
  const r = await DiskColdStore.open(dir, { readOnly: true })
  await assert.rejects(r.verify(), /sha256/)
  const c = (await allChunks(r))[1]
  assert.throws(() => {
    for (const kind of RECORD_KINDS) for (const d of columnsOf(kind)) c.table(kind).column(d.name)
    for (const d of HEADER_FIELDS) c.header(d.name as keyof BlockHeader)
  }, CorruptChunkError)
  await r.close()
  // a truncated file: open refuses (size mismatch)
  writeFileSync(victim, buf.subarray(0, buf.length - 10))
  await assert.rejects(DiskColdStore.open(dir, { readOnly: true }), /bytes, the catalogue says/)
  // a damaged catalogue pointer: refused, not silently treated as empty
  const m = readFileSync(join(dir, 'CATALOGUE.json'), 'utf8')
  writeFileSync(join(dir, 'CATALOGUE.json'), m.replace('"generation":', '"generation":1'))
  await assert.rejects(DiskColdStore.open(dir, { readOnly: true }), /checksum mismatch/)
  assert.ok(statSync(join(dir, 'CATALOGUE.json')).size > 0)
})

test('decoded columns stay within the cache budget', async () => {
  const blocks = generateBlocks({ seed: 9, count: 40 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 5 })
  const budget = 200_000
  const s = await DiskColdStore.open(dir, { readOnly: true, cacheBytes: budget })
  for (const c of await allChunks(s)) {
    for (const kind of RECORD_KINDS) for (const d of columnsOf(kind)) c.table(kind).column(d.name)
    assert.ok(s.cachedBytes <= budget + 150_000, `cache holds ${s.cachedBytes}`) // at most one entry over
  }
  await s.close()
})

test('files dropped by a merge stay readable for iterations that started before it', async () => {
  const blocks = generateBlocks({ seed: 31, count: 4, txPerBlock: 6 })
  const dir = tempDir()
  const s = await DiskColdStore.open(dir, { targetBlocks: 100, fanout: 2, fsync: false, graceMs: 0 })
  await s.append(blocks.slice(0, 1))
  const file = join(dir, 'chunks', s.entries[0].file)
  const it = s.chunks(0, Number.MAX_SAFE_INTEGER)[Symbol.asyncIterator]()
  const first = (await it.next()).value as Chunk
  await s.append(blocks.slice(1, 2)) // two level-0 chunks with fanout 2: merged, `file` dropped
  assert.equal(s.entries.length, 1)
  assert.notEqual(join(dir, 'chunks', s.entries[0].file), file)
  assert.ok(existsSync(file), 'kept while an iteration of the older manifest runs')
  assert.deepEqual(
    plain(first.table('instruction').column('programId')),
    blocks[0].instructions.map((i) => i.programId),
  )
  await it.return!()
  assert.ok(!existsSync(file), 'deleted once that iteration ended')
  await s.close()
})
