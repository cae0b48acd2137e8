/**
 * The CAR path's floor for `npm run bench -- import`'s CAR section, in a process of its own: CPU ms
 * per block of what an import of a CAR block cannot skip whatever its decoder, while the records
 * hold keys, signatures and instruction data as base58 text, each step measured alone on inputs
 * prepared beforehand; against the JSON parse of the same blocks' archive lines, which a CAR import
 * does without. The votes the import drops are left out (it never decodes them); the lines are
 * parsed whole, votes included (their text holds them).
 *
 * - zstd: each kept transaction's metadata frame, the CAR file's own bytes;
 * - base58: each kept transaction's signatures (they never repeat), and each key, blockhash,
 *   instruction data and loaded address the first time the run meets it (a cache that never
 *   forgets);
 * - UTF-8: each log message.
 *
 * And, as the normalizer takes `getBlock`-shaped objects (src/normalize), those of the kept
 * transactions built at the speed of V8's native `JSON.parse` (the parse of their JSON alone,
 * strings included): the least any decoder in JavaScript can spend building them.
 *
 * argv: the CAR file, the same blocks' archive lines, rounds. Sends the parent the medians
 * (`Floor`). A process of its own, holding only these inputs: a process that also holds the
 * blocks as objects pays for their garbage collection in every step that allocates.
 */
import { readFileSync } from 'node:fs'
import { Chain, carBlocks } from '../../src/ingest/car/blocks.ts'
import { decodeBundle } from '../../src/ingest/car/bundle.ts'
import { isWireVote } from '../../src/ingest/car/tx-wire.ts'
import { parseJsonExact } from '../../src/rpc/json.ts'
import type { ArchiveLine } from '../../src/rpc/types.ts'
import { base58Decode, base58Encode } from '../../src/util/base58.ts'
import { zstdDecompressSync } from '../../src/util/zstd.mjs'

export interface Floor {
  zstd: number
  base58: number
  utf8: number
  /** JSON.parse of the kept transactions' JSON alone */
  keptObjects: number
  json: number
}

const [car, jsonl, rounds] = process.argv.slice(2)
const texts = readFileSync(jsonl, 'utf8')
  .split('\n')
  .filter((t) => t.length > 0)
const frames: Uint8Array[] = []
const values: Uint8Array[] = []
const logs: Uint8Array[] = []
const keptJson: string[] = []
const seen = new Set<string>()
const once = (s: string) => {
  if (!seen.has(s)) values.push(base58Decode(s))
  seen.add(s)
}
let n = 0
for await (const { bundle } of carBlocks(car, new Chain())) {
  const b = decodeBundle(bundle)
  const txs = (parseJsonExact(texts[n++]) as ArchiveLine).block.transactions ?? []
  const kept = b.transactions.flatMap((t, j) => (isWireVote(t.data) ? [] : [j]))
  keptJson.push(JSON.stringify(kept.map((j) => txs[j])))
  for (const j of kept) {
    frames.push(new Uint8Array(b.transactions[j].metadata))
    const { transaction: tx, meta } = txs[j]
    for (const s of tx.signatures) values.push(base58Decode(s))
    tx.message.accountKeys.forEach(once)
    once(tx.message.recentBlockhash)
    for (const ix of tx.message.instructions) once(ix.data)
    for (const k of [...(meta?.loadedAddresses?.writable ?? []), ...(meta?.loadedAddresses?.readonly ?? [])]) once(k)
    for (const inner of meta?.innerInstructions ?? []) for (const ix of inner.instructions) once(ix.data)
    for (const l of meta?.logMessages ?? []) logs.push(Buffer.from(l))
  }
}
if (n !== texts.length) throw new Error(`import bench: the CAR holds ${n} blocks, the lines ${texts.length}`)
seen.clear()

const utf8 = new TextDecoder('utf-8', { fatal: true })
const cpuMs = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e3
}
/** CPU ms per block of `f`, median of the rounds */
function timed(f: () => void): number {
  const runs: number[] = []
  for (let r = 0; r < Number(rounds); r++) {
    const c = cpuMs()
    f()
    runs.push((cpuMs() - c) / n)
  }
  return runs.sort((x, y) => x - y)[Math.floor(runs.length / 2)]
}
const floor: Floor = {
  zstd: timed(() => frames.forEach((f) => zstdDecompressSync(f))),
  base58: timed(() => values.forEach((v) => base58Encode(v))),
  utf8: timed(() => logs.forEach((l) => utf8.decode(l))),
  keptObjects: timed(() => keptJson.forEach((t) => JSON.parse(t))),
  json: timed(() => texts.forEach((t) => parseJsonExact(t))),
}
process.send!(floor)
