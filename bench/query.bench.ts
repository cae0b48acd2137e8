/**
 * Query engine benchmark: blocks/s, rows/s and MB/s of JSON lines on one core, over blocks held in
 * memory (StaticStore), and the compiled writer against JSON.stringify of built objects.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SELECTOR_INDEX, SELECTOR_NAMES, type SelectorName } from '../src/catalogue.ts'
import { readArchive } from '../src/ingest/archive.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { compileWriter, selectedDefs } from '../src/query/render.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { StaticStore } from '../src/store/static.ts'
import { randomBlocks } from '../test/support/random-blocks.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
type Q = Record<string, unknown>

function allFields(sel: SelectorName): Record<string, boolean> {
  const out: Record<string, boolean> = {}
  for (const def of SELECTOR_INDEX[sel].values()) out[def.selectors[0]] = true
  return out
}

function benchQueries(): { name: string; body: Q }[] {
  for (const dir of [join(root, 'bench', 'queries')]) {
    if (!existsSync(dir)) continue
    return readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => ({ name: f.replace(/\.json$/, ''), body: JSON.parse(readFileSync(join(dir, f), 'utf8')) as Q }))
  }
  return []
}

interface Measure {
  blocks: number
  lines: number
  bytes: number
  records: number
  seconds: number
}

async function measure(store: StaticStore, body: Q, from: number, to: number, minSeconds = 0.5): Promise<Measure> {
  const q = parseQuery({ ...body, fromBlock: from })
  const opts = { to, finalizedOnly: true }
  // warm-up run: count the records
  let records = 0
  for await (const b of executeQuery(store, q, opts)) {
    const o = JSON.parse(b.line) as Record<string, unknown[]>
    for (const k of Object.keys(o)) if (k !== 'header') records += o[k].length
  }
  let best = Infinity
  let lines = 0
  let bytes = 0
  let runs = 0
  const start = performance.now()
  while (runs < 2 || performance.now() - start < minSeconds * 1000) {
    const t0 = performance.now()
    lines = 0
    bytes = 0
    // Buffer.byteLength flattens the line, as writing it to a socket or gzip must
    for await (const b of executeQuery(store, q, opts)) {
      lines++
      bytes += Buffer.byteLength(b.line) + 1
    }
    best = Math.min(best, (performance.now() - t0) / 1000)
    runs++
  }
  return { blocks: store.size, lines, bytes, records, seconds: best }
}

function fmt(n: number): string {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M'
  if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k'
  return n.toFixed(0)
}

/** compiled writer vs building objects + JSON.stringify, over every row of one kind */
function writerRatio(
  chunks: Chunk[],
  kind: 'instruction' | 'transaction',
): { writer: number; stringify: number; mb: number } {
  const q = parseQuery({ fromBlock: 0, fields: { [kind]: allFields(kind) } })
  const fields = q.fields[kind]
  const defs = selectedDefs(fields)
  const factory = compileWriter(fields, false)
  const writer = (c: Chunk): number => {
    const t = c.table(kind)
    const write = factory(defs.map((d) => t.column(d.name)))
    let n = 0
    for (let i = 0; i < t.rowCount; i++) n += Buffer.byteLength(write(i))
    return n
  }
  const stringify = (c: Chunk): number => {
    const t = c.table(kind)
    const cols = defs.map((d) => t.column(d.name))
    let n = 0
    for (let i = 0; i < t.rowCount; i++) {
      const o: Record<string, unknown> = {}
      for (let k = 0; k < fields.length; k++) {
        const v = cols[defs.indexOf(fields[k].def)][i]
        o[fields[k].key] = typeof v === 'bigint' ? v.toString() : v
      }
      n += Buffer.byteLength(JSON.stringify(o))
    }
    return n
  }
  // interleaved repetitions, best of each (the machine may be shared)
  const best = { w: Infinity, s: Infinity }
  let bytes = 0
  for (let rep = 0; rep < 4; rep++) {
    let t0 = performance.now()
    bytes = 0
    for (const c of chunks) bytes += writer(c)
    best.w = Math.min(best.w, performance.now() - t0)
    t0 = performance.now()
    for (const c of chunks) stringify(c)
    best.s = Math.min(best.s, performance.now() - t0)
  }
  const w = { t: best.w, bytes }
  const s = { t: best.s }
  return { writer: w.t, stringify: s.t, mb: w.bytes / 1e6 }
}

