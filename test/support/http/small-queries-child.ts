/**
 * Child process of `mixedLoad` (load.ts): after DELAY_MS, small queries for one block one at a
 * time until END (epoch ms), 100 ms apart, each from 127.0.0.254; prints each latency (ms) on a
 * line of stdout. Args: URL BLOCK DELAY_MS END.
 */
import { postFrom } from './hostile.ts'

const [url, block, delayMs, end] = process.argv.slice(2)
await new Promise((r) => setTimeout(r, Number(delayMs)))
while (Date.now() < Number(end)) {
  const t0 = performance.now()
  const r = await postFrom(
    url,
    { type: 'solana', fromBlock: Number(block), toBlock: Number(block), fields: { block: { number: true } } },
    { localAddress: '127.0.0.254' },
  )
  if (r.status !== 200) throw new Error(`small query: status ${r.status}`)
  console.log(performance.now() - t0)
  await new Promise((r) => setTimeout(r, 100))
}
