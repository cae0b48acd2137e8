/**
 * The CAR part of `npm run bench -- import`: the same generated blocks (src/ingest/generate.ts,
 * IMPORT_CAR_BLOCKS blocks of ~IMPORT_TXS transactions, default 40 x 1500) imported from an Old
 * Faithful CAR file (written by test/support/car/writer.ts: wire-format transactions, zstd
 * protobuf metadata and rewards, 1 MiB DataFrames) and from archive lines (plain JSON lines),
 * `--workers 1` (everything in this thread; zstd and brotli on the thread pool), the two
 * alternating for IMPORT_CAR_ROUNDS rounds (default 3): blocks per CPU-second of the process
 * (all threads) of each, and their ratio; both must store the same records (the chunk files'
 * sha256 are compared; the first block's parent hash is unknown from a lone CAR file, so both
 * archives start at the block after it). Then the CPU of reading the CAR file alone (the reading
 * thread's part: the serial limit with worker threads).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { runImport } from '../src/ingest/import/index.ts'
import { readTextLines } from '../src/ingest/archive.ts'
import { Chain, carBlocks } from '../src/ingest/car/blocks.ts'
import { writeArchive } from '../src/ingest/generate.ts'
import { encodeRewards, encodeTransactionStatusMeta } from '../src/ingest/solana-storage/index.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine } from '../src/rpc/types.ts'
import { readChunkIndex } from '../src/store/cold/chunk-index/chunk-index.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { writeCar } from '../test/support/car/writer.ts'

const BLOCKS = Number(process.env.IMPORT_CAR_BLOCKS ?? 40)
const TXS = Number(process.env.IMPORT_TXS ?? 1500)
const ROUNDS = Number(process.env.IMPORT_CAR_ROUNDS ?? 3)

const cpuNow = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })

export async function carSection(work: string, log: (s: string) => void): Promise<string> {
  const dir = join(work, 'car')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  log(`CAR vs archive lines: generating ${BLOCKS + 1} blocks of ~${TXS} transactions`)
  const gz = join(dir, 'gen.jsonl.gz')
  await writeArchive(gz, { blocks: BLOCKS + 1, txsPerBlock: TXS, seed: 7 })
  const texts: string[] = []
  for await (const l of readTextLines(gz)) if (l.trim()) texts.push(l)
  // both start after the first block: its hash is the CAR's first block's parent (the dataset's last block)
  const lines = texts.map((t) => parseJsonExact(t) as ArchiveLine)
  const jsonl = join(dir, 'blocks.jsonl')
  writeFileSync(jsonl, texts.slice(1).join('\n') + '\n')
  const car = join(dir, 'blocks.car')
  const bytes = writeCar(lines.slice(1), {
    meta: (m) => (m ? encodeTransactionStatusMeta(m) : null),
    rewards: (r) => encodeRewards(r),
  })
  writeFileSync(car, bytes)
  const first = join(dir, 'first.jsonl')
  writeFileSync(first, texts[0] + '\n')
  const txs = lines.slice(1).reduce((n, l) => n + (l.block.transactions?.length ?? 0), 0)
  // archives are mostly kept gzipped (`gen`, `dump | gzip`): the same lines gzipped as well
  const jsonlGz = join(dir, 'blocks.jsonl.gz')
  const gzBytes = gzipSync(texts.slice(1).join('\n') + '\n')
  writeFileSync(jsonlGz, gzBytes)
  const inputs = [
    { name: 'CAR', path: car, size: bytes.length },
    { name: 'archive lines', path: jsonl, size: texts.slice(1).reduce((n, t) => n + t.length + 1, 0) },
    { name: 'archive lines, gzip', path: jsonlGz, size: gzBytes.length },
  ]
  const cpu = new Map<string, number[]>(inputs.map((i) => [i.name, []]))
  const sums = new Map<string, string>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const i of round % 2 ? inputs.slice().reverse() : inputs) {
      const ds = join(dir, 'ds')
      rmSync(ds, { recursive: true, force: true })
      await runImport(ds, [first], { progress: 'none', workers: 1 })
      const c = cpuNow()
      const r = await runImport(ds, [i.path], { progress: 'none', workers: 1 })
      const used = cpuNow() - c
      if (r.imported !== BLOCKS) throw new Error(`import bench: ${i.name} imported ${r.imported} blocks`)
      cpu.get(i.name)!.push(used)
      sums.set(i.name, await recordsDigest(ds))
      log(`CAR vs archive lines, round ${round + 1}, ${i.name}: CPU ${used.toFixed(2)} s`)
    }
  }
  // what stays in the reading thread with worker threads: reading, assembling and bundling the blocks
  const reads: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const c = cpuNow()
    let n = 0
    for await (const b of carBlocks(car, new Chain())) n += b.bundle.length > 0 ? 1 : 0
    reads.push(cpuNow() - c)
    if (n !== BLOCKS) throw new Error(`import bench: read ${n} blocks`)
  }
  if (sums.get('CAR') !== sums.get('archive lines') || sums.get('CAR') !== sums.get('archive lines, gzip'))
    throw new Error('import bench: the CAR and the archive lines stored different records')
  rmSync(dir, { recursive: true, force: true })
  const median = (a: number[]) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)]
  const rate = (name: string) => BLOCKS / median(cpu.get(name)!)
  const rows = inputs.map(
    (i) =>
      `| ${i.name} | ${(i.size / 2 ** 20).toFixed(1)} | ${cpu
        .get(i.name)!
        .map((x) => x.toFixed(2))
        .join(', ')} | ${fmt(rate(i.name), 1)} |`,
  )
  return [
    `### import from an Old Faithful CAR file and from archive lines (${BLOCKS} generated blocks, ${fmt(txs / BLOCKS)} transactions per block, --workers 1)`,
    '',
    '| input | MiB | CPU s per run (all threads) | blocks per CPU-second (median) |',
    '|---|---|---|---|',
    ...rows,
    '',
    `CAR / archive lines: ${(rate('CAR') / rate('archive lines')).toFixed(2)}x the blocks per CPU-second ` +
      `(${(rate('CAR') / rate('archive lines, gzip')).toFixed(2)}x those of the gzipped lines); all stored the same records (sha256 of every chunk's blocks read back). ` +
      `The CAR reading thread's part (read, assemble, bundle; what does not spread over workers): ` +
      `${fmt(BLOCKS / median(reads), 1)} blocks per CPU-second (${reads.map((x) => x.toFixed(2)).join(', ')} s).`,
  ].join('\n')
}

/**
 * sha256 of every block the dataset's chunks hold, read back in order: the records, whatever the
 * chunk boundaries (an import cuts its chunks by an estimate from the input's bytes, so a CAR and
 * archive lines of the same blocks may split them differently once they take several chunks)
 */
async function recordsDigest(ds: string): Promise<string> {
  const h = createHash('sha256')
  const dir = coldDir(ds)
  for (const e of (await readChunkIndex(dir))!)
    for (const b of readChunkBlocks(join(dir, 'chunks', e.file)))
      h.update(JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))
  return h.digest('hex')
}
