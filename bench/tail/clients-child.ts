/**
 * Child process of bench/tail.bench.ts: argv[3] clients following the head of the stream at
 * argv[2] from block argv[4] (resuming with fromBlock = last + 1 and parentBlockHash whenever a
 * response ends, as Portal clients do). Each line's block number and the wall-clock time it was
 * read (ms since the epoch) are sent to the parent on `stop`. The clients run in their own process
 * so that reading 100 streams does not share the measured server's event loop.
 */
import { setMaxListeners } from 'node:events'
import http from 'node:http'

const [base, count, start] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])]
const now = () => performance.timeOrigin + performance.now()
const seen: [number, number][] = []
const abort = new AbortController()
setMaxListeners(0, abort.signal)

function follow(from: number, signal: AbortSignal): Promise<void> {
  let fromBlock = from
  let parent: string | undefined
  const once = () =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({
        type: 'solana',
        fromBlock,
        ...(parent ? { parentBlockHash: parent } : {}),
        includeAllBlocks: true,
        fields: { block: { number: true, hash: true } },
      })
      const req = http.request(
        `${base}/stream`,
        { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' }, signal },
        (res) => {
          let buf = ''
          res.setEncoding('utf8')
          res.on('data', (c: string) => {
            const at = now()
            buf += c
            let i
            while ((i = buf.indexOf('\n')) >= 0) {
              const h = (JSON.parse(buf.slice(0, i)) as { header: { number: number; hash: string } }).header
              buf = buf.slice(i + 1)
              seen.push([h.number, at])
              fromBlock = h.number + 1
              parent = h.hash
            }
          })
          res.on('end', () => resolve())
          res.on('error', () => resolve())
        },
      )
      req.on('error', () => resolve())
      req.end(body)
    })
  return (async () => {
    while (!signal.aborted) await once()
  })()
}

const followers = Array.from({ length: count }, () => follow(start, abort.signal))
process.send!({ t: 'ready' })
process.on('message', (m: { t: string }) => {
  if (m.t !== 'stop') return
  abort.abort()
  void Promise.allSettled(followers).then(() => process.send!({ t: 'done', seen }, () => process.exit(0)))
})
