/**
 * A full disk, for real: a tmpfs too small for the dataset. Writes are checked for their length
 * (src/store/write-all.ts): a chunk file cut short by the full disk is never published, the import
 * stops with one line and status 1, and the same import run again once there is room produces the
 * dataset of an uninterrupted import, byte for byte. The store layer the follower's cold writer
 * uses: an append that hits the full disk publishes nothing and leaves no file; appended again
 * after the disk grew, the store holds every block once. Skipped, with the reason, where a tmpfs
 * cannot be mounted (not root).
 */
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { isStorageError } from '../src/store/write-all.ts'
import { tempDir } from './support/cold/util.ts'
import { diskFullImport } from './support/disk-full.ts'
import { fakeNodeBlocks } from './support/fake-node-blocks.ts'
import { mountTmpfs, resizeTmpfs, unmountTmpfs } from './support/tmpfs.ts'

test('import into a full filesystem: one line, status 1; run again with room: the same dataset, byte for byte', async (t) => {
  const o = await diskFullImport({ blocks: 24, txsPerBlock: 300, chunkMb: 1 })
  if (o.skipped) return t.skip(o.skipped)
  assert.equal(o.full!.status, 1, o.full!.stderr)
  const lines = o.full!.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, o.full!.stderr)
  assert.match(lines[0], /^import failed: .*no space left on the device \(ENOSPC\)/)
  assert.equal(o.resumed!.status, 0, o.resumed!.stderr)
  assert.match(o.resumed!.stderr, /skipped \d+ already present/)
  assert.equal(o.difference, null)
  assert.ok(o.chunks! >= 3, `${o.chunks} chunks`)
})

test('cold store appends on a full filesystem: nothing published, no file left; after it grows, every block once', async (t) => {
  const batches: Awaited<ReturnType<typeof collect>> = await collect()
  const mnt = join(tempDir(), 'mnt')
  const why = mountTmpfs(mnt, 2 * 1024 * 1024)
  if (why) return t.skip(`cannot mount a tmpfs to fill (${why})`)
  try {
    const s = await DiskColdStore.open(mnt, { fsync: true, targetBytes: 8 * 1024 * 1024, graceMs: 0 })
    let failedAt = -1
    const stored: number[] = []
    for (let i = 0; i < batches.length; i++) {
      const last = s.lastBlock()
      try {
        await s.append(batches[i])
        stored.push(...batches[i].map((b) => b.header.number))
      } catch (e) {
        assert.ok(isStorageError(e), String(e))
        assert.match((e as Error).message, /no space left on the device \(ENOSPC\)/)
        assert.deepEqual(s.lastBlock(), last, 'a failed append published nothing')
        const listed = new Set(s.entries.map((x) => x.file))
        assert.deepEqual(
          readdirSync(join(mnt, 'chunks')).filter((f) => !listed.has(f)),
          [],
        )
        failedAt = i
        break
      }
    }
    assert.ok(failedAt > 0, 'the filesystem filled up')
    resizeTmpfs(mnt, 64 * 1024 * 1024)
    // the caller retries from the failed batch (with the batch before it again: recognized)
    for (let i = failedAt - 1; i < batches.length; i++) await s.append(batches[i])
    await s.close()
    const again = await DiskColdStore.open(mnt, { verify: 'full' })
    try {
      const got: number[] = []
      for await (const c of again.chunks(0, Number.MAX_SAFE_INTEGER)) got.push(...Array.from(c.header('number')))
      assert.deepEqual(
        got,
        batches.flat().map((b) => b.header.number),
      )
    } finally {
      await again.close()
    }
  } finally {
    unmountTmpfs(mnt)
  }
})

async function collect() {
  const out = []
  for await (const b of fakeNodeBlocks({ count: 30, txPerBlock: 300, seed: 7, batch: 5 })) out.push(b)
  return out
}
