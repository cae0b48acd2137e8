/**
 * The chunk catalogue at a year of mainnet (`npm run bench -- catalogue` → bench/results/catalogue.md).
 *
 * A year of slots (~78.8 M at 400 ms, ~5% skipped) in chunks of ~21 blocks (what 32 MiB chunks of
 * mainnet blocks hold) is ~3.8 M chunks. The catalogue of such a year is built from metadata only
 * (no chunk files: entries are published in batches without fsync), then measured:
 *
 * - open: a reader opening it, in a fresh process (time and RSS), then after a lookup in every
 *   segment (their block indexes loaded);
 * - append: one chunk published (fsync on, as in production; and without fsync, the CPU part),
 *   with 10 chunks and with the whole year, median of many;
 * - find: the chunks of a random 1,000-block range (binary searches + reading their entries), the
 *   first time a segment is touched and warm;
 * - for comparison, the former MANIFEST.json rewrite per append, at 10 and 100,000 chunks (its
 *   cost is linear: the year's would be ~38x the 100,000 figure).
 *
 * Env: CATALOGUE_CHUNKS (default 3,800,000).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ChunkIndex, chunkFileName, type ChunkEntry } from '../src/store/cold/chunk-index/chunk-index.ts'
import { writeManifest } from '../src/store/cold/manifest.ts'

const WORK = join(fileURLToPath(new URL('.', import.meta.url)), 'tmp', 'catalogue')
const CHUNKS = Number(process.env.CATALOGUE_CHUNKS ?? 3_800_000)
const FIRST_SLOT = 250_000_000
const SHA = 'ab'.repeat(32)

/** deterministic chunk entries: ~21 produced blocks over ~22 slots each */
function* entries(n: number, startGen = 1): Generator<ChunkEntry> {
  let slot = FIRST_SLOT
  for (let k = 0; k < n; k++) {
    const span = 21 + (k % 3) // slots covered
    const first = slot
    const last = slot + span - 1
    yield {
      file: chunkFileName(first, last, startGen + Math.floor(k / 10_000), k % 10_000),
      firstBlock: first,
      lastBlock: last,
      blockCount: 20 + (k % 2),
      lastHash: `${'H'.repeat(30)}${String(k).padStart(14, '0')}`,
      bytes: 33_000_000 + (k % 1000),
      sha256: SHA,
      sealed: true,
      level: 0,
    }
    slot = last + 1 + (k % 5 === 0 ? 1 : 0)
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const mib = (b: number) => `${fmt(Math.max(0, b) / 2 ** 20, 1)} MiB`

async function build(dir: string, n: number): Promise<number> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const t0 = performance.now()
  const cat = (await ChunkIndex.open(dir, { fsync: false }))!
  let batch: ChunkEntry[] = []
  for (const e of entries(n)) {
    batch.push(e)
    if (batch.length === 4096) {
      await cat.publish(cat.snapshot().count, batch)
      batch = []
      // logs replaced by a rewrite (the store deletes them after a grace period)
      for (const f of cat.dropped.splice(0)) rmSync(join(dir, f))
    }
  }
  if (batch.length) await cat.publish(cat.snapshot().count, batch)
  for (const f of cat.dropped.splice(0)) rmSync(join(dir, f))
  cat.close()
  return performance.now() - t0
}

/**
 * ms of publishing one more chunk into each catalogue of `dirs`, `runs` times, interleaved (so that
 * both see the same disk conditions): median and mean of each
 */
async function appendCosts(dirs: string[], fsync: boolean, runs: number): Promise<{ median: number; mean: number }[]> {
  const cats = await Promise.all(dirs.map(async (d) => (await ChunkIndex.open(d, { fsync }))!))
  const times = cats.map(() => [] as number[])
  const slots = cats.map((c) => c.snapshot().last()!.lastBlock + 1)
  for (let k = 0; k < runs; k++) {
    for (let c = 0; c < cats.length; c++) {
      const cat = cats[c]
      const last = cat.snapshot().last()!
      const slot = slots[c]
      const e: ChunkEntry = {
        ...last,
        file: chunkFileName(slot, slot + 20, 9_000_000 + k, fsync ? 1 : 0),
        firstBlock: slot,
        lastBlock: slot + 20,
      }
      const t0 = performance.now()
      await cat.publish(cat.snapshot().count, [e])
      times[c].push(performance.now() - t0)
      slots[c] += 22
      for (const f of cat.dropped.splice(0)) rmSync(join(dirs[c], f))
    }
  }
  for (const c of cats) c.close()
  return times.map((t) => ({ median: median(t), mean: t.reduce((a, b) => a + b, 0) / t.length }))
}

/** in a fresh process: open, memory, lookups */
interface OpenFigures {
  openMs: number
  rssOpen: number
  heapOpen: number
  count: number
  firstFindMs: number
  warmFindMs: number
  chunksPerRange: number
  rssTouched: number
  heapTouched: number
}

/** JS heap + array buffers (the typed arrays of the indexes live outside the heap) */
function heap(): number {
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

async function openChild(dir: string): Promise<OpenFigures> {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const rss0 = process.memoryUsage().rss
  const heap0 = heap()
  const t0 = performance.now()
  const cat = (await ChunkIndex.open(dir, { readOnly: true }))!
  const openMs = performance.now() - t0
  gc?.()
  const rssOpen = process.memoryUsage().rss - rss0
  const heapOpen = heap() - heap0
  const snap = cat.snapshot()
  const lo = snap.firstBlockOf(0)
  const hi = snap.last()!.lastBlock
  // the chunks of a 1,000-block range: entries from the first one ending at or after `from`
  const find = (from: number) => {
    const to = from + 999
    let n = 0
    for (let i = snap.atOrAfter(from); i < snap.count && snap.firstBlockOf(i) <= to; i++) {
      snap.entry(i) // what a query reads of each: the file name, block count
      n++
    }
    return n
  }
  let x = 12345
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * Math.max(0, hi - lo - 1000) + lo
  const first: number[] = []
  let chunks = 0
  // one range per segment-sized stride: every segment's index gets loaded once
  const stride = Math.max(1, Math.floor((hi - lo) / 200))
  for (let from = lo; from <= Math.max(lo, hi - 1000); from += stride) {
    const t = performance.now()
    chunks += find(from)
    first.push(performance.now() - t)
  }
  const warm: number[] = []
  for (let k = 0; k < 2000; k++) {
    const t = performance.now()
    find(Math.floor(rnd()))
    warm.push(performance.now() - t)
  }
  gc?.()
  return {
    openMs,
    rssOpen,
    heapOpen,
    count: snap.count,
    firstFindMs: median(first),
    warmFindMs: median(warm),
    chunksPerRange: chunks / first.length,
    rssTouched: process.memoryUsage().rss - rss0,
    heapTouched: heap() - heap0,
  }
}

/** ms of one MANIFEST.json rewrite (the former catalogue) holding n entries */
async function manifestCost(n: number): Promise<number> {
  const dir = join(WORK, `manifest-${n}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const chunks = [...entries(n)]
  const times: number[] = []
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now()
    await writeManifest(dir, { format: 'solportal-cold', version: 1, generation: k, chunks })
    times.push(performance.now() - t0)
  }
  return median(times)
}

function dirBytes(dir: string): number {
  let n = 0
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    const s = statSync(join(dir, f))
    if (s.isFile()) n += s.size
  }
  return n
}

function measureInChild(dir: string): OpenFigures {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), 'open', dir],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  )
  return JSON.parse(out.trim().split('\n').at(-1)!) as OpenFigures
}

export async function run(): Promise<string> {
  const log = (s: string) => process.stderr.write(`catalogue: ${s}\n`)
  mkdirSync(WORK, { recursive: true })
  const small = join(WORK, 'small')
  const year = join(WORK, 'year')
  await build(small, 10)
  log(`building a catalogue of ${fmt(CHUNKS)} chunks`)
  const buildMs = await build(year, CHUNKS)
  const yearBytes = dirBytes(year)
  log(`built in ${fmt(buildMs / 1000, 1)} s, ${mib(yearBytes)}`)
  const smallOpen = measureInChild(small)
  const yearOpen = measureInChild(year)
  log('appends')
  execFileSync('sync') // the build's dirty pages would otherwise be flushed by the first fsyncs
  const [syncSmall, syncYear] = await appendCosts([small, year], true, 300)
  const [cpuSmall, cpuYear] = await appendCosts([small, year], false, 5000)
  log('former manifest')
  const m10 = await manifestCost(10)
  const m100k = await manifestCost(100_000)
  rmSync(join(WORK, 'manifest-100000'), { recursive: true, force: true })

  const md = [
    '## Chunk catalogue at a year of mainnet (`npm run bench -- catalogue`)',
    '',
    `${fmt(yearOpen.count)} chunk entries (a year of ~78.8 M slots in chunks of ~21 blocks, as 32 MiB chunks of mainnet blocks hold), built from metadata only in ${fmt(buildMs / 1000, 1)} s; the catalogue takes ${mib(yearBytes)} on disk (176 bytes per chunk + 16 of index), in ${fmt(Math.ceil(yearOpen.count / 4096))} segment files. Appends are measured alternately on both catalogues (same disk conditions; the fsync figures depend on what else the disk is doing).`,
    '',
    '| | 10 chunks | a year |',
    '|---|---|---|',
    `| open (reader, fresh process) | ${fmt(smallOpen.openMs, 2)} ms | ${fmt(yearOpen.openMs, 2)} ms |`,
    `| memory after open (RSS / heap + array buffers) | ${mib(smallOpen.rssOpen)} / ${mib(smallOpen.heapOpen)} | ${mib(yearOpen.rssOpen)} / ${mib(yearOpen.heapOpen)} |`,
    `| memory with every segment's index loaded (RSS / heap + array buffers) | ${mib(smallOpen.rssTouched)} / ${mib(smallOpen.heapTouched)} | ${mib(yearOpen.rssTouched)} / ${mib(yearOpen.heapTouched)} |`,
    `| append one chunk (write + fsync of one log batch), median / mean of 300 | ${fmt(syncSmall.median, 3)} / ${fmt(syncSmall.mean, 3)} ms | ${fmt(syncYear.median, 3)} / ${fmt(syncYear.mean, 3)} ms |`,
    `| append one chunk, no fsync (the CPU part), median / mean of 5,000 (segment cuts included) | ${fmt(cpuSmall.median, 3)} / ${fmt(cpuSmall.mean, 3)} ms | ${fmt(cpuYear.median, 3)} / ${fmt(cpuYear.mean, 3)} ms |`,
    `| chunks of a 1,000-block range, first touch of its segment | ${fmt(smallOpen.firstFindMs, 3)} ms | ${fmt(yearOpen.firstFindMs, 3)} ms (~${fmt(yearOpen.chunksPerRange)} chunks) |`,
    `| chunks of a 1,000-block range, warm | ${fmt(smallOpen.warmFindMs, 3)} ms | ${fmt(yearOpen.warmFindMs, 3)} ms |`,
    '',
    `The former catalogue (one MANIFEST.json rewritten per append): ${fmt(m10, 2)} ms at 10 chunks, ${fmt(m100k)} ms at 100,000 chunks (linear in the count: ~${fmt((m100k * CHUNKS) / 100_000 / 1000, 0)} s per append at a year).`,
    '',
    "Appends write one batch (a header record, the new entry, the tail) at the end of the log, so their cost does not depend on the count; every 4,096 sealed chunks a segment file is written (in the means above) and the log is rewritten when it exceeds twice what it describes. Open reads the pointer and the log only; a segment's block index (two Float64Arrays) is read the first time a lookup lands in it, and entries are read one at a time (176 bytes) when a chunk is used.",
  ].join('\n')
  writeFileSync(
    join(fileURLToPath(new URL('.', import.meta.url)), 'results', 'catalogue.md'),
    `# Chunk catalogue\n\n${new Date().toISOString()} · node ${process.version}\n\n${md.split('\n').slice(1).join('\n')}\n`,
  )
  return md
}

if (process.argv[2] === 'open' && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await openChild(process.argv[3])))
}
