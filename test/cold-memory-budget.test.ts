// The cold store's memory budget against measured memory: a query streaming a range of many chunks
// keeps at most its cache budget of per-chunk structures (columns, parts, rows, filters, and the
// chunk objects with their parsed footers), and what the cache says it holds matches the heap it
// really retains. Memory is measured after full garbage collections (heap + array buffers).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import v8 from 'node:v8'
import vm from 'node:vm'
import type { Block } from '../src/model.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import type { BlockStore } from '../src/store/types.ts'
import { generateBlocks } from './support/cold/gen.ts'
import { everything } from './support/http/hostile.ts'
import { tempDir, writeStore } from './support/cold/util.ts'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void
const MiB = 1024 * 1024

/** heap + array buffers retained, after full collections */
function retained(): number {
  gc()
  gc()
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

/** every field of every row of [first, last]: the widest query; returns the JSON bytes rendered */
async function streamAll(cold: DiskColdStore): Promise<number> {
  const first = cold.firstBlock()!
  const last = cold.lastBlock()!.number
  const store = { chunks: (a: number, b: number) => cold.chunks(a, b) } as unknown as BlockStore
  const q = parseQuery(everything(first, last))
  let bytes = 0
  for await (const b of executeQuery(store, q, { to: last, finalizedOnly: true })) bytes += b.line.length
  return bytes
}

/** one block per chunk: many chunk objects */
async function manyChunks(blocks: Block[]): Promise<string> {
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 1 })
  return dir
}

test('streaming 240 chunks with a 1 MiB cache retains about the budget (chunk objects included)', async () => {
  const dir = await manyChunks(generateBlocks({ seed: 5, count: 240, txPerBlock: 12 }))
  // warm up (compiled code, the writers' shapes) on another store over the same files
  const warm = await DiskColdStore.open(dir, { readOnly: true, cacheBytes: MiB })
  await streamAll(warm)
  await warm.close()

  const before = retained()
  const cold = await DiskColdStore.open(dir, { readOnly: true, cacheBytes: MiB })
  assert.equal(cold.chunkCount, 240)
  const rendered = await streamAll(cold)
  const held = retained() - before
  const stats = cold.cacheStats()
  console.log(
    `240 chunks, ${rendered >> 10} KiB rendered: cache says ${stats.bytes >> 10} KiB in ${stats.entries} entries, ` +
      `measured ${held >> 10} KiB retained`,
  )
  assert.ok(stats.bytes <= MiB + 256 * 1024, `cache over its budget: ${stats.bytes}`)
  // measured ~1-3 MiB (compiled code and shared scratch besides the budget); the chunk objects
  // alone (a parsed footer each, ~25-50 KB) took ~9 MiB outside the budget when they were not in it
  assert.ok(held < 5 * MiB, `retained ${(held / MiB).toFixed(1)} MiB with a 1 MiB budget`)
  await cold.close()
})

test("with room for everything, the cache's byte count matches the memory it retains", async () => {
  const dir = tempDir()
  await writeStore(dir, generateBlocks({ seed: 9, count: 60, txPerBlock: 120 }), { targetBlocks: 6 })
  const warm = await DiskColdStore.open(dir, { readOnly: true, cacheBytes: 1024 * MiB })
  await streamAll(warm)
  await warm.close()

  const before = retained()
  const cold = await DiskColdStore.open(dir, { readOnly: true, cacheBytes: 1024 * MiB })
  await streamAll(cold)
  const held = retained() - before
  const said = cold.cacheStats().bytes
  console.log(`cache says ${(said / MiB).toFixed(1)} MiB, measured ${(held / MiB).toFixed(1)} MiB retained`)
  assert.ok(said > 2 * MiB, `${said}`)
  // estimates, not a census of the heap: within a factor of 1.6 either way
  assert.ok(held < 1.6 * said && held > said / 1.6, `accounted ${said}, retained ${held}`)
  await cold.close()
})
