/**
 * Trusted proxies (`serve --trust-proxy CIDR...`): behind a real reverse proxy on loopback that
 * appends the client's address to X-Forwarded-For (as the shipped nginx does), two clients (bound
 * to 127.0.0.2 and 127.0.0.3) get separate rate limits only when --trust-proxy names the proxy;
 * a client cannot pick its address by sending the header itself; the chain is walked from the right
 * past trusted hops (X-Forwarded-For and Forwarded). The shipped nginx sets X-Forwarded-For, its
 * body limit is the server's, and compose's replicas trust it.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { serve } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { DEFAULT_MAX_BODY_BYTES } from '../src/server/body.ts'
import { TrustedProxies } from '../src/server/proxy.ts'
import { serveOptions } from './support/serve-options.ts'

const query = JSON.stringify({
  type: 'solana',
  fromBlock: 254170887,
  toBlock: 254170887,
  fields: { block: { number: true } },
})

/** a reverse proxy on 127.0.0.1: forwards to `target`, appending the peer to X-Forwarded-For */
async function reverseProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const t = new URL(target)
  const server = http.createServer((req, res) => {
    const prior = req.headers['x-forwarded-for']
    const headers = { ...req.headers, 'x-forwarded-for': `${prior ? `${prior}, ` : ''}${req.socket.remoteAddress}` }
    const up = http.request(
      { host: t.hostname, port: t.port, path: req.url, method: req.method, headers, localAddress: '127.0.0.1' },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

/** a stream request from the local address `from`; its status */
function streamFrom(base: string, from: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}/datasets/solana-mainnet/stream`,
      { method: 'POST', localAddress: from, agent: false, headers: { 'Content-Type': 'application/json', ...headers } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(query)
  })
}

/** three requests of client A, then one of client B, through the proxy */
async function twoClients(trustProxy: string[] | undefined): Promise<{ a: number[]; b: number; log: string }> {
  const text: string[] = []
  const logger = createLogger({ level: 'info', destination: { write: (s: string) => void text.push(s) } })
  // 1 request/s, a burst of 2
  const s = await serve(serveOptions({ rateLimit: '1', trustProxy }), { logger })
  const proxy = await reverseProxy(s.url)
  try {
    await s.ready
    const a: number[] = []
    for (let i = 0; i < 3; i++) a.push(await streamFrom(proxy.url, '127.0.0.2'))
    const b = await streamFrom(proxy.url, '127.0.0.3')
    return { a, b, log: text.join('') }
  } finally {
    await proxy.close()
    await s.stop()
  }
}

test('behind a proxy, two clients get separate limits only when --trust-proxy names the proxy', async () => {
  const trusted = await twoClients(['127.0.0.1/32'])
  assert.deepEqual(trusted.a, [200, 200, 429])
  assert.equal(trusted.b, 200)
  assert.match(trusted.log, /"client":"127\.0\.0\.2"/)
  assert.match(trusted.log, /"client":"127\.0\.0\.3"/)

  // the proxy not trusted: every client is the proxy, one bucket
  const untrusted = await twoClients(undefined)
  assert.deepEqual(untrusted.a, [200, 200, 429])
  assert.equal(untrusted.b, 429)
  assert.doesNotMatch(untrusted.log, /"client":"127\.0\.0\.[23]"/)
})

test('a client cannot pick its address: its own X-Forwarded-For is believed from trusted peers only', async () => {
  const s = await serve(serveOptions({ rateLimit: '1', trustProxy: ['127.0.0.1'] }), {
    logger: createLogger({ level: 'silent' }),
  })
  const proxy = await reverseProxy(s.url)
  try {
    await s.ready
    // straight to the server from an untrusted address: a new X-Forwarded-For each time changes nothing
    const direct: number[] = []
    for (let i = 0; i < 3; i++) direct.push(await streamFrom(s.url, '127.0.0.4', { 'X-Forwarded-For': `10.0.0.${i}` }))
    assert.deepEqual(direct, [200, 200, 429])
    // through the proxy, a forged entry left of the proxy's is skipped: the client is 127.0.0.5
    const forged: number[] = []
    for (let i = 0; i < 3; i++)
      forged.push(await streamFrom(proxy.url, '127.0.0.5', { 'X-Forwarded-For': `10.0.1.${i}` }))
    assert.deepEqual(forged, [200, 200, 429])
  } finally {
    await proxy.close()
    await s.stop()
  }
  await assert.rejects(
    serve(serveOptions({ trustProxy: ['10.0.0.0/33'] }), { logger: createLogger({ level: 'silent' }) }),
    /--trust-proxy: a trusted proxy is an address or a CIDR range \(10\.0\.0\.0\/8, fd00::\/8\), got '10\.0\.0\.0\/33'/,
  )
})

test('the forwarded chain is walked from the right past trusted hops', () => {
  const t = new TrustedProxies(['10.0.0.0/8', '192.168.1.1', 'fd00::/8'])
  // an untrusted peer: the headers are ignored
  assert.equal(t.clientOf('203.0.113.9', undefined, '198.51.100.1'), '203.0.113.9')
  // a trusted peer without headers: the peer
  assert.equal(t.clientOf('10.1.2.3'), '10.1.2.3')
  // two trusted hops, then the client; what the client wrote on the left is not believed
  assert.equal(t.clientOf('10.1.2.3', undefined, '6.6.6.6, 198.51.100.7, 192.168.1.1'), '198.51.100.7')
  // IPv4-mapped peers, several header lines, a port
  assert.equal(t.clientOf('::ffff:10.0.0.1', undefined, ['198.51.100.8:5555', '10.9.9.9']), '198.51.100.8')
  // every hop trusted: the leftmost
  assert.equal(t.clientOf('10.0.0.1', undefined, '10.0.0.2, 10.0.0.3'), '10.0.0.2')
  // an entry that is not an address: the trusted hop that wrote it
  assert.equal(t.clientOf('10.0.0.1', undefined, '198.51.100.1, unknown, 10.0.0.7'), '10.0.0.7')
  // Forwarded wins over X-Forwarded-For; quoted IPv6 with a port, other parameters
  assert.equal(
    t.clientOf('fd00::1', 'for=198.51.100.2, for="[2001:db8::7]:4711";proto=https;by=10.0.0.1', '5.5.5.5'),
    '2001:db8::7',
  )
  assert.equal(t.clientOf('10.0.0.1', 'for=192.0.2.60;proto=http, for=10.0.0.9'), '192.0.2.60')
  assert.equal(t.trusts('10.255.255.255'), true)
  assert.equal(t.trusts('11.0.0.0'), false)
  assert.equal(t.trusts('not-an-address'), false)
})

test('the shipped nginx forwards the client address and accepts the bodies the server accepts; compose trusts it', () => {
  const root = join(import.meta.dirname, '..')
  const nginx = readFileSync(join(root, 'deploy/nginx.conf'), 'utf8')
  assert.match(nginx, /^\s*proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/m)
  const m = /^\s*client_max_body_size (\d+)([km]?);/m.exec(nginx)
  assert.ok(m, 'client_max_body_size is set')
  const bytes = Number(m[1]) * (m[2] === 'm' ? 1024 * 1024 : m[2] === 'k' ? 1024 : 1)
  assert.equal(bytes, DEFAULT_MAX_BODY_BYTES)
  const compose = readFileSync(join(root, 'compose.yaml'), 'utf8')
  const replica = compose.slice(compose.indexOf('replica1:'), compose.indexOf('replica2:'))
  assert.match(replica, /'serve',[^\]]*'--trust-proxy',\s*'172\.16\.0\.0\/12'/)
})
