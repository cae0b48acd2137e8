/**
 * A mixed load of hostile and ordinary clients against a real `solportal serve` process: fast
 * readers, gzip readers, readers throttled to 100 KB/s, clients that never read, clients that
 * disconnect mid-response; meanwhile a small query is timed and the server's RSS sampled.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { everything, neverReader } from './hostile.ts'

export interface Serving {
  child: ChildProcess
  url: string
  port: number
  output: () => string
  /** SIGTERM, then the exit code */
  stop: () => Promise<number | null>
}

/** `solportal serve ARGS` on a free loopback port; resolves once it serves its datasets */
export function startServe(args: string[]): Promise<Serving> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--host', '127.0.0.1', ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let out = ''
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString()
      if (out.length > 1 << 20) out = out.slice(-(1 << 19))
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out)
      if (m) {
        child.stdout!.off('data', onData)
        child.stderr!.off('data', onData)
        child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-(1 << 19))))
        child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-(1 << 19))))
        resolve({
          child,
          url: m[1],
          port: Number(new URL(m[1]).port),
          output: () => out,
          stop: async () => {
            if (child.exitCode != null) return child.exitCode
            const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
            child.kill('SIGTERM')
            return exited
          },
        })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
  })
}

/** resident set size of a process (bytes), from /proc */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : 0
}

export interface MixedLoadOptions {
  url: string
  port: number
  pid: number
  /** dataset path, e.g. /datasets/solana-mainnet-complete */
  dataset: string
  fromBlock: number
  /** a block number for the small query */
  probeBlock: number
  clients: { fast: number; gzip: number; slow: number; never: number; disconnect: number }
  durationMs: number
  /** loopback addresses the clients are spread over (one client address holds few streams) */
  addresses: string[]
}

export interface MixedLoadResult {
  peakRss: number
  /** small-query latencies (ms) */
  probes: number[]
  statuses: Map<number, number>
  /** responses read to their end */
  completed: number
  /** bytes received by the clients that read */
  received: number
  /** bytes each reading client received, by kind (fast, gzip, slow) */
  perClient: Map<string, number[]>
}

/** requests still open; `mixedLoad` cuts them when its time is up */
const open = new Set<http.ClientRequest>()
let received = 0

function readStream(
  url: string,
  body: unknown,
  localAddress: string,
  opts: { gzip?: boolean; bytesPerSecond?: number; dropAfterFirst?: boolean },
  onBytes: (n: number) => void,
): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        localAddress,
        headers: { 'Content-Type': 'application/json', ...(opts.gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
      },
      (res) => {
        const status = res.statusCode ?? 0
        res.on('data', (c: Buffer) => {
          received += c.length
          onBytes(c.length)
          if (opts.dropAfterFirst) return void req.destroy()
          if (opts.bytesPerSecond) {
            res.pause()
            setTimeout(() => res.resume(), (c.length / opts.bytesPerSecond) * 1000)
          }
        })
        res.on('error', () => undefined)
        res.on('close', () => resolve(status))
      },
    )
    open.add(req)
    req.on('close', () => open.delete(req))
    req.on('error', () => resolve(0))
    req.end(JSON.stringify(body))
  })
}

export async function mixedLoad(o: MixedLoadOptions): Promise<MixedLoadResult> {
  const streamUrl = `${o.url}${o.dataset}/stream`
  const body = everything(o.fromBlock)
  const end = Date.now() + o.durationMs
  received = 0
  const statuses = new Map<number, number>()
  let completed = 0
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1)
  let peakRss = rssOf(o.pid)
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(o.pid))), 100)
  let next = 0
  const addr = () => o.addresses[next++ % o.addresses.length]
  const loops: Promise<void>[] = []
  const perClient = new Map<string, number[]>()
  const loop = (kind: string, opts: Parameters<typeof readStream>[3]) => {
    const a = addr()
    const mine = perClient.get(kind) ?? []
    perClient.set(kind, mine)
    const at = mine.push(0) - 1
    loops.push(
      (async () => {
        while (Date.now() < end) {
          const s = await readStream(streamUrl, body, a, opts, (n) => (mine[at] += n))
          if (Date.now() >= end) break // cut at the end
          count(s)
          if (s === 200 && !opts.dropAfterFirst) completed++
          if (s !== 200) await new Promise((r) => setTimeout(r, 200))
        }
      })(),
    )
  }
  for (let i = 0; i < o.clients.fast; i++) loop('fast', {})
  for (let i = 0; i < o.clients.gzip; i++) loop('gzip', { gzip: true })
  for (let i = 0; i < o.clients.slow; i++) loop('slow', { bytesPerSecond: 100 * 1024 })
  for (let i = 0; i < o.clients.disconnect; i++) loop('disconnect', { dropAfterFirst: true })
  const stalled = Array.from({ length: o.clients.never }, () => neverReader(o.port, `${o.dataset}/stream`, body, false))
  // the small query, timed, from an address of its own and from a process of its own: timed in
  // this process, it would also measure this process's event loop, as busy with the 200 clients
  // as the server is. The last one starts a second before the end: at the end every client is cut
  // at the same instant, and the server's teardown of 150 streams at once is not the load measured
  const probe = smallQueries(streamUrl, o.probeBlock, Math.min(2_000, o.durationMs / 4), end - 1_000)
  const cut = setTimeout(() => {
    for (const r of open) r.destroy()
  }, o.durationMs)
  try {
    await Promise.all([...loops, probe])
  } finally {
    clearTimeout(cut)
    clearInterval(sampler)
    for (const s of stalled) s.close()
  }
  return { peakRss, probes: await probe, statuses, completed, received, perClient }
}

const SMALL_QUERIES_CHILD = fileURLToPath(new URL('./small-queries-child.ts', import.meta.url))

/** small queries for one block, made by a child process (small-queries-child.ts) until `end` (epoch ms): their latencies */
export function smallQueries(url: string, block: number, delayMs: number, end: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', SMALL_QUERIES_CHILD, url, String(block), String(delayMs), String(end)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.stderr.on('data', (d: Buffer) => (err += d))
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`small-query client exited with ${code}: ${err}`))
      resolve(out.split('\n').filter(Boolean).map(Number))
    })
  })
}
