/**
 * Normalizer benchmark.
 *
 * 1. solportal against the reference pipeline (`JSON.parse` + vote transactions dropped +
 *    `mapRpcBlock` of `@subsquid/solana-normalization`, the devDependency), on the same blocks in
 *    the same run, alternating rounds: the whole mainnet block(s) of data/mainnet/blocks and
 *    mainnet-shaped generated blocks (~1,500 transactions each). Two ratios: parse + normalize
 *    (JSON text in, records out) and normalize alone (both sides start from their parsed object);
 *    then the CPU time of each stage of both pipelines run alone (where the time goes).
 * 2. blocks/s, transactions/s and instructions/s of `normalizeBlock` over every block of
 *    data/mainnet (and data/sample/*.jsonl.gz), parsed once and normalized repeatedly;
 * 3. JSON parse throughput of `parseJsonExact` against plain `JSON.parse` on the same texts.
 *
 * With NORMALIZE_BASE=<a checkout of other code, node_modules linked> only: that code's normalizer
 * against this one, same run, alternating rounds (`vsBase`).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { toArchiveLine } from '../src/ingest/archive.ts'
import { BlockGenerator, loadTemplates } from '../src/ingest/generate.ts'
import { isVoteTransaction } from '../src/normalize/normalize.ts'
import { normalizeArchiveText } from '../src/normalize/text.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { parseElement, splitTransactions } from '../src/rpc/split.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { ArchiveLine, RpcBlock } from '../src/rpc/types.ts'
import { PARSE_YOUNG_GENERATION_MB } from '../src/util/worker-argv.ts'
import { isDeepStrictEqual } from 'node:util'
import { parseJsonJs, scanJson } from './json-js.ts'
import { TapeReader } from './tape/reader.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

// ------------------------------------------------------------------------------ vs the reference

const require = createRequire(import.meta.url)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const reference = require('@subsquid/solana-normalization') as {
  mapRpcBlock(
    src: unknown,
    journal: { warn(p: unknown, m: string): void; error(p: unknown, m: string): void },
  ): {
    transactions: unknown[]
    instructions: unknown[]
  }
}
const quiet = { warn: () => {}, error: () => {} }

/** solportal, text in, records out: what `import` and `normalize` do with an archive line. */
function oursText(text: string): number {
  return normalizeArchiveText(text).block.instructions.length
}

function oursParsed(line: ArchiveLine): number {
  return normalizeBlock(line).block.instructions.length
}

/** The reference pipeline: JSON.parse, votes dropped (its RPC layer's job), mapRpcBlock. */
function refText(text: string): number {
  return refParsed(refPrepare(JSON.parse(text) as ArchiveLine))
}

/** Votes dropped, original positions kept in `_index` (as the reference's RPC layer does). */
function refPrepare(line: ArchiveLine): ArchiveLine {
  const txs = line.block.transactions ?? []
  const kept = []
  for (let i = 0; i < txs.length; i++) {
    if (isVoteTransaction(txs[i])) continue
    ;(txs[i] as { _index?: number })._index = i
    kept.push(txs[i])
  }
  return { ...line, block: { ...line.block, transactions: kept } }
}

function refParsed(line: ArchiveLine): number {
  const block = line.block
  const r = reference.mapRpcBlock(
    { slot: line.slot, hash: line.hash ?? block.blockhash, height: line.height ?? block.blockHeight, block },
    quiet,
  )
  return r.instructions.length
}

/** Process CPU milliseconds (user + system, every thread: the collector's helpers too). */
function cpuMs(): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

interface Cost {
  wall: number
  cpu: number
}

/** Wall and CPU milliseconds of one pass of `fn` over `items`. */
function pass<T>(items: readonly T[], fn: (x: T) => number): Cost {
  const c0 = cpuMs()
  const t0 = performance.now()
  let sink = 0
  for (const x of items) sink += fn(x)
  if (sink < 0) throw new Error('unreachable')
  return { wall: performance.now() - t0, cpu: cpuMs() - c0 }
}

interface Duel {
  ours: Cost
  ref: Cost
}

/**
 * `rounds` alternating rounds (ours first in even rounds, the reference first in odd ones), after
 * one warm-up pass each; the totals of the same rounds.
 */
