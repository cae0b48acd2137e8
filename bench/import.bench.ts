/**
 * `solportal import` throughput on generated mainnet-shaped blocks (default 300 blocks of ~1,500
 * transactions): in-process (`--workers 1`) and worker threads (`--workers N`, N = available
 * parallelism), alternating runs on the same archive, with the CPU-seconds per block of every run
 * (all threads) and the load average at start and end. Checks that both modes wrote the same
 * chunk files (sha256 in the catalogue).
 *
 * Then the CPU cost per block of each stage, measured in this thread on the archive's first
 * blocks (one chunk's worth): reading + gunzip + line splitting, exact JSON parse, normalization,
 * and chunk encoding (columns in JS, zstd frames in this thread and brotli ones on the thread
 * pool, as `--workers 1` encodes: process CPU), from which
 * the projection per core: the throughput when every stage had its cores, the serial limit (the
 * main thread reads every line and cuts the batches; the workers parse batches side by side), and
 * the projection for 1, 2, 4 and 8 idle cores (the measured CPU per block spread over them, capped
 * by the serial limit).
 *
 * Then encoding alone, the builds alternating (IMPORT_ENCODE_ROUNDS rounds, default 6) on the same
 * normalized blocks (the first chunk's): the median CPU per block of each build and the bytes it
 * wrote, a steadier before/after of the encoding stage than the single stage runs on a loaded box.
 *
 * First (import-car.ts): the same generated blocks imported from an Old Faithful CAR file and from
 * archive lines, blocks per CPU-second of each (IMPORT_CAR_ONLY=1: only that part).
 *
 * Env: IMPORT_BLOCKS (default 300), IMPORT_TXS (mean transactions per block, default 1500),
 * IMPORT_ROUNDS (default 2), IMPORT_WORKERS (default the available parallelism), IMPORT_BASE (a
 * directory holding an earlier build of this repository, e.g. `git archive COMMIT | tar -x -C
 * DIR` with `node_modules` linked: its import runs too, alternating with this one in every round,
 * and its stage costs are measured the same way, for a before/after in the same run).
 *
 * Last, `import --rpc` from a local fake node against the archive import of the same blocks
 * (`rpcRows`; IMPORT_RPC_BLOCKS, IMPORT_RPC_ROUNDS; IMPORT_RPC_ONLY=1 runs only that section).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fork } from 'node:child_process'
import { gzipSync } from 'node:zlib'
import { runImport } from '../src/ingest/import/index.ts'
import { RpcInput } from '../src/cli/commands/import-rpc.ts'
import { readTextLines, toArchiveLine } from '../src/ingest/archive.ts'
import { GEN_VERSION, writeArchive, type GenStats } from '../src/ingest/generate.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { estimateBlockBytes } from '../src/store/cold/disk-store.ts'
import { readChunkIndex } from '../src/store/cold/chunk-index/chunk-index.ts'
import { encodeChunk } from '../src/store/cold/chunk-file.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { carSection } from './import-car.ts'

const WORK = join(fileURLToPath(new URL('.', import.meta.url)), 'tmp', 'import')
const BLOCKS = Number(process.env.IMPORT_BLOCKS ?? 300)
const TXS = Number(process.env.IMPORT_TXS ?? 1500)
const ROUNDS = Number(process.env.IMPORT_ROUNDS ?? 2)
const WORKERS = Number(process.env.IMPORT_WORKERS ?? availableParallelism())
const ENCODE_ROUNDS = Number(process.env.IMPORT_ENCODE_ROUNDS ?? 6)

/** the store's default chunk size (src/store/cold/disk-store.ts) */
const TARGET_BYTES = 32 * 1024 * 1024

const log = (s: string) => process.stderr.write(`import bench: ${s}\n`)
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
/** CPU seconds of the whole process (every thread) */
const cpuNow = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')

interface Stages {
  blocks: number
  read: number
  parse: number
  normalize: number
  encode: number
}

type EncodeChunk = (blocks: readonly Block[]) => Promise<unknown>
type RunImport = typeof runImport

/** the first chunk's worth of `all` (the store's default chunk size) */
function firstChunk(all: readonly Block[]): Block[] {
  const blocks: Block[] = []
  let bytes = 0
  for (const b of all) {
    blocks.push(b)
    bytes += estimateBlockBytes(b)
    if (bytes >= TARGET_BYTES) break
  }
  return blocks
}

