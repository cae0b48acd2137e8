// A chunk built block by block (src/store/cold/chunk-file.ts `ChunkColumns`, what the import's
// batches use): the records of a block added are not kept (only their values, in columns), the
// bytes are those of encodeChunk of the same blocks, and a value of the wrong type in an account
// column of a later block is reported at its row in the whole chunk, as encodeColumn reports it.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { fixtureBlocks } from '../scripts/gen-cold-fixture.ts'
import type { Block } from '../src/model.ts'
import { ChunkColumns, encodeChunk, readChunkBlocks, writeEncodedChunk } from '../src/store/cold/chunk-file.ts'
import { AddressColumn, BigColumn, StringColumn, type ColumnBuilder } from '../src/store/cold/encode/builders.ts'
import { encodeColumn } from '../src/store/cold/encode/column.ts'
import { tempDir } from './support/cold/util.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** add a copy of each block, weak references to the copies and some of their records (in a frame of its own: none of them stays in the caller's registers) */
function addCopies(c: ChunkColumns, blocks: readonly Block[]): WeakRef<object>[] {
  const refs: WeakRef<object>[] = []
  for (const b of blocks) {
    const copy = structuredClone(b)
    refs.push(new WeakRef(copy.instructions[0]), new WeakRef(copy.transactions[0]), new WeakRef(copy))
    c.add(copy)
  }
  return refs
}

test('a block added is not kept, only its values; the same bytes as encodeChunk', async () => {
  const blocks = (await fixtureBlocks()).filter((b) => b.instructions.length > 0 && b.transactions.length > 0)
  assert.ok(blocks.length >= 2)
  const want = await encodeChunk(blocks)
  const c = new ChunkColumns()
  const refs = addCopies(c, blocks)
  // weak references hold their targets until the current job ends
  await new Promise((resolve) => setImmediate(resolve))
  gc()
  assert.equal(refs.filter((r) => r.deref() !== undefined).length, 0)
  const got = await c.encode()
  assert.equal(got.sha256, want.sha256)
  const dir = tempDir()
  const path = join(dir, 'c.spc')
  await writeEncodedChunk(path, got.parts, false)
  assert.deepEqual(
    readChunkBlocks(path).map((b: Block) => b.header.number),
    blocks.map((b) => b.header.number),
  )
})

test('a bad account value in a later block is reported at its row in the chunk', async () => {
  const blocks = (await fixtureBlocks()).filter((b) => b.instructions.length > 0).slice(0, 2)
  const row = blocks[0].instructions.length
  for (const [field, bad, message] of [
    ['programId', 5, 'expected a string'],
    ['accounts', ['x', 3], 'expected string elements'],
    // a string column that is not an account column (StringColumn), an address, a u64
    ['data', 7, 'expected a string'],
    ['instructionAddress', [0, -1], 'expected u32 elements'],
    ['instructionAddress', 'x', 'expected an array of numbers'],
    ['computeUnitsConsumed', 5, 'expected a u64 bigint'],
  ] as const) {
    const c = new ChunkColumns()
    const second = structuredClone(blocks[1])
    ;(second.instructions[0] as unknown as Record<string, unknown>)[field] = bad
    c.add(blocks[0])
    c.add(second)
    await assert.rejects(c.encode(), new RegExp(`column ${field} row ${row}: ${message}`))
  }
  // order, as encodeChunk checks it
  const c = new ChunkColumns()
  c.add(blocks[1])
  assert.throws(() => c.add(blocks[0]), /blocks of a chunk must ascend/)
  await assert.rejects(new ChunkColumns().encode(), /empty chunk/)
})

test('a string column appended in pieces encodes as encodeColumn of all its values', () => {
  const words = ['b', 'a', 'ccc', 'a b', '']
  // repeating values with runs and nulls: a dictionary; all distinct: the plain list
  const repeating = Array.from({ length: 3000 }, (_, i) =>
    i % 11 === 0 ? null : words[Math.floor(i / 3) % words.length],
  )
  const distinct = Array.from({ length: 3000 }, (_, i) => (i % 13 === 0 ? null : `v${i}`))
  for (const [values, e] of [
    [repeating, 'dict'],
    [distinct, 'plain'],
  ] as const) {
    for (const ascii of [true, false]) {
      const col = new StringColumn(true, true, ascii)
      for (let a = 0; a < values.length; a += 700) assert.equal(col.append(values.slice(a, a + 700)), -1)
      assert.equal(col.length, values.length)
      assert.deepEqual(col.values(), values)
      const want = encodeColumn('c', ascii ? 'safeAscii' : 'string', values, true, true, true)
      assert.equal(want.e, e)
      assert.deepEqual(col.encode(), want)
    }
  }
  // a value that is not a string: its index, and nothing of that piece appended
  const col = new StringColumn(true, true, true)
  col.append(['a', null])
  assert.equal(col.append(['b', 3, 'c']), 1)
  assert.deepEqual(col.values(), ['a', null])
})

test('address and u64 / i64 columns appended in pieces encode as encodeColumn of all their values', () => {
  const addresses = Array.from({ length: 2000 }, (_, i) => Array.from({ length: i % 4 }, (_, k) => (i * 7 + k) % 300))
  // a null first in a later piece (validity bytes begun there), and none at all
  const amounts = Array.from({ length: 2000 }, (_, i) => (i % 777 === 5 && i > 700 ? null : BigInt(i) * 10n ** 15n))
  const plain = amounts.map((x) => x ?? 1n)
  const signed = amounts.map((x) => (x === null ? null : -x))
  const cases: [() => ColumnBuilder, 'address' | 'u64' | 'i64', unknown[]][] = [
    [() => new AddressColumn(), 'address', addresses],
    [() => new AddressColumn(), 'address', [[70000], [1, 2]]],
    [() => new BigColumn('u64'), 'u64', amounts],
    [() => new BigColumn('u64'), 'u64', plain],
    [() => new BigColumn('i64'), 'i64', signed],
  ]
  for (const [make, type, values] of cases) {
    const col = make()
    for (let a = 0; a < values.length; a += 700) assert.equal(col.append(values.slice(a, a + 700)), -1)
    assert.deepEqual(col.values(), values)
    assert.deepEqual(col.encode(), encodeColumn('c', type, values, true, true, true), type)
  }
  // a bad value: its index, and the rows before it as they were
  const big = new BigColumn('u64')
  big.append([1n, null])
  assert.equal(big.append([2n, null, -1n]), 2)
  assert.deepEqual(big.values(), [1n, null])
  const addr = new AddressColumn()
  addr.append([[1]])
  assert.equal(addr.append([[2], [3, 1.5]]), 1)
  assert.deepEqual(addr.values(), [[1]])
})