function duel<A, B>(
  a: readonly A[],
  fa: (x: A) => number,
  b: readonly B[],
  fb: (x: B) => number,
  rounds: number,
): Duel {
  pass(a, fa)
  pass(b, fb)
  const ours: Cost = { wall: 0, cpu: 0 }
  const ref: Cost = { wall: 0, cpu: 0 }
  const add = (to: Cost, c: Cost) => {
    to.wall += c.wall
    to.cpu += c.cpu
  }
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      add(ours, pass(a, fa))
      add(ref, pass(b, fb))
    } else {
      add(ref, pass(b, fb))
      add(ours, pass(a, fa))
    }
  }
  return { ours, ref }
}

interface DuelSource {
  name: string
  texts: string[]
}

function duelSources(generated: number): DuelSource[] {
  const mainnet: DuelSource = { name: 'data/mainnet/blocks (whole mainnet blocks)', texts: [] }
  const blocksDir = join(root, 'data/mainnet/blocks')
  for (const f of readdirSync(blocksDir)
    .filter((f) => f.endsWith('.jsonl') || f.endsWith('.jsonl.gz'))
    .sort()) {
    mainnet.texts.push(...archiveTexts(join(blocksDir, f)))
  }
  const gen = new BlockGenerator(loadTemplates(), { blocks: generated, seed: 7, txsPerBlock: 1500 })
  const texts: string[] = []
  for (let i = 0; i < generated; i++) texts.push(gen.nextBuffer().toString('utf8').trimEnd())
  return [mainnet, { name: `\`solportal gen\` blocks, ${gen.stats.txs / generated} tx/block`, texts }]
}

/** The stages of both pipelines, each run alone: CPU milliseconds per block. */
interface Stages {
  split: number
  parse: number
  normalize: number
  total: number
  refParse: number
  refMap: number
  refTotal: number
}

/**
 * Each stage of both pipelines over the same texts, `rounds` rounds, the stages in turn inside a
 * round (so that all of them see the same machine state); process CPU time per block.
 */
function stages(texts: readonly string[], rounds: number): Stages {
  const ARCHIVE = ['block']
  const parsed = texts.map((t) => toArchiveLine(parseJsonExact(t)))
  const prepared = texts.map((t) => refPrepare(JSON.parse(t) as ArchiveLine))
  const fns: Record<keyof Stages, () => number> = {
    split: () => sumOver(texts, (t) => splitTransactions(t, ARCHIVE, true)?.spans.length ?? 0),
    parse: () =>
      sumOver(texts, (t) => {
        const sp = splitTransactions(t, ARCHIVE, true)!
        let n = 0
        for (let i = 0; i < sp.spans.length / 2; i++) if (parseElement(t, sp, i) !== null) n++
        return n + (parseJsonExact(sp.skeleton) !== null ? 1 : 0)
      }),
    normalize: () => sumOver(parsed, oursParsed),
    total: () => sumOver(texts, oursText),
    refParse: () => sumOver(texts, (t) => (JSON.parse(t) as ArchiveLine).slot),
    refMap: () => sumOver(prepared, refParsed),
    refTotal: () => sumOver(texts, refText),
  }
  return inTurn(fns, rounds, texts.length)
}

/**
 * Process CPU ms per item of each of `fns` (each one pass over `items` items), `rounds` rounds
 * after one warm-up pass each, the passes of a round in turn and the first of them turning round
 * by round (so that all of them see the same machine state)
 */
function inTurn<K extends string>(fns: Record<K, () => number>, rounds: number, items: number): Record<K, number> {
  const keys = Object.keys(fns) as K[]
  const cpu = {} as Record<K, number>
  for (const k of keys) {
    fns[k]() // warm-up
    cpu[k] = 0
  }
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < keys.length; j++) {
      const k = keys[(r + j) % keys.length]
      const c0 = cpuMs()
      if (fns[k]() < 0) throw new Error('unreachable')
      cpu[k] += cpuMs() - c0
    }
  }
  for (const k of keys) cpu[k] /= rounds * items
  return cpu
}

function sumOver<T>(items: readonly T[], fn: (x: T) => number): number {
  let n = 0
  for (const x of items) n += fn(x)
  return n
}

