// The chunk catalogue (src/store/cold/chunk-index/): segments + an append-only log, appends that
// write the same few records whatever the size, readers that follow a writer, a torn or damaged
// log end ignored, stores of earlier versions (MANIFEST.json) read and converted.
import assert from 'node:assert/strict'
import {
  appendFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { POINTER, RECORD, readChunkIndex, type ChunkEntry } from '../src/store/cold/chunk-index/chunk-index.ts'
import { writeManifest } from '../src/store/cold/manifest.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { tempDir } from './support/cold/util.ts'

async function numbers(s: DiskColdStore, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<number[]> {
  const out: number[] = []
  for await (const c of s.chunks(from, to)) out.push(...Array.from(c.header('number')))
  return out.filter((n) => n >= from) // a chunk may begin below `from`
}

const nums = (blocks: Block[]) => blocks.map((b) => b.header.number)
const CAT = { segmentEntries: 3, logBytes: 3000 }

function logOf(dir: string): string {
  const ptr = JSON.parse(readFileSync(join(dir, POINTER), 'utf8'))
  return join(dir, 'catalogue', ptr.body.log)
}

test('appends write a batch of a few records to the log; segments are cut; a reader follows', async () => {
  const blocks = generateBlocks({ seed: 5, count: 60, txPerBlock: 1 })
  const dir = tempDir()
  const w = await DiskColdStore.open(dir, { targetBlocks: 2, fanout: 2, fsync: false, graceMs: 0, catalogue: CAT })
  await w.append(blocks.slice(0, 2))
  const r = await DiskColdStore.open(dir, { readOnly: true })
  let pointerWrites = 0
  let stamp = statSync(join(dir, POINTER)).ino
  for (let i = 2; i < blocks.length; i++) {
    const log = logOf(dir)
    const before = statSync(log).size
    await w.append([blocks[i]])
    const ino = statSync(join(dir, POINTER)).ino
    if (ino !== stamp) {
      pointerWrites++
      stamp = ino
    } else {
      // the same log: it grew by one batch (header, new sealed entries, the tail), nothing else
      const grew = statSync(log).size - before
      assert.ok(grew > 0 && grew % RECORD === 0 && grew <= 6 * RECORD, `log grew by ${grew}`)
    }
    // the reader sees each append (a stat, then the new records)
    r.refresh()
    assert.deepEqual(r.lastBlock(), w.lastBlock())
  }
  assert.ok(pointerWrites >= 5 && pointerWrites < 40, `${pointerWrites} pointer writes`)
  const segs = readdirSync(join(dir, 'catalogue')).filter((f) => f.startsWith('seg-'))
  assert.ok(segs.length >= 8, `${segs.length} segments`)
  assert.deepEqual(await numbers(r), nums(blocks))
  assert.deepEqual(await numbers(r, blocks[17].header.number, blocks[40].header.number), nums(blocks.slice(17, 41)))
  assert.deepEqual(
    (await r.chainBefore(blocks[30].header.number, 5)).map((h) => h.number),
    nums(blocks.slice(25, 30)),
  )
  const entries = w.entries
  // logs replaced by rewrites are deleted once their grace period is over (0 here), while open
  const named = (d: string) => {
    const ptr = JSON.parse(readFileSync(join(d, POINTER), 'utf8')).body
    return [ptr.log, ...ptr.segments.map((s: { file: string }) => s.file)].sort()
  }
  assert.deepEqual(readdirSync(join(dir, 'catalogue')).sort(), named(dir))
  await w.close()
  await r.close()
  // reopened (writer and reader): the same list; only named catalogue files remain
  const again = await DiskColdStore.open(dir, { readOnly: true, verify: 'full' })
  assert.deepEqual(again.entries, entries)
  assert.deepEqual(await numbers(again), nums(blocks))
  await again.close()
  const w2 = await DiskColdStore.open(dir, { fsync: false, catalogue: CAT })
  assert.deepEqual(w2.entries, entries)
  assert.deepEqual(readdirSync(join(dir, 'catalogue')).sort(), named(dir))
  await w2.close()
})

test('a torn or damaged end of the log is ignored by readers and cut by the next writer', async () => {
  const blocks = generateBlocks({ seed: 6, count: 12, txPerBlock: 1 })
  const dir = tempDir()
  const w = await DiskColdStore.open(dir, { targetBlocks: 100, fanout: 100, fsync: false })
  for (const b of blocks.slice(0, 11)) await w.append([b])
  const entries11 = w.entries
  await w.close()
  const log = logOf(dir)
  const size = statSync(log).size
  // a batch cut by a crash mid-write: its first 300 bytes
  const w2 = await DiskColdStore.open(dir, { targetBlocks: 100, fanout: 100, fsync: false })
  await w2.append([blocks[11]])
  const entries12 = w2.entries
  await w2.close()
  const full = readFileSync(log)
  truncateSync(log, size + 300)
  const r = await DiskColdStore.open(dir, { readOnly: true })
  assert.deepEqual(r.entries, entries11, 'the torn batch is not applied')
  assert.deepEqual(await numbers(r), nums(blocks.slice(0, 11)))
  await r.close()
  // garbage after the last batch, then a damaged byte in the last batch
  writeFileSync(log, full)
  appendFileSync(log, Buffer.alloc(RECORD * 2, 7))
  const r2 = await DiskColdStore.open(dir, { readOnly: true })
  assert.deepEqual(r2.entries, entries12)
  await r2.close()
  const damaged = Buffer.from(full)
  damaged[full.length - 20] ^= 1
  writeFileSync(log, damaged)
  const r3 = await DiskColdStore.open(dir, { readOnly: true })
  assert.deepEqual(r3.entries, entries11, 'a batch failing its checksum is not applied')
  await r3.close()
  // a writer cuts the log after the last valid batch and goes on
  writeFileSync(log, Buffer.concat([full.subarray(0, size), Buffer.from('torn')]))
  const w3 = await DiskColdStore.open(dir, { targetBlocks: 100, fanout: 100, fsync: false })
  assert.equal(statSync(log).size, size)
  await w3.append([blocks[11]])
  await w3.close()
  const r4 = await DiskColdStore.open(dir, { readOnly: true, verify: 'full' })
  assert.deepEqual(await numbers(r4), nums(blocks))
  await r4.close()
})

test('a store of an earlier version (MANIFEST.json) is read as it is and converted by a writer', async () => {
  const blocks = generateBlocks({ seed: 7, count: 30, txPerBlock: 1 })
  const dir = tempDir()
  const w = await DiskColdStore.open(dir, { targetBlocks: 4, fsync: false })
  for (let i = 0; i < 26; i += 2) await w.append(blocks.slice(i, i + 2))
  const entries = [...w.entries]
  assert.ok(entries.some((e) => !e.sealed) && entries.some((e) => e.sealed))
  await w.close()
  // the layout earlier versions wrote: one manifest, no catalogue
  rmSync(join(dir, POINTER))
  rmSync(join(dir, 'catalogue'), { recursive: true })
  await writeManifest(dir, { format: 'solportal-cold', version: 1, generation: 40, chunks: entries }, false)

  const r = await DiskColdStore.open(dir, { readOnly: true })
  assert.deepEqual(r.entries, entries)
  assert.deepEqual(await numbers(r), nums(blocks.slice(0, 26)))
  // a writer converts it; the reader follows the conversion
  const w2 = await DiskColdStore.open(dir, { targetBlocks: 4, fsync: false })
  assert.ok(!existsSync(join(dir, 'MANIFEST.json')) && existsSync(join(dir, POINTER)))
  assert.deepEqual(w2.entries, entries)
  await w2.append(blocks.slice(26))
  // new chunk files are named after generations above the manifest's (names never repeat)
  for (const e of w2.entries)
    if (!entries.some((x) => x.file === e.file)) assert.ok(Number(/-g(\d+)-/.exec(e.file)![1]) > 40, e.file)
  r.refresh()
  assert.deepEqual(await numbers(r), nums(blocks))
  await w2.close()
  await r.close()
  assert.deepEqual((await readChunkIndex(dir))!.map((e) => e.lastBlock).at(-1), blocks.at(-1)!.header.number)
  const again = await DiskColdStore.open(dir, { readOnly: true, verify: 'full' })
  assert.deepEqual(await numbers(again), nums(blocks))
  await again.close()
})