async function section(title: string, blocks: Block[]): Promise<string> {
  const store = new StaticStore(blocks, 64)
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const count = (k: keyof Block) => blocks.reduce((n, b) => n + (b[k] as unknown[]).length, 0)
  const tx = count('transactions')
  const ins = count('instructions')
  const shape = `${blocks.length} blocks; per block ${(tx / blocks.length).toFixed(0)} transactions, ${(ins / blocks.length).toFixed(0)} instructions, ${(count('logs') / blocks.length).toFixed(0)} logs, ${(count('balances') / blocks.length).toFixed(0)} balances, ${(count('tokenBalances') / blocks.length).toFixed(0)} token balances`

  // warm up: build every chunk's columns
  const chunks: Chunk[] = []
  for await (const c of store.chunks(first, last, true)) {
    for (const k of ['transaction', 'instruction', 'log', 'balance', 'tokenBalance', 'reward'] as const) c.table(k)
    chunks.push(c)
  }

  const wide = Object.fromEntries(SELECTOR_NAMES.map((s) => [s, allFields(s)]))
  const popular = (() => {
    const n = new Map<string, number>()
    for (const b of blocks)
      for (const t of b.transactions) for (const a of t.accountKeys.slice(1)) n.set(a, (n.get(a) ?? 0) + 1)
    return [...n.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(5, 6)
      .map((e) => e[0])
  })()
  const queries: { name: string; body: Q }[] = [
    {
      name: 'selective: program + d8',
      body: {
        fields: { block: { number: true, hash: true }, instruction: { programId: true, accounts: true, data: true } },
        instructions: [{ programId: ['whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'], d8: ['0xf8c69e91e17587c8'] }],
      },
    },
    {
      name: 'all instructions, all fields',
      body: {
        fields: { block: { number: true, hash: true }, instruction: allFields('instruction') },
        instructions: [{}],
      },
    },
    {
      name: 'transactions mentioning an account + instructions, logs, balances',
      body: {
        fields: wide,
        transactions: [{ mentionsAccount: popular, instructions: true, logs: true, balances: true }],
      },
    },
    {
      name: 'everything, all fields (wide)',
      body: {
        fields: wide,
        transactions: [{}],
        instructions: [{}],
        logs: [{}],
        balances: [{}],
        tokenBalances: [{}],
        rewards: [{}],
      },
    },
    ...benchQueries().map((q) => ({ name: `bench ${q.name}`, body: q.body })),
  ]
  const inputRows = tx + ins + count('logs') + count('balances') + count('tokenBalances') + count('rewards')
  const rows: string[] = []
  for (const { name, body } of queries) {
    const m = await measure(store, body, first, last)
    rows.push(
      `| ${name} | ${fmt(m.blocks / m.seconds)} | ${fmt(inputRows / m.seconds)} | ${fmt(m.records / m.seconds)} | ${(m.bytes / 1e6 / m.seconds).toFixed(1)} | ${m.lines} | ${fmt(m.records)} | ${(m.bytes / 1e6).toFixed(2)} |`,
    )
  }
  const ratios: string[] = []
  for (const kind of ['instruction', 'transaction'] as const) {
    const r = writerRatio(chunks, kind)
    ratios.push(
      `| ${kind}, all fields | ${((r.mb / r.writer) * 1000).toFixed(0)} MB/s | ${((r.mb / r.stringify) * 1000).toFixed(0)} MB/s | ${(r.stringify / r.writer).toFixed(2)}× |`,
    )
  }
  return [
    `### ${title}`,
    '',
    shape,
    '',
    '| query | blocks/s | input rows/s | output records/s | MB/s JSON | lines | records | MB |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'Compiled writer vs building objects + `JSON.stringify` (same rows, same run):',
    '',
    '| rows | writer | JSON.stringify | speed-up |',
    '|---|---|---|---|',
    ...ratios,
    '',
  ].join('\n')
}

export async function run(): Promise<string> {
  const out = ['## Query engine (src/query), one core, blocks in memory (StaticStore, 64-block chunks)', '']
  out.push(
    await section(
      'Random blocks (test/support/random-blocks.ts)',
      randomBlocks(42, { blocks: 192, maxTx: 300, skipRate: 0.05 }),
    ),
  )
  const file = join(root, 'data/mainnet/blocks/254170887.jsonl.gz')
  if (existsSync(file)) {
    let real: Block | undefined
    for await (const line of readArchive(file)) real = normalizeBlock(line).block
    if (real) {
      // the one real block, repeated under consecutive slot numbers
      const copies: Block[] = []
      for (let i = 0; i < 64; i++) {
        copies.push({
          ...real,
          header: { ...real.header, number: real.header.number + i, parentNumber: real.header.number + i - 1 },
        })
      }
      out.push(await section('Real mainnet block 254170887, repeated 64 times', copies))
    }
  }
  out.push(
    'blocks/s counts every produced block of the range (the range is scanned whole); input rows = rows of every kind held by those blocks (held, not necessarily read: a header-only query reads none); records = rows output over all kinds; MB/s = bytes of JSON lines (with newline) per second; best of repeated runs after a warm-up.',
  )
  return out.join('\n')
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) console.log(await run())