/** One table row per source: parse + normalize and normalize alone, both pipelines, ratios. */
export function duelRows(label = '', withStages = true): { rows: string[]; stageRows: string[] } {
  const rows: string[] = []
  const stageRows: string[] = []
  for (const s of duelSources(4)) {
    const mb = s.texts.reduce((a, t) => a + Buffer.byteLength(t), 0) / 1e6
    const rounds = 10
    const e2e = duel(s.texts, oursText, s.texts, refText, rounds)
    const oursLines = s.texts.map((t) => toArchiveLine(parseJsonExact(t)))
    const refLines = s.texts.map((t) => refPrepare(JSON.parse(t) as ArchiveLine))
    const alone = duel(oursLines, oursParsed, refLines, refParsed, rounds)
    const ms = (x: number) => x.toFixed(1)
    if (withStages) {
      const st = stages(s.texts, 6)
      stageRows.push(
        `| ${s.name} | ${ms(st.split)} | ${ms(st.parse)} | ${ms(st.normalize)} | ${ms(st.total)} | ${ms(st.refParse)} | ${ms(st.refMap)} | ${ms(st.refTotal)} |`,
      )
    }
    const txs = oursLines.reduce((a, l) => a + (l.block.transactions?.length ?? 0), 0)
    const per = (ms: number) => fmt((s.texts.length * rounds) / (ms / 1000))
    const ratio = (d: Duel, k: keyof Cost) => (d.ref[k] / d.ours[k]).toFixed(2)
    const cpuPer = (c: Cost) => ms(c.cpu / (s.texts.length * rounds))
    rows.push(
      `| ${s.name}${label} | ${s.texts.length} | ${fmt(txs / s.texts.length)} | ${mb.toFixed(1)} | ${per(e2e.ours.wall)} | ${per(e2e.ref.wall)} | **${ratio(e2e, 'wall')}** | ${cpuPer(e2e.ours)} / ${cpuPer(e2e.ref)} | **${ratio(e2e, 'cpu')}** | ${per(alone.ours.wall)} | ${per(alone.ref.wall)} | **${ratio(alone, 'wall')}** | ${cpuPer(alone.ours)} / ${cpuPer(alone.ref)} | **${ratio(alone, 'cpu')}** |`,
    )
  }
  return { rows, stageRows }
}

/** The young generation of the parse threads (src/util/worker-argv.ts) as V8's semi-space size. */
const SEMI_SPACE_MB = PARSE_YOUNG_GENERATION_MB / 3

/**
 * `duelRows` in a child process whose young generation is the one solportal gives the threads
 * that parse and normalize (import workers, block decoding workers), for both pipelines.
 */
function duelRowsInChild(): string[] {
  const code = `import(${JSON.stringify(pathToFileURL(fileURLToPath(import.meta.url)).href)}).then((m) => process.stdout.write(JSON.stringify(m.duelRows(${JSON.stringify(` (${PARSE_YOUNG_GENERATION_MB} MB young generation)`)}, false).rows)))`
  const out = execFileSync(
    process.execPath,
    [`--max-semi-space-size=${SEMI_SPACE_MB}`, '--import', 'tsx', '--input-type=module', '-e', code],
    { cwd: root, maxBuffer: 1 << 24, encoding: 'utf8' },
  )
  return JSON.parse(out) as string[]
}

async function vsReference(): Promise<string[]> {
  const load0 = loadavg()[0]
  const { rows, stageRows } = duelRows()
  rows.push(...duelRowsInChild())
  const load1 = loadavg()[0]
  return [
    '## solportal vs the reference normalizer (one core)',
    '',
    'Same blocks, same run, alternating rounds. Reference: `JSON.parse` + vote transactions dropped +',
    '`mapRpcBlock` (`@subsquid/solana-normalization`); solportal: `normalizeArchiveText` (u64 exact,',
    'format checks, d1..d8; parse + normalize one transaction at a time) and, alone, `normalizeBlock`',
    'on the `parseJsonExact` result. Ratio = solportal speed / reference speed, from wall time, and',
    'from process CPU time (what other work on a shared machine disturbs least); CPU ms per block',
    `shown as solportal / reference. The rows marked "${PARSE_YOUNG_GENERATION_MB} MB young generation" ran in a child`,
    `process with V8's semi-spaces at ${SEMI_SPACE_MB} MB (\`--max-semi-space-size\`), the young generation solportal gives`,
    'its import and block decoding threads (`parseWorkerLimits`), both pipelines alike; the other rows',
    "with V8's default (16 MB semi-spaces).",
    '',
    '| blocks | n | tx/block | MB | parse+normalize blocks/s | reference | ratio | CPU ms/block | ratio, CPU time | normalize alone blocks/s | reference | ratio | CPU ms/block | ratio, CPU time |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Where the time goes (default young generation): each stage run alone over the same blocks',
    '(stages in turn, 6 rounds), process CPU milliseconds per block. solportal: the split of the',
    'block text into transactions (the guessed cut, src/rpc/split.ts); the split plus the exact',
    'parse of every transaction and of the rest of the block; `normalizeBlock` of the parsed block;',
    '`normalizeArchiveText` (the split, parse and normalize of one transaction at a time).',
    'Reference: `JSON.parse` of the block; `mapRpcBlock` of the parsed block (votes dropped',
    'beforehand, not timed); both with the vote drop.',
    '',
    '| blocks | split | split + parse | normalize alone | parse+normalize | reference `JSON.parse` | reference normalize alone | reference parse+normalize |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...stageRows,
    '',
    `Load average (1 min): ${load0.toFixed(1)} at start, ${load1.toFixed(1)} at end.`,
    '',
  ]
}

