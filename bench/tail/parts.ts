/**
 * Micro-bench: the CPU of decoding one mainnet-sized getBlock answer (generated, ~1,500
 * transactions) in two parts, each part as one decoding thread does it (src/ingest/block-decode.ts
 * `decodeBlockAnswer` with a `DecodePart`, packing included), run here one after the other.
 *
 *   npx tsx bench/tail/parts.ts [ROOT ...]
 *
 * Each ROOT is a checkout of this repository whose block-decode.ts is measured (default: this
 * one): give the code before a change and after it to compare them in the same run, in
 * alternating rounds (`PARTS_ROUNDS`, default 8). Prints the median CPU ms per part and per
 * whole answer for each ROOT, and the load average at start and end.
 */
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { mainnetAnswer } from './answer.ts'

type Decode = (
  bytes: Uint8Array,
  slot: number,
  opts: object,
  pack: boolean,
  marks: undefined,
  part?: { index: number; of: number },
) => unknown

const roots = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [resolve(import.meta.dirname, '..', '..')]
const ROUNDS = Number(process.env.PARTS_ROUNDS ?? 8)
const load0 = loadavg()
const { bytes, slot } = await mainnetAnswer()

const decoders: Decode[] = []
for (const r of roots) {
  const m = (await import(pathToFileURL(join(r, 'src', 'ingest', 'block-decode.ts')).href)) as {
    decodeBlockAnswer: Decode
  }
  decoders.push(m.decodeBlockAnswer)
}
const cpu = (f: () => unknown): number => {
  const t = process.cpuUsage()
  f()
  const d = process.cpuUsage(t)
  return (d.user + d.system) / 1000
}
const times = roots.map(() => ({ part0: [] as number[], part1: [] as number[], whole: [] as number[] }))
for (let round = 0; round < ROUNDS + 1; round++) {
  for (let i = 0; i < roots.length; i++) {
    const d = decoders[i]
    const p0 = cpu(() => d(bytes, slot, {}, true, undefined, { index: 0, of: 2 }))
    const p1 = cpu(() => d(bytes, slot, {}, true, undefined, { index: 1, of: 2 }))
    const w = cpu(() => d(bytes, slot, {}, true, undefined))
    if (round === 0) continue // warm-up
    times[i].part0.push(p0)
    times[i].part1.push(p1)
    times[i].whole.push(w)
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(
  `one answer of ${(bytes.byteLength / 1e6).toFixed(1)} MB, ${ROUNDS} rounds; load average ${load0.map((x) => x.toFixed(2)).join(' ')} at start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at end`,
)
console.log('| code | part 0 CPU ms | part 1 CPU ms | parts together | whole answer CPU ms |')
console.log('|---|---|---|---|---|')
for (let i = 0; i < roots.length; i++) {
  const t = times[i]
  const [a, b, w] = [median(t.part0), median(t.part1), median(t.whole)]
  console.log(`| ${roots[i]} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(a + b).toFixed(1)} | ${w.toFixed(1)} |`)
}
