/**
 * A Portal client in plain TypeScript (Node.js 20+, no package): it streams a block range with
 * `fetch`, resumes each response where the last one ended (`fromBlock` = last block + 1 and
 * `parentBlockHash` = its hash), and when the chain changed under it (409) rolls back to the highest
 * block it shares with the server's `previousBlocks` and continues from there.
 *
 *   node --import tsx examples/stream-client.ts URL FROM [TO] [--follow]
 *
 * URL is a dataset's address, e.g. http://localhost:3000/datasets/solana-mainnet. Without TO it
 * reads to the head; with --follow it waits for new blocks at the head (until TO, if given).
 * Prints `block NUMBER HASH TRANSACTIONS` for each block and `rollback NUMBER` after a fork; a real
 * indexer would undo what it derived from the blocks above NUMBER there.
 */

interface Ref {
  number: number
  hash: string
}

interface BlockLine {
  header: { number: number; hash: string; parentHash: string }
  transactions?: unknown[]
}

const [url, fromArg, toArg] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const follow = process.argv.includes('--follow')
if (!url || !fromArg) {
  process.stderr.write('usage: stream-client.ts URL FROM [TO] [--follow]\n')
  process.exit(2)
}
const to = toArg === undefined ? undefined : Number(toArg)

/** the blocks this client holds, ascending (the last 1,000: enough to find a common ancestor) */
const chain: Ref[] = []
let next = Number(fromArg)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function headNumber(): Promise<number | null> {
  const r = await fetch(`${url}/head`)
  if (!r.ok) throw new Error(`GET /head: ${r.status} ${await r.text()}`)
  const head = (await r.json()) as Ref | null
  return head?.number ?? null
}

/** one stream request: reads its lines as they arrive; returns the status */
async function streamOnce(): Promise<number> {
  const last = chain.at(-1)
  const res = await fetch(`${url}/stream`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      type: 'solana',
      fromBlock: next,
      toBlock: to,
      parentBlockHash: last?.hash,
      includeAllBlocks: true,
      fields: { block: { number: true, hash: true, parentHash: true }, transaction: { transactionIndex: true } },
      transactions: [{}],
    }),
  })
  if (res.status === 409) {
    const { previousBlocks } = (await res.json()) as { previousBlocks: Ref[] }
    // the highest block both sides hold is the common ancestor
    const mine = new Map(chain.map((b) => [b.number, b.hash]))
    const common = [...previousBlocks].reverse().find((b) => mine.get(b.number) === b.hash)
    if (!common) throw new Error('fork deeper than the blocks this client keeps')
    while (chain.length > 0 && chain.at(-1)!.number > common.number) chain.pop()
    next = common.number + 1
    console.log(`rollback ${common.number}`)
    return 409
  }
  if (res.status !== 200) {
    const text = res.status === 204 ? '' : await res.text()
    if (res.status === 204 || res.status === 429 || res.status === 503) return res.status
    throw new Error(`POST /stream: ${res.status} ${text}`)
  }
  // JSON lines, each a whole block; a response may end after any line
  const decoder = new TextDecoder()
  let buf = ''
  for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(piece, { stream: true })
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const block = JSON.parse(buf.slice(0, nl)) as BlockLine
      buf = buf.slice(nl + 1)
      const { number, hash } = block.header
      chain.push({ number, hash })
      if (chain.length > 1000) chain.shift()
      next = number + 1
      console.log(`block ${number} ${hash} ${block.transactions?.length ?? 0}`)
    }
  }
  return 200
}

for (;;) {
  if (to !== undefined && next > to) break
  const status = await streamOnce()
  if (status === 200 || status === 409) continue
  if (status === 429 || status === 503) {
    await sleep(1000)
    continue
  }
  // 204: nothing above `next` yet
  if (!follow) {
    const head = await headNumber()
    if (head === null || head < next) break
  }
  await sleep(200)
}