/**
 * JSON text read in JavaScript and in WebAssembly: the transactions of each block (the exact cut,
 * src/rpc/split.ts) read by `JSON.parse`, by `parseJsonExact` (what solportal uses), by a strict
 * parser written in JavaScript (bench/json-js.ts `parseJsonJs`, checked first to give the same
 * values as `parseJsonExact` on every transaction), by a walk of the structure that builds nothing
 * (`scanJson`), and by the compiled reader of bench/tape (from the transactions' bytes, copied in;
 * checked first to hold every transaction's `JSON.parse` value): with its interning off, with
 * every string interned by a reader kept across passes (each string already met: a chunk's later
 * blocks at best) and by a new reader every pass (each string new and made a JavaScript string
 * once: a chunk's first block); ten rounds, the readers in turn (`inTurn`), process CPU ms per block.
 */
function jsReaders(): string[] {
  const rows: string[] = []
  for (const s of duelSources(4)) {
    const pieces: string[] = []
    for (const text of s.texts) {
      const sp = splitTransactions(text, ['block'], false)
      if (sp === null) throw new Error(`${s.name}: the text does not split`)
      for (let i = 0; i < sp.spans.length / 2; i++) pieces.push(text.slice(sp.spans[2 * i], sp.spans[2 * i + 1]))
    }
    const buffers = pieces.map((x) => Buffer.from(x, 'utf8'))
    const warm = new TapeReader()
    pieces.forEach((x, i) => {
      if (!isDeepStrictEqual(parseJsonJs(x), parseJsonExact(x)))
        throw new Error('parseJsonJs differs from parseJsonExact')
      if (!isDeepStrictEqual(warm.value(warm.read(buffers[i]))[0], JSON.parse(x)))
        throw new Error('the tape reader differs from JSON.parse')
    })
    const bare = new TapeReader()
    bare.interning = false
    const tape = (r: () => TapeReader) => () => {
      const reader = r()
      let n = 0
      for (const b of buffers) n += reader.read(b).length
      return n + reader.materialize()
    }
    const read = (parse: (x: string) => unknown) => () => sumOver(pieces, (x) => (parse(x) === undefined ? 0 : 1))
    const cpu = inTurn(
      {
        jsonParse: read(JSON.parse),
        exact: read(parseJsonExact),
        js: read(parseJsonJs),
        scan: () => sumOver(pieces, scanJson),
        bare: tape(() => bare),
        warm: tape(() => warm),
        fresh: tape(() => new TapeReader()),
      },
      10,
      s.texts.length,
    )
    const per = [cpu.jsonParse, cpu.exact, cpu.js, cpu.scan, cpu.bare, cpu.warm, cpu.fresh]
    rows.push(
      `| ${s.name} | ${fmt(pieces.length / s.texts.length)} | ${per.map((x) => x.toFixed(1)).join(' | ')} | ${per
        .slice(1)
        .map((x) => `**${(x / per[0]).toFixed(2)}**`)
        .join(' | ')} |`,
    )
  }
  return [
    '## JSON text read in JavaScript and in WebAssembly (one core)',
    '',
    "Each block's transactions read one at a time, ten rounds (the readers in turn), process CPU ms",
    'per block, and the time of each against `JSON.parse` (above 1: slower). `parseJsonJs` is a strict parser',
    'written in JavaScript giving the values of `parseJsonExact` (bench/json-js.ts, checked on',
    'every transaction first); `scanJson` walks the structure and skips every string the same way',
    'but builds nothing: the least a reader written in JavaScript does. The tape readers are the',
    'strict reader compiled to WebAssembly (bench/tape), reading the bytes into a tape of integers',
    "(checked first to hold every transaction's `JSON.parse` value): without interning; interning",
    'every string, each already met (warm); interning every string, each new and made a JavaScript',
    'string once (fresh).',
    '',
    '| blocks | tx/block | `JSON.parse` | `parseJsonExact` | `parseJsonJs` | `scanJson` | tape, no interning | tape, warm | tape, fresh | `parseJsonExact` / `JSON.parse` | `parseJsonJs` / `JSON.parse` | `scanJson` / `JSON.parse` | no interning / `JSON.parse` | warm / `JSON.parse` | fresh / `JSON.parse` |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ]
}

interface Source {
  name: string
  /** JSON texts as they would arrive (one per block) */
  texts: string[]
  lines: ArchiveLine[]
}

function archiveTexts(file: string): string[] {
  const buf = readFileSync(file)
  const text = (buf[0] === 0x1f && buf[1] === 0x8b ? gunzipSync(buf) : buf).toString('utf8')
  return text.split('\n').filter((l) => l.trim() !== '')
}

function loadSources(): Source[] {
  const out: Source[] = []
  const mainnet: Source = { name: 'data/mainnet', texts: [], lines: [] }
  const blocksDir = join(root, 'data/mainnet/blocks')
  for (const f of readdirSync(blocksDir)
    .filter((f) => f.endsWith('.jsonl') || f.endsWith('.jsonl.gz'))
    .sort()) {
    for (const t of archiveTexts(join(blocksDir, f))) {
      mainnet.texts.push(t)
      mainnet.lines.push(parseJsonExact(t) as ArchiveLine)
    }
  }
  for (const f of [
    'client_solana_block.json',
    'parser_solana_block.json',
    'parser_solana_transaction_err.json',
    'parser_solana_block_with_versioned_tx.json',
  ]) {
    const t = readFileSync(join(root, 'data/mainnet/chainstorage', f), 'utf8')
    const block = parseJsonExact(t) as RpcBlock
    mainnet.texts.push(t)
    mainnet.lines.push({ slot: block.parentSlot + 1, block })
  }
  out.push(mainnet)
  const sampleDir = join(root, 'data/sample')
  if (existsSync(sampleDir)) {
    for (const f of readdirSync(sampleDir)
      .filter((f) => f.endsWith('.jsonl.gz'))
      .sort()) {
      const s: Source = { name: `data/sample/${f}`, texts: archiveTexts(join(sampleDir, f)), lines: [] }
      s.lines = s.texts.map((t) => parseJsonExact(t) as ArchiveLine)
      out.push(s)
    }
  }
  return out
}

interface Rates {
  blocks: number
  txs: number
  ins: number
  logs: number
  seconds: number
}

function benchNormalize(lines: ArchiveLine[], budgetMs: number): Rates {
  // warm-up
  for (const l of lines) normalizeBlock(l)
  let blocks = 0
  let txs = 0
  let ins = 0
  let logs = 0
  const t0 = performance.now()
  let t = t0
  while (t - t0 < budgetMs) {
    for (const l of lines) {
      const { block } = normalizeBlock(l)
      blocks++
      txs += block.transactions.length
      ins += block.instructions.length
      logs += block.logs.length
    }
    t = performance.now()
  }
  return { blocks, txs, ins, logs, seconds: (t - t0) / 1000 }
}

function benchParse(texts: string[], parse: (s: string) => unknown, budgetMs: number): number {
  let bytes = 0
  for (const s of texts) parse(s)
  const t0 = performance.now()
  let t = t0
  while (t - t0 < budgetMs) {
    for (const s of texts) {
      parse(s)
      bytes += s.length
    }
    t = performance.now()
  }
  return bytes / ((t - t0) / 1000) / 2 ** 20
}

const fmt = (x: number) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1))