/** CPU seconds per block of each stage, on the first chunk's worth of blocks of the archive */
async function stages(archive: string, encode: EncodeChunk = encodeChunk): Promise<Stages & { chunk: Block[] }> {
  let t = cpuNow()
  const lines: string[] = []
  for await (const l of readTextLines(archive)) {
    if (l.trim()) lines.push(l)
    if (lines.length >= 40) break
  }
  const read = cpuNow() - t
  t = cpuNow()
  const parsed = lines.map((l) => toArchiveLine(parseJsonExact(l)))
  const parse = cpuNow() - t
  t = cpuNow()
  const all = parsed.map((p) => normalizeBlock(p, { includeVotes: false }).block)
  const normalize = cpuNow() - t
  const blocks = firstChunk(all)
  t = cpuNow()
  await encode(blocks)
  const encoded = cpuNow() - t
  const n = lines.length
  return {
    blocks: blocks.length,
    read: read / n,
    parse: parse / n,
    normalize: normalize / n,
    encode: encoded / blocks.length,
    chunk: blocks,
  }
}

/** encoding alone, the builds alternating on the same blocks: median CPU ms per block and bytes of each */
async function encodeRounds(
  blocks: readonly Block[],
  builds: readonly { name: string; encode: EncodeChunk }[],
): Promise<Map<string, { ms: number[]; bytes: number }>> {
  const out = new Map(builds.map((b) => [b.name, { ms: [] as number[], bytes: 0 }]))
  for (let round = 0; round < ENCODE_ROUNDS; round++) {
    for (const b of round % 2 ? builds.slice().reverse() : builds) {
      const t = cpuNow()
      const enc = (await b.encode(blocks)) as { bytes: number }
      const r = out.get(b.name)!
      r.ms.push(((cpuNow() - t) / blocks.length) * 1000)
      r.bytes = enc.bytes
    }
  }
  return out
}

/**
 * `import --rpc` against the archive import of the same blocks, alternating (IMPORT_RPC_ROUNDS
 * rounds, default 2): the first IMPORT_RPC_BLOCKS (default 40) blocks of the archive as an archive
 * of their own, and a fake node (child process, bench/tail/node-child.ts, answers assembled
 * before the measurement) serving them re-slotted (new signatures, same sizes), fetched 8 at a
 * time. Both runs use WORKERS workers.
 */
