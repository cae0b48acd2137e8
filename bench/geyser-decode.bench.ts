/**
 * `npm run bench -- geyser-decode`: the CPU a decoding thread spends on one block, streamed
 * (a Geyser `SubscribeUpdateBlock` message: `decodeStreamedBlock`, protobuf → normalized block →
 * packed) against fetched (the `getBlock` answer's JSON text: `decodeBlockAnswer`, parse →
 * normalized block → packed), on the same generated mainnet-shaped blocks of ~1,500
 * transactions (`GD_TXS`). The blocks come from one generator, as the live tail's fake node makes
 * them: the same programs and accounts recur from block to block, signatures never do; the
 * thread's caches are kept from block to block as in a decoding thread.
 *
 * Rounds alternate between the two paths, each round decoding every block once; times are the
 * thread's CPU time (`/proc/thread-self/schedstat`, wall time elsewhere) per block, median of
 * `GD_ROUNDS` rounds (default 15) after two warm-up rounds.
 */
import { BlockGenerator, loadTemplates } from '../src/ingest/generate.ts'
import { decodeBlockAnswer } from '../src/ingest/block-decode.ts'
import { decodeStreamedBlock } from '../src/ingest/geyser/block-decode.ts'
import { blockUpdateOf } from '../src/ingest/geyser/block.ts'
import { encodeBlockUpdate } from '../src/ingest/geyser/messages.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine } from '../src/rpc/types.ts'
import { threadTimes } from '../src/util/thread-clock.ts'

const ROUNDS = Number(process.env.GD_ROUNDS ?? 15)
const TXS = Number(process.env.GD_TXS ?? 1500)
const BLOCKS = 6

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const cpuMs = (): number => threadTimes()?.run ?? performance.now()

interface Case {
  slot: number
  txs: number
  answer: Buffer
  message: Uint8Array
}

function cases(): Case[] {
  const g = new BlockGenerator(loadTemplates(), { blocks: BLOCKS, seed: 7, txsPerBlock: TXS })
  const out: Case[] = []
  for (let i = 0; i < BLOCKS; i++) {
    const line = parseJsonExact(g.next()) as ArchiveLine
    const answer = Buffer.from(`{"jsonrpc":"2.0","result":${JSON.stringify(line.block)},"id":1}`)
    const message = encodeBlockUpdate(blockUpdateOf(line.slot, line.block))
    out.push({ slot: line.slot, txs: line.block.transactions!.length, answer, message })
  }
  return out
}

/** thread CPU ms per block of one round over every block */
function round(cs: Case[], one: (c: Case) => unknown): number {
  const t0 = cpuMs()
  for (const c of cs) one(c)
  return (cpuMs() - t0) / cs.length
}

const fetched = (c: Case) => {
  const r = decodeBlockAnswer(c.answer, c.slot, {}, true).result
  if (r?.kind !== 'normalized') throw new Error(`answer of ${c.slot} did not normalize`)
}
const streamed = (c: Case) => {
  const r = decodeStreamedBlock(c.message, c.slot, {}, true)
  if (r.kind !== 'normalized') throw new Error(`message of ${c.slot} did not normalize`)
}

export async function run(): Promise<string> {
  const cs = cases()
  const json: number[] = []
  const proto: number[] = []
  for (let r = 0; r < ROUNDS + 2; r++) {
    const a = round(cs, fetched)
    const b = round(cs, streamed)
    if (r >= 2) {
      json.push(a)
      proto.push(b)
    }
  }
  const j = median(json)
  const p = median(proto)
  const txs = Math.round(cs.reduce((a, c) => a + c.txs, 0) / cs.length)
  const size = (f: (c: Case) => number) => fmt(cs.reduce((a, c) => a + f(c), 0) / cs.length / 2 ** 20, 2)
  return [
    '## A decoding thread: streamed Geyser block against getBlock answer',
    '',
    `${cs.length} generated blocks of ~${txs} transactions (JSON answer ${size((c) => c.answer.length)} MiB, SubscribeUpdateBlock ${size((c) => c.message.length)} MiB per block), each decoded, normalized and packed; thread CPU ms per block, median of ${ROUNDS} alternating rounds.`,
    '',
    '| path | ms per block | against JSON |',
    '|---|---|---|',
    `| getBlock answer (\`decodeBlockAnswer\`: parse + normalize + pack) | ${fmt(j)} | 1.00 |`,
    `| Geyser message (\`decodeStreamedBlock\`: protobuf + normalize + pack) | ${fmt(p)} | ${fmt(p / j, 2)} |`,
  ].join('\n')
}