/**
 * NORMALIZE_BASE=<a checkout of older code, node_modules linked>: this code against that one on the
 * same blocks in the same run (alternating rounds, `duel`), text in (`normalizeArchiveText`) and
 * normalize alone (`normalizeBlock` of the same parsed blocks); CPU ms per block and the ratio.
 */
async function vsBase(base: string): Promise<string[]> {
  const oldText = (await import(pathToFileURL(join(base, 'src/normalize/text.ts')).href)) as {
    normalizeArchiveText: typeof normalizeArchiveText
  }
  const oldNorm = (await import(pathToFileURL(join(base, 'src/normalize/normalize.ts')).href)) as {
    normalizeBlock: typeof normalizeBlock
  }
  const rounds = Number(process.env.NORMALIZE_BASE_ROUNDS ?? 10)
  const load0 = loadavg()[0]
  const rows: string[] = []
  for (const s of duelSources(2)) {
    const e2e = duel(
      s.texts,
      oursText,
      s.texts,
      (t) => oldText.normalizeArchiveText(t).block.instructions.length,
      rounds,
    )
    const lines = s.texts.map((t) => toArchiveLine(parseJsonExact(t)))
    const alone = duel(lines, oursParsed, lines, (l) => oldNorm.normalizeBlock(l).block.instructions.length, rounds)
    const per = (c: Cost) => (c.cpu / (s.texts.length * rounds)).toFixed(1)
    const ratio = (d: Duel) => (d.ours.cpu / d.ref.cpu).toFixed(3)
    rows.push(
      `| ${s.name} | ${s.texts.length} | ${per(e2e.ref)} | ${per(e2e.ours)} | **${ratio(e2e)}** | ${per(alone.ref)} | ${per(alone.ours)} | **${ratio(alone)}** |`,
    )
  }
  return [
    '## This code against a base checkout (one core, same run, alternating rounds)',
    '',
    `Base: NORMALIZE_BASE; ${rounds} rounds per pipeline. Process CPU ms per block, new / old (below 1: faster).`,
    '',
    '| blocks | n | text in, old | text in, new | new / old | normalize alone, old | new | new / old |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Load average (1 min): ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end.`,
  ]
}

