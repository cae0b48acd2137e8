// `serve --archive`: the archive is imported into a temporary dataset directory and served from
// there. A `solportal serve` process whose V8 heap is capped below the archive's decompressed size
// loads and serves it (holding the normalized blocks in memory needs several times that size and
// runs out of heap), logs progress while it loads, answers as the in-memory store of the same
// blocks does, and removes its temporary directory when it stops.
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { readArchive, type ArchiveLine } from '../src/ingest/archive.ts'
import { loadTemplates, writeArchive } from '../src/ingest/generate.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'
import { postJson, request } from './support/http/client.ts'
import { everything } from './support/http/hostile.ts'
import { startServe } from './support/http/load.ts'
import { tempDir } from './support/cold/util.ts'

/**
 * The heap of the serving process: importing one 1,500-transaction block (5.6 MB of JSON, its
 * parse, records and columns) needs ~55-60 MiB of heap in one thread, whatever the archive's
 * size; 80 leaves room for GC timing on a loaded box (64 ran out once in ~20 runs), and the
 * archive is larger than it
 */
const HEAP_MB = 80
/** 18 blocks: ~91 MB of JSON (16 gave ~81 MB once the generator's version 1 transactions, small ones, came in) */
const BLOCKS = 18

async function* firstLines(file: string, n: number): AsyncIterable<ArchiveLine> {
  let i = 0
  for await (const l of readArchive(file)) {
    if (i++ === n) return
    yield l
  }
}

test('serve --archive loads a large archive with a small heap and answers as in memory', async () => {
  const work = tempDir()
  const file = join(work, 'gen.jsonl.gz')
  const stats = await writeArchive(file, {
    blocks: BLOCKS,
    seed: 1,
    fromSlot: 310_000_000,
    txsPerBlock: 1500,
    voteShare: 0.7,
    gzipLevel: 1,
    gzipThreads: 1,
    templates: loadTemplates(),
  })
  assert.ok(stats.bytes > HEAP_MB * 1024 * 1024, `the archive's JSON (${stats.bytes} bytes) exceeds the heap limit`)

  const tmp = join(work, 'tmp')
  mkdirSync(tmp)
  const env = { NODE_OPTIONS: process.env.NODE_OPTIONS, TMPDIR: process.env.TMPDIR }
  process.env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --max-old-space-size=${HEAP_MB}`.trim()
  process.env.TMPDIR = tmp
  let served
  try {
    served = await startServe(['--archive', file])
  } finally {
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
  // in memory: the first blocks only (the whole archive would take hundreds of MB here)
  const { store } = await loadStaticStore(firstLines(file, 3))
  const mem = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'solana-mainnet', aliases: [], store, realTime: false }]),
  })
  const memUrl = await mem.listen(0, '127.0.0.1')
  try {
    const out = served.output()
    assert.match(out, /importing 1 archive file\(s\) into the temporary dataset directory/)
    assert.match(out, new RegExp(`archive import: \\[#+\\] 100\\.0% ${BLOCKS} blocks`))
    assert.match(out, new RegExp(`imported ${BLOCKS} blocks \\(310000000\\.\\.\\d+, `))
    const dirs = readdirSync(tmp).filter((f) => f.startsWith('solportal-archive-'))
    assert.equal(dirs.length, 1)

    const head = JSON.parse((await request(`${served.url}/datasets/solana-mainnet/head`)).text)
    assert.equal(head.number, stats.lastSlot)
    const meta = JSON.parse((await request(`${served.url}/datasets/solana-mainnet/metadata`)).text)
    assert.equal(meta.start_block, stats.firstSlot)

    const third = store.head()!.number
    const q = everything(stats.firstSlot, third)
    const got = await postJson(`${served.url}/datasets/solana-mainnet/stream`, q)
    const want = await postJson(`${memUrl}/datasets/solana-mainnet/stream`, q)
    assert.equal(got.status, 200)
    assert.equal(want.status, 200)
    assert.equal(got.text.split('\n').filter(Boolean).length, 3)
    assert.equal(got.text, want.text)
    // every block of the archive is served
    const all = await postJson(`${served.url}/datasets/solana-mainnet/stream`, {
      type: 'solana',
      fromBlock: stats.firstSlot,
      toBlock: stats.lastSlot,
      includeAllBlocks: true,
      fields: { block: { number: true } },
    })
    assert.equal(all.text.split('\n').filter(Boolean).length, BLOCKS)

    const status = readFileSync(`/proc/${served.child.pid}/status`, 'utf8')
    const peak = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
    process.stderr.write(
      `serve --archive: ${stats.bytes} bytes of JSON, peak RSS ${peak} bytes with a ${HEAP_MB} MB heap\n`,
    )
  } finally {
    await mem.close()
    assert.equal(await served.stop(), 0)
  }
  assert.deepEqual(
    readdirSync(tmp).filter((f) => f.startsWith('solportal-archive-')),
    [],
    'the temporary dataset directory is removed',
  )
})
