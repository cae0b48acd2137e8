/**
 * solana-storage protobuf decoding against JSON parsing (`npm run bench -- solana-storage`).
 *
 * The same blocks as protobuf `ConfirmedBlock` bytes and as getBlock JSON text: the time to get
 * the getBlock object from each (`decodeConfirmedBlock` against `parseJsonExact`, what the RPC path
 * does with a response body), and `encodeConfirmedBlock` for the test writers. Blocks: the real
 * protobuf block 43200000 of data/geyser (its JSON is the decoder's output), the whole mainnet
 * block 254170887 of data/mainnet (its protobuf is the encoder's output) and a generated
 * mainnet-shaped block of ~1,500 transactions. Rounds alternate between the two sides; times are
 * the thread's CPU time (`/proc/thread-self/schedstat`, wall time elsewhere) per call, over enough
 * calls per round for ~50 ms, median of the rounds.
 *
 * Env: SS_ROUNDS (default 15).
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { BlockGenerator, loadTemplates } from '../src/ingest/generate.ts'
import { decodeConfirmedBlock, encodeConfirmedBlock } from '../src/ingest/solana-storage/index.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine, RpcBlock } from '../src/rpc/types.ts'
import { threadTimes } from '../src/util/thread-clock.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const ROUNDS = Number(process.env.SS_ROUNDS ?? 15)

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })

function cpuMs(): number {
  return threadTimes()?.run ?? performance.now()
}

/** CPU ms of one call, over `reps` calls (the thread's CPU clock advances in scheduler ticks) */
function timed(fn: () => unknown, reps: number): number {
  const t0 = cpuMs()
  for (let i = 0; i < reps; i++) fn()
  return (cpuMs() - t0) / reps
}

/** calls per round: enough for ~50 ms of wall time */
function repsFor(fn: () => unknown): number {
  const t0 = performance.now()
  fn()
  return Math.max(1, Math.ceil(50 / Math.max(0.01, performance.now() - t0)))
}

interface Case {
  name: string
  txs: number
  json: string
  bytes: Uint8Array
  block: RpcBlock
}

function cases(): Case[] {
  const out: Case[] = []
  const real = new Uint8Array(readFileSync(join(root, 'data/geyser/43200000.bin')))
  const b1 = decodeConfirmedBlock(real)
  out.push({
    name: 'mainnet 43200000 (real protobuf)',
    txs: b1.transactions!.length,
    json: JSON.stringify(b1),
    bytes: real,
    block: b1,
  })
  const text = gunzipSync(readFileSync(join(root, 'data/mainnet/blocks/254170887.jsonl.gz')))
    .toString('utf8')
    .trim()
  const b2 = (parseJsonExact(text) as ArchiveLine).block
  const json2 = JSON.stringify(b2)
  out.push({
    name: 'mainnet 254170887 (real JSON)',
    txs: b2.transactions!.length,
    json: json2,
    bytes: encodeConfirmedBlock(b2),
    block: b2,
  })
  const g = new BlockGenerator(loadTemplates(), { blocks: 1, seed: 3, txsPerBlock: 1500 })
  const b3 = (parseJsonExact(g.next()) as ArchiveLine).block
  out.push({
    name: 'generated',
    txs: b3.transactions!.length,
    json: JSON.stringify(b3),
    bytes: encodeConfirmedBlock(b3),
    block: b3,
  })
  return out
}

export async function run(): Promise<string> {
  const rows: string[] = []
  for (const c of cases()) {
    const parse: number[] = []
    const decode: number[] = []
    const encode: number[] = []
    const parseOnce = () => parseJsonExact(c.json)
    const decodeOnce = () => decodeConfirmedBlock(c.bytes)
    const encodeOnce = () => encodeConfirmedBlock(c.block)
    const reps = Math.max(repsFor(parseOnce), repsFor(decodeOnce))
    for (let r = 0; r < ROUNDS + 2; r++) {
      // the first two rounds warm up
      const p = timed(parseOnce, reps)
      const d = timed(decodeOnce, reps)
      const e = timed(encodeOnce, reps)
      if (r >= 2) {
        parse.push(p)
        decode.push(d)
        encode.push(e)
      }
    }
    const p = median(parse)
    const d = median(decode)
    rows.push(
      `| ${c.name} | ${c.txs} | ${fmt(c.json.length / 2 ** 20, 2)} MiB / ${fmt(c.bytes.length / 2 ** 20, 2)} MiB | ${fmt(p)} | ${fmt(d)} | ${fmt(d / p, 2)} | ${fmt(median(encode))} |`,
    )
  }
  return [
    '## solana-storage protobuf decode vs JSON parse',
    '',
    `getBlock object from protobuf \`ConfirmedBlock\` bytes (\`decodeConfirmedBlock\`) and from the same block's JSON text (\`parseJsonExact\`); thread CPU ms per block (a round calls each enough times for ~50 ms), median of ${ROUNDS} alternating rounds.`,
    '',
    '| block | transactions | JSON / protobuf size | parseJsonExact ms | decodeConfirmedBlock ms | decode / parse | encodeConfirmedBlock ms |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
