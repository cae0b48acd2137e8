/**
 * Normalizer benchmark: blocks/s, transactions/s and instructions/s of `normalizeBlock` over every
 * block of data/mainnet (and data/sample/*.jsonl.gz when present), parsed once and normalized
 * repeatedly for ~3 s; plus JSON parse throughput of `parseJsonExact` against plain `JSON.parse`
 * on the same texts, measured in the same run.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { parseJsonExact } from '../src/rpc/json.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { ArchiveLine, RpcBlock } from '../src/rpc/types.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

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

export async function run(): Promise<string> {
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
