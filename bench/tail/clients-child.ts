/**
 * Child process of bench/tail.bench.ts: argv[3] clients following the head of the stream at
 * argv[2] from block argv[4] (resuming with fromBlock = last + 1 and parentBlockHash whenever a
 * response ends, as Portal clients do). Each line's block number and the wall-clock time it was
 * read (ms since the epoch) are sent to the parent on `stop`, with the count of responses by
 * status (a 204 is asked again at once, a 409 resumes on the server's chain, 429/503 wait
 * Retry-After). The clients run in their own process so that reading 100 streams does not share
 * the measured server's event loop.
 */
import { setMaxListeners } from 'node:events'
import http from 'node:http'

const [base, count, start] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])]
const now = () => performance.timeOrigin + performance.now()
const seen: [number, number][] = []
/** responses by HTTP status */
const statuses: Record<number, number> = {}
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
          const status = res.statusCode ?? 0
          statuses[status] = (statuses[status] ?? 0) + 1
          if (status !== 200) {
            // 204: nothing new yet, ask again; 409: resume on the server's chain; 429/503: as told
            let text = ''
            res.setEncoding('utf8')
            res.on('data', (c: string) => (text += c))
            res.on('end', () => {
              if (status === 409) {
                const prev = (JSON.parse(text) as { previousBlocks: { number: number; hash: string }[] }).previousBlocks
                const p = prev[prev.length - 1]
                if (p) [fromBlock, parent] = [p.number + 1, p.hash]
              }
              const wait = status === 204 || status === 409 ? 0 : Number(res.headers['retry-after'] ?? 1) * 1000
              setTimeout(resolve, wait)
            })
            res.on('error', () => resolve())
            return
          }
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
  void Promise.allSettled(followers).then(() => process.send!({ t: 'done', seen, statuses }, () => process.exit(0)))
})