async function rpcRows(archive: string): Promise<string[]> {
  const k = Number(process.env.IMPORT_RPC_BLOCKS ?? 40)
  const rounds = Number(process.env.IMPORT_RPC_ROUNDS ?? 2)
  const small = join(WORK, `rpc-templates-${k}.jsonl.gz`)
  if (!existsSync(small)) {
    const lines: string[] = []
    for await (const l of readTextLines(archive)) {
      if (l.trim()) lines.push(l)
      if (lines.length >= k) break
    }
    writeFileSync(small, gzipSync(lines.join('\n') + '\n', { level: 1 }))
  }
  const node = fork(join(import.meta.dirname, 'tail', 'node-child.ts'), [small, String(k), '0'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const ready = await new Promise<{ url: string; tip: number; firstSlot: number }>((resolve) =>
    node.on(
      'message',
      (m: { t: string; url: string; tip: number; firstSlot: number }) => m.t === 'ready' && resolve(m),
    ),
  )
  const sums = { archive: { s: 0, n: 0 }, rpc: { s: 0, n: 0 } }
  const rows: string[] = []
  try {
    for (let round = 0; round < rounds; round++) {
      for (const kind of round % 2 ? (['rpc', 'archive'] as const) : (['archive', 'rpc'] as const)) {
        const dir = join(WORK, `ds-${kind}`)
        rmSync(dir, { recursive: true, force: true })
        const c = cpuNow()
        let r
        if (kind === 'archive') r = await runImport(dir, [small], { progress: 'none', workers: WORKERS })
        else {
          const input = await RpcInput.open(
            dir,
            ready.url,
            { from: String(ready.firstSlot), to: String(ready.tip), rpcConcurrency: '8', rpcGzip: false },
            log,
          )
          r = await runImport(dir, [], { input, progress: 'none', workers: WORKERS })
          input.close()
        }
        const cpu = cpuNow() - c
        sums[kind].s += r.seconds
        sums[kind].n += r.imported
        log(
          `rpc section, round ${round + 1}, ${kind}: ${r.imported} blocks, ${r.seconds.toFixed(1)} s (load ${load()})`,
        )
        rows.push(
          `| ${round + 1} | ${kind === 'rpc' ? 'import --rpc (fake node, 8 in flight)' : 'import (archive .jsonl.gz)'} | ${r.imported} | ${r.seconds.toFixed(1)} | ${fmt(r.imported / r.seconds, 1)} | ${fmt((cpu / r.imported) * 1000)} |`,
        )
        rmSync(dir, { recursive: true, force: true })
      }
    }
  } finally {
    node.send({ t: 'stop' })
  }
  const a = sums.archive.n / sums.archive.s
  const b = sums.rpc.n / sums.rpc.s
  return [
    '',
    `### import --rpc against the archive import (${k} of these blocks, ${WORKERS} workers, alternating)`,
    '',
    '| round | input | blocks | seconds | blocks/s | CPU ms per block (this process) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Mean: archive ${fmt(a, 1)} blocks/s, import --rpc ${fmt(b, 1)} blocks/s: ${((100 * b) / a).toFixed(0)} % of the archive's rate ` +
      `(the fake node, in its own process, serves answers assembled beforehand; gzip off, as for a node on the same network).`,
  ]
}

export async function run(): Promise<string> {
  mkdirSync(WORK, { recursive: true })
  // the same generated blocks from an Old Faithful CAR file and from archive lines (import-car.ts)
  const car = await carSection(WORK, log)
  if (process.env.IMPORT_CAR_ONLY === '1') return `## import\n\n${car}`
  const archive = join(WORK, `gen${GEN_VERSION}-b${BLOCKS}-t${TXS}.jsonl.gz`)
  const statsFile = `${archive}.json`
  let gen: { stats: GenStats; seconds: number; cpu: number; cached: boolean }
  if (existsSync(archive) && existsSync(statsFile)) {
    gen = { ...JSON.parse(readFileSync(statsFile, 'utf8')), cached: true }
  } else {
    log(`generating ${BLOCKS} blocks of ~${TXS} transactions`)
    const t = performance.now()
    const c = cpuNow()
    const stats = await writeArchive(archive, { blocks: BLOCKS, txsPerBlock: TXS })
    gen = { stats, seconds: (performance.now() - t) / 1000, cpu: cpuNow() - c, cached: false }
    writeFileSync(statsFile, JSON.stringify({ stats, seconds: gen.seconds, cpu: gen.cpu }))
  }
  if (process.env.IMPORT_RPC_ONLY)
    return [`## import --rpc (generated blocks of ~${TXS} transactions)`, ...(await rpcRows(archive))].join('\n')
  const ix = gen.stats.nonVoteInstructions
  const n = gen.stats.blocks
  const base = process.env.IMPORT_BASE
  const builds: { name: string; runImport: RunImport; encode: EncodeChunk }[] = [
    // encoded in this thread as an import does (text and JSON parts in zstd), not as a serving
    // main thread would (an earlier build ignores the option)
    { name: base ? 'new' : '', runImport, encode: (blocks) => encodeChunk(blocks, { zstd: true }) },
  ]
  if (base) {
    const url = (p: string) => pathToFileURL(join(base, p)).href
    builds.push({
      name: 'old',
      // (the import moved from the command's module to src/ingest/import: a base before that has the old one)
      runImport: (
        (await import(
          url(existsSync(join(base, 'src/ingest/import')) ? 'src/ingest/import/index.ts' : 'src/cli/commands/import.ts')
        )) as { runImport: RunImport }
      ).runImport,
      encode: ((await import(url('src/store/cold/chunk-file.ts'))) as { encodeChunk: EncodeChunk }).encodeChunk,
    })
  }
  const load0 = load()
  const rows: string[] = []
  const sums = new Map<string, { s: number; cpu: number; n: number }>()
  const reference = new Map<string, string>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const workers of [1, WORKERS]) {
      // alternate which build goes first
      for (const b of (round + workers) % 2 ? builds.slice().reverse() : builds) {
        const dir = join(WORK, `ds-w${workers}`)
        rmSync(dir, { recursive: true, force: true })
        const c = cpuNow()
        const r = await b.runImport(dir, [archive], { progress: 'none', workers })
        const cpu = cpuNow() - c
        const files = JSON.stringify((await readChunkIndex(coldDir(dir)))!.map((e) => [e.file, e.sha256]))
        const ref = reference.get(b.name)
        if (ref === undefined) reference.set(b.name, files)
        else if (files !== ref) throw new Error(`import bench: --workers ${workers} wrote other chunk files`)
        const size = (await readChunkIndex(coldDir(dir)))!.reduce((t, e) => t + e.bytes, 0)
        log(
          `round ${round + 1}${b.name && `, ${b.name}`}, ${workers} worker(s): ${r.seconds.toFixed(1)} s, CPU ${cpu.toFixed(1)} s (load ${load()})`,
        )
        rows.push(
          `| ${round + 1} |${base ? ` ${b.name} |` : ''} ${workers} | ${r.seconds.toFixed(1)} | ${fmt(r.imported / r.seconds, 1)} | ${fmt(ix / r.seconds)} | ${cpu.toFixed(1)} | ${fmt((cpu / r.imported) * 1000)} | ${(size / 1e6).toFixed(2)} |`,
        )
        const key = `${b.name}/${workers}`
        const x = sums.get(key) ?? { s: 0, cpu: 0, n: 0 }
        x.s += r.seconds
        x.cpu += cpu
        x.n++
        sums.set(key, x)
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  const load1 = load()
  const ms = (x: number) => fmt(x * 1000)
  const perBlock = (x: number) => fmt(x / n)
  const out = [
    `## import (${fmt(n)} generated blocks, ${perBlock(gen.stats.txs)} transactions, ${perBlock(ix)} non-vote instructions per block)`,
    '',
    `Archive: ${(gen.stats.bytes / 2 ** 20).toFixed(0)} MiB of JSON (gzip level 1). Generator: ${gen.seconds.toFixed(1)} s, ` +
      `${fmt(n / gen.seconds, 1)} blocks/s (CPU ${gen.cpu.toFixed(1)} s)${gen.cached ? ', measured when the archive was generated' : ''}. ` +
      `Load average (1 / 5 / 15 min) at start ${load0}, after the imports ${load1}.` +
      (base
        ? ` Builds: \`new\` (the code of this checkout) and \`old\` (IMPORT_BASE, an earlier build), alternating.`
        : ''),
    '',
    `| round |${base ? ' build |' : ''} workers | seconds | blocks/s | instructions/s | CPU s (all threads) | CPU ms per block | dataset MB |`,
    `|---|${base ? '---|' : ''}---|---|---|---|---|---|---|`,
    ...rows,
  ]
  out.push('', car)
  let chunk: Block[] = []
  for (const b of builds) {
    log(`stage costs${b.name && ` (${b.name})`}`)
    const st = await stages(archive, b.encode)
    chunk = st.chunk
    const one = sums.get(`${b.name}/1`)!
    const many = sums.get(`${b.name}/${WORKERS}`)!
    const cpuPerBlock = many.cpu / many.n / n
    const total = st.read + st.parse + st.normalize + st.encode
    const name = b.name ? `, ${b.name} build` : ''
    out.push(
      '',
      `Mean${name}: 1 worker ${fmt((one.n * n) / one.s, 1)} blocks/s, ${WORKERS} workers ${fmt((many.n * n) / many.s, 1)} blocks/s ` +
        `(${(one.s / one.n / (many.s / many.n)).toFixed(2)}×); CPU per block ${fmt((one.cpu / one.n / n) * 1000)} ms with 1 worker, ` +
        `${fmt(cpuPerBlock * 1000)} ms with ${WORKERS}; the chunk files of both are identical (sha256).`,
      '',
      `CPU per block by stage${name} (this thread, the first ${st.blocks}-block chunk; encoding counts the thread pool's brotli): ` +
        `read + gunzip + lines ${ms(st.read)} ms, parse ${ms(st.parse)} ms, normalize ${ms(st.normalize)} ms, encode ${ms(st.encode)} ms; ` +
        `${ms(total)} ms in all. Projection per core: ${fmt(1 / total, 1)} blocks/s per core of stage CPU ` +
        `(measured in the ${WORKERS}-worker runs: ${fmt(cpuPerBlock * 1000)} ms per block, ${fmt(1 / cpuPerBlock, 1)} blocks/s per core); ` +
        `the serial limit: the main thread's reading ${fmt(1 / st.read)} blocks/s (the workers parse batches side by side).`,
      '',
      `Projection by cores${name} (idle cores, each worker on its own; the measured CPU per block of the ${WORKERS}-worker runs ` +
        `spread over the cores, capped by the serial limit above): ` +
        [1, 2, 4, 8].map((c) => `${c} ${fmt(Math.min(c / cpuPerBlock, 1 / st.read), 1)}`).join(', ') +
        ' blocks/s.',
    )
  }
  if (ENCODE_ROUNDS > 0) {
    log(`encoding alone, ${ENCODE_ROUNDS} rounds`)
    const l0 = load()
    const enc = await encodeRounds(chunk, builds)
    const median = (a: number[]) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)]
    const row = (name: string) => {
      const r = enc.get(name)!
      return `${name ? `${name}: ` : ''}median ${fmt(median(r.ms), 1)} ms per block (${fmt(Math.min(...r.ms), 1)}-${fmt(Math.max(...r.ms), 1)}), ${fmt(r.bytes)} bytes`
    }
    out.push(
      '',
      `Encoding alone (${ENCODE_ROUNDS} rounds${base ? ', the builds alternating' : ''}, the first ${chunk.length}-block chunk, ` +
        `the same normalized blocks; process CPU, brotli on the thread pool as with 1 worker; load ${l0} -> ${load()}): ` +
        builds.map((b) => row(b.name)).join('; ') +
        (base ? `; new/old ${(median(enc.get('new')!.ms) / median(enc.get('old')!.ms)).toFixed(3)}.` : '.'),
    )
  }
  out.push(...(await rpcRows(archive)))
  return out.join('\n')
}