export async function run(): Promise<string> {
  if (process.env.NORMALIZE_BASE) return (await vsBase(process.env.NORMALIZE_BASE)).join('\n')
  if (process.env.BENCH_NORMALIZE_READERS_ONLY) return jsReaders().join('\n')
  const vs = await vsReference()
  if (process.env.BENCH_NORMALIZE_VS_ONLY) return vs.join('\n')
  const readers = jsReaders()
  const sources = loadSources()
  const rows: string[] = []
  for (const s of sources) {
    const r = benchNormalize(s.lines, 3000 / sources.length)
    const perBlockTx = r.txs / r.blocks
    rows.push(
      `| ${s.name} | ${s.lines.length} | ${perBlockTx.toFixed(0)} | ${fmt(r.blocks / r.seconds)} | ${fmt(r.txs / r.seconds)} | ${fmt(r.ins / r.seconds)} | ${fmt(r.logs / r.seconds)} |`,
    )
  }
  // end to end: text → parseJsonExact → normalizeBlock (what ingesting an archive costs)
  const e2eRows: string[] = []
  for (const s of sources) {
    const t0 = performance.now()
    let n = 0
    let txs = 0
    while (performance.now() - t0 < 1000 / sources.length) {
      for (const t of s.texts) {
        const v = parseJsonExact(t) as ArchiveLine | RpcBlock
        const line: ArchiveLine = 'block' in v ? v : { slot: v.parentSlot + 1, block: v }
        txs += normalizeBlock(line).block.transactions.length
        n++
      }
    }
    const sec = (performance.now() - t0) / 1000
    e2eRows.push(`| ${s.name} | ${fmt(n / sec)} | ${fmt(txs / sec)} |`)
  }
  const allTexts = sources.flatMap((s) => s.texts)
  const mb = allTexts.reduce((a, s) => a + s.length, 0) / 2 ** 20
  // interleave the two parsers so that both see the same machine state
  let plain = 0
  let exact = 0
  for (let k = 0; k < 3; k++) {
    plain += benchParse(allTexts, JSON.parse, 250)
    exact += benchParse(allTexts, parseJsonExact, 250)
  }
  plain /= 3
  exact /= 3
  return [
    ...vs,
    ...readers,
    '## Normalizer (`normalizeBlock`, one core)',
    '',
    'Blocks parsed once, then normalized repeatedly (votes dropped, the default).',
    '',
    '| source | blocks | tx/block | blocks/s | transactions/s | instructions/s | logs/s |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'End to end, JSON text → `parseJsonExact` → `normalizeBlock`:',
    '',
    '| source | blocks/s | transactions/s |',
    '|---|---:|---:|',
    ...e2eRows,
    '',
    `JSON parsing of the same ${mb.toFixed(1)} MiB of block text (characters/s):`,
    '',
    '| parser | MiB/s | ratio |',
    '|---|---:|---:|',
    `| \`JSON.parse\` | ${fmt(plain)} | 1.00 |`,
    `| \`parseJsonExact\` | ${fmt(exact)} | ${(exact / plain).toFixed(2)} |`,
  ].join('\n')
}
