/**
 * Resilience of a real `solportal serve` process on loopback: thousands of fuzzed malformed
 * requests (methods, paths, headers, bodies, gzip junk, extreme numbers, deep nesting) are all
 * answered 2xx/4xx, never 5xx, and the process stays up with bounded memory; then 200 concurrent
 * streams, 50 of them from clients that never read, keep memory bounded while the others are
 * served and a small query still answers.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import zlib from 'node:zlib'
import { mulberry32 } from '../src/util/prng.ts'
import { request } from './support/http/client.ts'
import { everything, postFrom, rawExchange, statusOf } from './support/http/hostile.ts'
import { mixedLoad, rssOf, smallQueries, startServe, type Serving } from './support/http/load.ts'

const GiB = 1024 ** 3
const DS = '/datasets/solana-mainnet-complete'
let s: Serving
let first: number
let head: number

before(async () => {
  s = await startServe(['--rate-limit', '0', '--head-wait-ms', '200', '--write-timeout-ms', '3000'])
  first = (JSON.parse((await request(`${s.url}${DS}/metadata`)).text) as { start_block: number }).start_block
  head = (JSON.parse((await request(`${s.url}${DS}/head`)).text) as { number: number }).number
  // warm up: the sample's chunks are built on first use
  assert.equal((await postFrom(`${s.url}${DS}/stream`, everything(first))).status, 200)
})

after(async () => {
  assert.equal(await s.stop(), 0, 'clean exit on SIGTERM')
})

/** the raw bytes of one fuzzed request (Connection: close, so the answer ends with the connection) */
function fuzzedRequest(rnd: () => number, i: number): Buffer {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]
  const int = (n: number) => Math.floor(rnd() * n)
  const valid = { fromBlock: head, toBlock: head, fields: { block: { number: true } } }
  const junkValue = (): unknown =>
    pick([
      null,
      -1,
      1e400,
      -1e400,
      1.5,
      2 ** 64,
      '18446744073709551616',
      'x'.repeat(int(3000)),
      [],
      {},
      true,
      [[[[1]]]],
      { a: { b: { c: {} } } },
      Array.from({ length: int(500) }, () => 'A'.repeat(44)),
      '\u0000\ud800',
    ])
  const mutate = (): unknown => {
    const q: Record<string, unknown> = JSON.parse(JSON.stringify(valid))
    const keys = [
      'fromBlock',
      'toBlock',
      'fields',
      'type',
      'parentBlockHash',
      'includeAllBlocks',
      'instructions',
      'transactions',
      'logs',
      'balances',
      'tokenBalances',
      'rewards',
      'nonsense',
    ]
    for (let k = 0; k < 1 + int(3); k++) {
      const key = pick(keys)
      q[key] =
        key === 'instructions' || key === 'transactions'
          ? [{ [pick(['programId', 'd8', 'a0', 'mentionsAccount', 'x'])]: junkValue() }]
          : junkValue()
    }
    return q
  }
  const bodies: (() => string | Buffer)[] = [
    () => JSON.stringify(mutate()),
    () => '{"fromBlock":' + '['.repeat(10_000 + int(50_000)),
    () => '['.repeat(5_000) + ']'.repeat(5_000),
    () => JSON.stringify(valid).slice(0, int(40)),
    () => Buffer.from(Array.from({ length: int(2000) }, () => int(256))),
    () =>
      `{"fromBlock": ${pick(['-1', '1e400', '99999999999999999999999', '-0', '0x10', 'NaN', '1.5', String(2 ** 53 + 1)])}}`,
    () => JSON.stringify({ ...valid, fromBlock: pick([first - 1, head + 1e9, -head, 2 ** 60]) }),
    () => '',
  ]
  const kind = i % 6
  let method = 'POST'
  let path = `${DS}/stream`
  const headers: string[] = ['Host: x', 'Connection: close']
  let body: string | Buffer = JSON.stringify(mutate())
  let contentType = 'application/json'
  let encoding: string | null = null
  let length: string | null = null
  if (kind === 0) {
    method = pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'FOO', 'TRACE', 'M-SEARCH', 'post'])
  } else if (kind === 1) {
    path = pick([
      '/%ZZ',
      '/datasets/%E0%A4%A',
      `${DS}/%`,
      `${DS}/timestamps/${pick(['-1', '1e99', '99999999999999999999', 'abc', '%FF', '0'])}/block`,
      '/datasets/' + 'a'.repeat(int(6000)),
      'http://a:b:c/',
      `http://x${DS}/head`,
      '*',
      '/datasets/../../etc/passwd',
      `${DS}/head?expand[]=${'%'.repeat(int(20))}`,
      '/datasets/\u00e9',
      `${DS}//stream`,
    ])
    if (rnd() < 0.5) method = 'GET'
  } else if (kind === 2) {
    contentType = pick([
      '',
      'text/plain',
      'application/jsonx',
      'application/json; charset=utf-8',
      'multipart/form-data',
      '\u0001',
    ])
    if (rnd() < 0.3) headers.push(`X-Junk: ${'v'.repeat(int(20_000))}`)
    if (rnd() < 0.3) length = pick(['-1', 'abc', '1e3', '99999999999', '0'])
  } else if (kind === 3) {
    body = pick(bodies)()
  } else if (kind === 4) {
    encoding = pick(['gzip', 'br', 'deflate', 'gzip, gzip', 'GZIP'])
    const gz = zlib.gzipSync(JSON.stringify(mutate()))
    body = pick([
      () => gz,
      () => gz.subarray(0, int(gz.length)),
      () => Buffer.concat([gz, Buffer.from('junk')]),
      () => Buffer.from(Array.from({ length: int(500) }, () => int(256))),
      () => zlib.gzipSync(Buffer.alloc(1 << 22, 32)), // a 4 MiB bomb in a few KB
      () => zlib.gzipSync('['.repeat(100_000)),
    ])()
  } else {
    body = JSON.stringify({ ...valid, toBlock: pick([head, head + 5, null, -5, 1e400]) })
  }
  const b = typeof body === 'string' ? Buffer.from(body) : body
  if (contentType) headers.push(`Content-Type: ${contentType}`)
  if (encoding) headers.push(`Content-Encoding: ${encoding}`)
  headers.push(`Content-Length: ${length ?? b.length}`)
  return Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`), b])
}

test('5,000 fuzzed malformed requests: 2xx/4xx only, never a 5xx; the process stays up, memory bounded', async () => {
  const rnd = mulberry32(20261123)
  const N = 5_000
  const counts = new Map<number, number>()
  let peak = 0
  let next = 0
  const worker = async () => {
    while (next < N) {
      const i = next++
      const status = statusOf(await rawExchange(s.port, fuzzedRequest(rnd, i), 15_000))
      counts.set(status, (counts.get(status) ?? 0) + 1)
      if (i % 250 === 0) peak = Math.max(peak, rssOf(s.child.pid!))
    }
  }
  await Promise.all(Array.from({ length: 48 }, worker))
  const table = [...counts].sort((a, b) => a[0] - b[0])
  const total = table.reduce((a, [, n]) => a + n, 0)
  assert.equal(total, N)
  for (const [status, n] of table) {
    assert.ok(status >= 200 && status < 500, `${n} answers with status ${status}: ${JSON.stringify(table)}`)
  }
  assert.ok((counts.get(400) ?? 0) > N / 4, `400s: ${JSON.stringify(table)}`)
  assert.ok((counts.get(405) ?? 0) > 0 && (counts.get(404) ?? 0) > 0)
  assert.equal(s.child.exitCode, null, 'the server is alive')
  assert.equal((await request(`${s.url}${DS}/head`)).status, 200)
  assert.ok(peak < GiB, `peak RSS ${peak >> 20} MiB`)
  assert.ok(!/request failed/.test(s.output()), 'no failure was logged')
  console.log(`fuzz: ${JSON.stringify(table)}, peak RSS ${peak >> 20} MiB`)
})

/** the q-quantile of `xs` (nearest rank) */
function quantile(xs: number[], q: number): number {
  const a = [...xs].sort((x, y) => x - y)
  return a[Math.max(0, Math.ceil(q * a.length) - 1)]
}

test('200 concurrent streams, 50 never reading: memory bounded, others served, a small query answers within 1 s', async () => {
  const idle = rssOf(s.child.pid!)
  // the same small query on the idle server, from the same kind of child process: how slow this
  // box is right now, for the bound below
  const unloaded = await smallQueries(`${s.url}${DS}/stream`, head, 0, Date.now() + 2_500)
  const r = await mixedLoad({
    url: s.url,
    port: s.port,
    pid: s.child.pid!,
    dataset: DS,
    fromBlock: first,
    probeBlock: head,
    clients: { fast: 50, gzip: 40, slow: 30, never: 50, disconnect: 30 },
    durationMs: 12_000,
    addresses: ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'],
  })
  const statuses = JSON.stringify([...r.statuses])
  console.log(
    `load: idle RSS ${idle >> 20} MiB, peak ${r.peakRss >> 20} MiB; small query unloaded ` +
      `${unloaded.map(Math.round).join(' ')} ms; loaded ${r.probes.length} times, median ` +
      `${Math.round(quantile(r.probes, 0.5))}, p90 ${Math.round(quantile(r.probes, 0.9))}, ` +
      `max ${Math.round(Math.max(...r.probes))} ms (${r.probes.map(Math.round).join(' ')}); statuses ${statuses}; ${r.completed} responses read to the end, ` +
      `${r.received >> 20} MiB received; per client (min/median KiB): ` +
      [...r.perClient]
        .map(([k, v]) => {
          const a = [...v].sort((x, y) => x - y)
          return `${k} ${a[0] >> 10}/${a[a.length >> 1] >> 10}`
        })
        .join(', '),
  )
  // 1 GiB: runs of this load on the 2-core box peak at 233-595 MiB since the response loop drops
  // each block's line once written (731-1,330 MiB before, when every stream waiting for its turn
  // kept its last line, 5 MB for the mainnet block; 2.9 GiB without the buffer budget and the
  // render scheduler)
  assert.ok(r.peakRss < GiB, `peak RSS ${r.peakRss >> 20} MiB`)
  assert.ok(r.received > 50 * 2 ** 20, `${r.received >> 20} MiB received by the reading clients`)
  for (const status of r.statuses.keys()) assert.ok(status === 200 || status === 0, statuses)
  assert.ok(r.probes.length >= 5, `${r.probes.length} small queries`)
  assert.ok(unloaded.length >= 1)
  // The target: a small query answers within 1 s under this load. Streams render smallest
  // response first in slices of ~10 ms (RenderScheduler), and a point query renders from a reserve
  // of the stream buffer budget of its own: before that reserve, one or two answers a run took
  // 2.4-3.5 s (the budget was full of 5 MB blocks held by the sockets of the slow and never-reading
  // clients, so nothing rendered until a never-reading client was cut or a slow one took its
  // block). What remains is the event loop's own delay (accepting the connection, reading the
  // request) on a box running other jobs: at load average 8-11 the server process gets a fraction
  // of a core, young-generation GCs take up to 0.4 s, and single answers took up to 1.5 s while
  // the in-memory store rendered strings (median 220-390 ms); rendering bytes, median 75-145 ms,
  // 90th percentile 130-570 ms, max 0.5-0.9 s. So the median and the 90th percentile must be
  // under 1 s (or under 10 times the same query's unloaded latency measured just before, when the
  // box itself is that slow); test/server-hostile.test.ts checks the reserve itself, untimed.
  const bound = Math.max(1_000, 10 * quantile(unloaded, 0.5))
  for (const [name, q] of [
    ['median', 0.5],
    ['p90', 0.9],
  ] as const) {
    const v = quantile(r.probes, q)
    assert.ok(v < bound, `small query ${name} ${Math.round(v)} ms (bound ${Math.round(bound)} ms)`)
  }
  assert.equal(s.child.exitCode, null, 'the server is alive')
})
