/**
 * DiskColdStore appends are whole or nothing, with compressible blocks of the fake node (the
 * follower's kind of blocks): the unsealed tail is judged full by the same estimate that splits it,
 * so merges never write a sealed chunk after unsealed ones; an append that throws published
 * nothing; an append retried after its blocks were stored is recognized.
 */
import assert from 'node:assert/strict'
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { DiskColdStore, estimateBlockBytes } from '../src/store/cold/disk-store.ts'
import { tempDir } from './support/cold/util.ts'
import { fakeNodeBlocks } from './support/fake-node-blocks.ts'

async function batchesOf(count: number, txPerBlock: number, batch: number): Promise<Block[][]> {
  const out: Block[][] = []
  for await (const b of fakeNodeBlocks({ count, txPerBlock, seed: 7, batch })) out.push(b)
  return out
}

const est = (blocks: Block[]) => blocks.reduce((n, b) => n + estimateBlockBytes(b), 0)

/** the store's chunks hold exactly `blocks`, in order; sealed ones all come before unsealed ones */
async function assertHolds(s: DiskColdStore, blocks: Block[]): Promise<void> {
  const entries = s.entries
  const firstUnsealed = entries.findIndex((e) => !e.sealed)
  if (firstUnsealed >= 0)
    assert.ok(
      entries.slice(firstUnsealed).every((e) => !e.sealed),
      'sealed after unsealed',
    )
  const got: [number, string][] = []
  for await (const c of s.chunks(0, Number.MAX_SAFE_INTEGER)) {
    const n = c.header('number')
    const h = c.header('hash')
    for (let i = 0; i < c.blockCount; i++) got.push([n[i], h[i]])
  }
  assert.deepEqual(
    got,
    blocks.map((b) => [b.header.number, b.header.hash]),
  )
  // no file but the listed ones
  assert.deepEqual(readdirSync(join(s.dir, 'chunks')).sort(), entries.map((e) => e.file).sort())
}

test('compressible blocks appended by batches: merges stay consistent, every append succeeds', async () => {
  const batches = await batchesOf(30, 300, 5)
  // A batch is below a chunk by the estimate, the tail's files plus a batch too (the files are
  // several times smaller than the estimate of their blocks), but two batches are above it: with
  // a tail [merged chunk, batch], the merge of the next two batches was split by the estimate and
  // its first part written sealed after the unsealed merged chunk.
  const targetBytes = Math.round(1.85 * est(batches[0]))
  const s = await DiskColdStore.open(tempDir(), { fsync: false, fanout: 2, targetBytes, graceMs: 0 })
  try {
    const all: Block[] = []
    for (const b of batches) {
      await s.append(b)
      all.push(...b)
      await assertHolds(s, all)
    }
    assert.ok(s.entries.filter((x) => x.sealed).length >= 2, 'chunks were sealed along the way')
    await s.compact()
    await assertHolds(s, all)
  } finally {
    await s.close()
  }
})

test('an append that fails publishes nothing; a retried append of stored blocks is recognized', async () => {
  const [a, b, c, d] = await batchesOf(40, 10, 10)
  const dir = tempDir()
  const s = await DiskColdStore.open(dir, { fsync: false, fanout: 2, targetBytes: 1 << 30, graceMs: 0 })
  try {
    await s.append(a)
    await assertHolds(s, a)
    // the tail chunk of `a` is lost: the merge of the next append cannot read it
    const [tail] = s.entries
    rmSync(join(dir, 'chunks', tail.file))
    await assert.rejects(s.append(b), /ENOENT|no such file/)
    assert.equal(s.lastBlock()!.number, a[a.length - 1].header.number, 'the failed append published nothing')
    assert.deepEqual(readdirSync(join(dir, 'chunks')), [], 'the failed append left no file behind')
  } finally {
    await s.close()
  }
  const s2 = await DiskColdStore.open(tempDir(), { fsync: false, fanout: 2, targetBytes: 1 << 30, graceMs: 0 })
  try {
    await s2.append(a)
    await s2.append(b)
    // the same append again (its answer was lost): nothing changes, no error
    const before = s2.entries
    await s2.append(b)
    assert.deepEqual(s2.entries, before)
    // a retry that overlaps: the stored part is skipped, the rest appended
    await s2.append([...b.slice(5), ...c])
    await s2.append([...c, ...d])
    await assertHolds(s2, [...a, ...b, ...c, ...d])
    // a stored number with another hash is refused, as is a number the store does not hold
    const other = { ...d[9], header: { ...d[9].header, hash: 'X'.repeat(44) } }
    await assert.rejects(s2.append([other]), /is stored with another hash/)
    const gap = { ...d[9], header: { ...d[9].header, number: d[9].header.number - 1 } }
    if (gap.header.number !== d[8].header.number)
      await assert.rejects(s2.append([gap]), /is not above the store's last block/)
  } finally {
    await s2.close()
  }
})
