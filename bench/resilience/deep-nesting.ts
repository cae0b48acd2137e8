/**
 * Deep nesting: `solportal serve` (a child process, default limits, the bundled sample) receives 8
 * concurrent 8 MB bodies of `[[[…` from one client while a probe asks /health every 50 ms. Held
 * when every hostile body is refused with a 400 naming the nesting limit, /health never takes more
 * than 1 s (its slowest answer without the bodies is shown beside it), and the server's peak RSS (VmHWM) grows by less than 256 MiB.
 * (Before the byte scan, JSON.parse held the event loop 2.5-3.3 s per body: /health took 17 s and
 * RSS reached 1.49 GB.)
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const BODIES = 8
const BODY_BYTES = 8 * 1024 * 1024 - 4096
/** /health may take this long while the bodies arrive (a loaded 2-core box answers it in ~100-700 ms) */
const BOUND_MS = 1000

/** peak resident memory of a process (Linux), MiB */
function peakMib(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : NaN
}

function post(url: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } },
      (res) => {
        let text = ''
        res.on('data', (d: Buffer) => (text += d.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      .on('error', reject)
  })
}

export async function run(): Promise<{ scenario: string; held: boolean; detail: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--host', '127.0.0.1', '--quiet'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      const t = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 60_000)
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        const m = /listening on (http:\/\/[^\s:]+:\d+)/.exec(out)
        if (m) {
          clearTimeout(t)
          resolve(m[1])
        }
      })
      child.on('exit', () => reject(new Error(`serve exited: ${out}`)))
    })
    await get(`${url}/health`)
    const before = peakMib(child.pid!)
    const body = Buffer.alloc(BODY_BYTES, '[')
    let worst = 0
    let probing = true
    const probeFor = async (until: () => boolean) => {
      while (until()) {
        const t0 = performance.now()
        await get(`${url}/health`)
        worst = Math.max(worst, performance.now() - t0)
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    // the baseline: /health on the same box without the bodies, for 2 s
    const idleEnd = performance.now() + 2000
    await probeFor(() => performance.now() < idleEnd)
    const idle = worst
    worst = 0
    const probe = probeFor(() => probing)
    const t0 = performance.now()
    const answers = await Promise.all(
      Array.from({ length: BODIES }, () => post(`${url}/datasets/solana-mainnet/stream`, body)),
    )
    const seconds = (performance.now() - t0) / 1000
    probing = false
    await probe
    const grown = peakMib(child.pid!) - before
    const named = answers.filter((a) => a.status === 400 && /nests JSON deeper than \d+ levels/.test(a.text)).length
    const held = named === BODIES && worst < BOUND_MS && grown < 256
    return {
      scenario: 'deep nesting: 8 concurrent 8 MB `[[[…` bodies, one client, default limits',
      held,
      detail:
        `${named}/${BODIES} answered 400 naming the nesting limit in ${seconds.toFixed(2)} s; ` +
        `slowest /health meanwhile ${worst.toFixed(0)} ms (bound ${BOUND_MS}; ${idle.toFixed(0)} ms without the bodies); server peak RSS +${grown.toFixed(0)} MiB ` +
        `(bound 256; ${before.toFixed(0)} MiB before)`,
    }
  } finally {
    child.kill()
  }
}
