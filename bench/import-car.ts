/**
 * The CAR part of `npm run bench -- import`: the same generated blocks (src/ingest/generate.ts,
 * IMPORT_CAR_BLOCKS blocks of ~IMPORT_TXS transactions, default 40 x 1500) imported from an Old
 * Faithful CAR file (written by test/support/car/writer.ts: wire-format transactions, zstd
 * protobuf metadata and rewards, 1 MiB DataFrames), from archive lines (plain JSON lines) and from
 * the same lines gzipped, `--workers 1` (everything in one thread; zstd and brotli on the thread
 * pool). Each import runs in a process of its own, after IMPORT_CAR_WARM (default 1) imports of
 * the same input in that process (bench/import/car-child.ts), as a user's import runs one kind of
 * input per process (in one process importing them in turn, the shared normalizer and chunk
 * builders would see the objects of both). The inputs alternate for
 * IMPORT_CAR_ROUNDS rounds (default 3): blocks per CPU-second of the import's process (all
 * threads), median, and their ratios; all must store the same records (the records read back from
 * the chunks are compared; the first block's parent hash is unknown from a lone CAR file, so every
 * import starts at the block after it). Then the CPU of reading the CAR file alone (the reading
 * thread's part: the serial limit with worker threads). Last, the CAR path's floor (bench/import/car-floor.ts).
 */
import { fork } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
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
import type { Floor } from './import/car-floor.ts'

const BLOCKS = Number(process.env.IMPORT_CAR_BLOCKS ?? 40)
const TXS = Number(process.env.IMPORT_TXS ?? 1500)
const ROUNDS = Number(process.env.IMPORT_CAR_ROUNDS ?? 3)
/** imports of the same input before the measured one, in its process (compiling, then steady state) */
const WARM = Number(process.env.IMPORT_CAR_WARM ?? 1)

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
      const r = await importInChild(ds, first, i.path)
      if (r.imported !== BLOCKS) throw new Error(`import bench: ${i.name} imported ${r.imported} blocks`)
      cpu.get(i.name)!.push(r.cpu)
      sums.set(i.name, await recordsDigest(ds))
      log(`CAR vs archive lines, round ${round + 1}, ${i.name}: CPU ${r.cpu.toFixed(2)} s`)
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
  const floor = await floorInChild(car, jsonl)
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
    '',
    `The CAR path's floor, CPU ms per block (median of ${ROUNDS} rounds, a process of its own, ` +
      `bench/import/car-floor.ts), against the JSON parse of the same blocks' lines (**${floor.json.toFixed(1)}**) ` +
      `that it replaces. The steps no CAR decoder can skip while the records hold base58 text: zstd of the kept ` +
      `transactions' metadata ${floor.zstd.toFixed(1)} + base58 of their signatures and of the values not seen in ` +
      `an earlier block ${floor.base58.toFixed(1)} + UTF-8 of their log messages ${floor.utf8.toFixed(1)} = ` +
      `**${(floor.zstd + floor.base58 + floor.utf8).toFixed(1)}**. With the \`getBlock\`-shaped objects the ` +
      `normalizer takes, built as fast as V8's JSON.parse builds them (the parse of the kept transactions' JSON ` +
      `alone, strings included, ${floor.keptObjects.toFixed(1)}): zstd + base58 + that = ` +
      `**${(floor.zstd + floor.base58 + floor.keptObjects).toFixed(1)}**.`,
  ].join('\n')
}

/** the CAR path's floor (bench/import/car-floor.ts), measured in a process of its own */
function floorInChild(car: string, jsonl: string): Promise<Floor> {
  return childAnswer<Floor>('car-floor.ts', [car, jsonl, String(ROUNDS)], "the floor's process")
}

/**
 * An import of `input` onto a dataset holding only the block before it, in a process of its own
 * (bench/import/car-child.ts: WARM imports of it first, then the measured one): the process's CPU
 * of the measured import (all threads) and the blocks it imported; `ds` then holds its dataset.
 */
function importInChild(ds: string, first: string, input: string): Promise<{ cpu: number; imported: number }> {
  return childAnswer('car-child.ts', [ds, first, input, String(WARM)], `the import of ${input}`)
}

/**
 * The message that bench/import/`script` (run with `args` in a process of its own) sends before
 * it exits with code 0; rejected, naming `what`, when it exits otherwise or sends none.
 */
function childAnswer<T>(script: string, args: string[], what: string): Promise<T> {
  const child = fork(join(import.meta.dirname, 'import', script), args, {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    let answer: T | null = null
    child.on('message', (m: T) => (answer = m))
    child.on('error', reject)
    child.on('exit', (code, signal) =>
      answer !== null && code === 0
        ? resolve(answer)
        : reject(new Error(`import bench: ${what} exited (${signal ?? `code ${code}`})`)),
    )
  })
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
