/**
 * Observability of `serve` (run in-process, real HTTP on loopback): the port opens before the
 * datasets load (/health 200, /ready and dataset routes 503 + Retry-After, then 200), one JSON
 * access line per request with its request id, and Prometheus metrics at /metrics — including
 * the ingest lag following a fake Solana node (real JSON-RPC) while its blocks cannot be fetched
 * and after they can again.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { serve } from '../src/cli/commands/serve.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { createLogger } from '../src/log.ts'
import { postJson, request } from './support/http/client.ts'
import { serveOptions } from './support/serve-options.ts'
import { defaultRenderThreads } from '../src/server/render-threads.ts'

const options = serveOptions

/** a logger whose JSON lines are collected */
function captured() {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({ level: 'info', destination: { write: (s: string) => void lines.push(JSON.parse(s)) } })
  return { lines, logger }
}

async function until<T>(what: string, get: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const t0 = Date.now()
  for (;;) {
    const v = await get()
    if (v !== undefined) return v
    if (Date.now() - t0 > ms) throw new Error(`${what}: not reached in ${ms} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** the value of one sample of a Prometheus text exposition, undefined when absent */
/** the metric names a scrape exports (a histogram's as its series: _bucket, _sum, _count) */
function exportedMetrics(text: string): Set<string> {
  const names = new Set<string>()
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1])
    if (m[2] === 'histogram' || m[2] === 'summary') for (const s of ['_bucket', '_sum', '_count']) names.add(m[1] + s)
  }
  return names
}

/** the PromQL expressions of the shipped alert rules and Grafana dashboard */
function shippedExpressions(): { file: string; expr: string }[] {
  const root = join(import.meta.dirname, '..')
  const out: { file: string; expr: string }[] = []
  const rules = 'deploy/prometheus/alerts.yml'
  for (const m of readFileSync(join(root, rules), 'utf8').matchAll(/^\s*expr:\s*(.+)$/gm))
    out.push({ file: rules, expr: m[1].trim() })
  const dash = 'deploy/grafana/solportal-dashboard.json'
  const panels = (JSON.parse(readFileSync(join(root, dash), 'utf8')) as { panels: { targets: { expr: string }[] }[] })
    .panels
  for (const p of panels) for (const t of p.targets) out.push({ file: dash, expr: t.expr })
  return out
}

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3])
  }
  return undefined
}

const query = {
  type: 'solana',
  fromBlock: 254170887,
  toBlock: 254170887,
  fields: { block: { number: true } },
}

test('the port opens before the datasets load; access lines for 200, 400, 404, 429 and 503; request metrics', async () => {
  const { lines, logger } = captured()
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const s = await serve(options({ rateLimit: '1' }), { logger, beforeLoad: () => gate })
  const base = `${s.url}/datasets/solana-mainnet`
  try {
    // loading: alive, not ready, dataset routes 503 with Retry-After
    assert.equal((await request(`${s.url}/health`)).status, 200)
    const notReady = await request(`${s.url}/ready`)
    assert.equal(notReady.status, 503)
    assert.equal(notReady.headers['retry-after'], '1')
    const early = await postJson(`${base}/stream`, query, { 'X-Request-Id': 'early-1' })
    assert.equal(early.status, 503)
    assert.equal(early.headers['retry-after'], '1')
    assert.equal(early.headers['x-request-id'], 'early-1')
    assert.equal((await request(`${base}/head`)).status, 503)
    assert.equal((await request(`${base}/metadata`)).status, 503)

    release()
    await s.ready
    assert.equal((await request(`${s.url}/ready`)).status, 200)
    const head = JSON.parse((await request(`${base}/head`)).text) as { number: number }

    const ok = await postJson(`${base}/stream`, query)
    assert.equal(ok.status, 200)
    assert.match(String(ok.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const bad = await postJson(`${base}/stream`, { ...query, fromBlock: 'x' }, { 'X-Request-Id': 'not a sane id' })
    assert.equal(bad.status, 400)
    assert.notEqual(bad.headers['x-request-id'], 'not a sane id')
    // 1 request/s, burst 2: the third stream request within a second is refused
    let limited
    for (let i = 0; i < 20 && !limited; i++) {
      const r = await postJson(`${base}/stream`, query)
      if (r.status === 429) limited = r
    }
    assert.ok(limited, 'a 429')
    const missing = await request(`${s.url}/datasets/nope/head`)
    assert.equal(missing.status, 404)

    // one access line per request, with its id, status, bytes, duration and client
    const lineOf = (id: string) =>
      until(`access line of ${id}`, () => lines.find((l) => l.msg === 'request' && l.reqId === id))
    const expect = [
      [early, 503, 'stream', undefined],
      [ok, 200, 'stream', 'solana-mainnet'],
      [bad, 400, 'stream', 'solana-mainnet'],
      [limited, 429, 'stream', 'solana-mainnet'],
      [missing, 404, 'head', undefined],
    ] as const
    for (const [reply, status, endpoint, dataset] of expect) {
      const l = await lineOf(String(reply.headers['x-request-id']))
      assert.equal(l.status, status)
      assert.equal(l.endpoint, endpoint)
      assert.equal(l.dataset, dataset)
      assert.equal(l.client, '127.0.0.1')
      assert.equal(l.bytes, reply.raw.length, `bytes of the ${status}`)
      assert.equal(typeof l.durationMs, 'number')
      assert.ok(String(l.path).startsWith(endpoint === 'head' ? '/datasets/nope/head' : '/datasets/solana-mainnet/'))
      assert.ok(l.method === 'POST' || l.method === 'GET')
    }
    assert.ok(ok.raw.length > 0)

    const m = await request(`${s.url}/metrics`)
    assert.equal(m.status, 200)
    assert.match(String(m.headers['content-type']), /^text\/plain/)
    const stream200 = { endpoint: 'stream', dataset: 'solana-mainnet', status: '200' }
    assert.equal(sample(m.text, 'solportal_http_requests_total', stream200), 1)
    assert.ok(sample(m.text, 'solportal_http_requests_total', { endpoint: 'stream', status: '429' })! >= 1)
    assert.equal(sample(m.text, 'solportal_http_requests_total', { endpoint: 'stream', dataset: '', status: '503' }), 1)
    assert.equal(sample(m.text, 'solportal_http_requests_total', { endpoint: 'head', dataset: '', status: '404' }), 1)
    assert.equal(sample(m.text, 'solportal_stream_duration_seconds_count', stream200), 1)
    assert.ok(
      sample(m.text, 'solportal_http_response_bytes_total', { endpoint: 'stream', dataset: 'solana-mainnet' })! >=
        ok.raw.length,
    )
    assert.equal(sample(m.text, 'solportal_head_block', { dataset: 'solana-mainnet' }), head.number)
    assert.equal(sample(m.text, 'solportal_finalized_head_block', { dataset: 'solana-mainnet-complete' }), head.number)
    assert.equal(sample(m.text, 'solportal_active_streams'), 0)
    assert.ok(sample(m.text, 'solportal_process_resident_memory_bytes')! > 0)
  } finally {
    release()
    await s.stop()
  }
})

/** one raw HTTP/1.1 exchange (bytes as given, no client-side checks); resolves with the status line */
function rawRequest(port: number, head: Uint8Array, body: Uint8Array = Buffer.alloc(0)): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1')
    let got = ''
    sock.on('data', (d) => (got += d.toString('latin1')))
    sock.on('error', reject)
    sock.on('close', () => resolve(got.split('\r\n')[0]))
    sock.write(Buffer.concat([head, body]))
  })
}

test('access lines stay one JSON line each whatever the request carries (control characters, raw bytes, long paths)', async () => {
  const writes: string[] = []
  const logger = createLogger({ level: 'info', destination: { write: (s: string) => void writes.push(s) } })
  const s = await serve(options(), { logger })
  const port = Number(new URL(s.url).port)
  try {
    await s.ready
    const body = Buffer.from('{"type":"solana","fromBlock":0,"fields":{"block":{"n\\u000a\\u001b[2Jx":true}}}')
    const hostile: [string, Uint8Array, Uint8Array?][] = [
      [
        'escaped line breaks and an ANSI escape',
        Buffer.from('GET /datasets/%0A%0D%1B[31mfake%00/head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      ],
      [
        'raw bytes above 0x7f',
        Buffer.concat([
          Buffer.from('GET /datasets/solana-mainnet/head?q='),
          Buffer.from([0xff, 0xc3, 0x28, 0x85]),
          Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        ]),
      ],
      [
        'a tab in the request id',
        Buffer.from(
          'GET /datasets/solana-mainnet/head HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\tb\r\nConnection: close\r\n\r\n',
        ),
      ],
      ['a long path', Buffer.from(`GET /${'%0A'.repeat(3000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)],
      [
        'a body with escaped control characters',
        Buffer.from(
          `POST /datasets/solana-mainnet/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        ),
        body,
      ],
    ]
    for (const [what, head, b] of hostile) {
      const status = await rawRequest(port, head, b)
      assert.match(status, /^HTTP\/1\.1 [2-4]\d\d /, `${what}: ${status}`)
    }
    await until('an access line per request', () =>
      writes.filter((w) => /"msg":"request( refused|")/.test(w)).length >= hostile.length ? true : undefined,
    )
    for (const w of writes) {
      assert.ok(w.endsWith('\n') && w.indexOf('\n') === w.length - 1, `one line per write: ${JSON.stringify(w)}`)
      assert.ok(
        !/[\u0000-\u0009\u000b-\u001f\u007f\u2028\u2029]/.test(w),
        `no raw control character: ${JSON.stringify(w)}`,
      )
      JSON.parse(w)
    }
    const paths = writes
      .map((w) => JSON.parse(w) as Record<string, unknown>)
      .filter((l) => l.msg === 'request')
      .map((l) => String(l.path))
    assert.ok(paths.includes('/datasets/%0A%0D%1B[31mfake%00/head'), paths.join('\n'))
    assert.ok(
      paths.every((p) => p.length <= 1000),
      'paths are cut',
    )
  } finally {
    await s.stop()
  }
})

test('/metrics follows the ingest lag behind a fake node; cold cache and block counters', async () => {
  const node = await FakeSolanaNode.start({ intervalMs: 0, initialBlocks: 12, finalityLag: 4, txPerBlock: 2, seed: 5 })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-metrics-'))
  const { logger } = captured()
  const s = await serve(options({ rpc: node.url, dataDir: dir }), { logger })
  const scrape = async () => (await request(`${s.url}/metrics`)).text
  const ds = { dataset: 'solana-mainnet' }
  try {
    await s.ready
    await until('ready', async () => ((await request(`${s.url}/ready`)).status === 200 ? true : undefined))
    // caught up: no lag
    await until('caught up', async () => {
      const t = await scrape()
      return sample(t, 'solportal_node_head_slot', ds) === node.tip.slot &&
        sample(t, 'solportal_head_block', ds) === node.tip.slot
        ? t
        : undefined
    })
    let t = await scrape()
    assert.equal(sample(t, 'solportal_ingest_lag_slots', ds), 0)
    assert.equal(sample(t, 'solportal_ingest_lag_seconds', ds), 0)
    const blocks0 = sample(t, 'solportal_ingest_blocks_total', ds)!
    assert.ok(blocks0 >= 1)
    // --cache-mb (192) is split evenly between the main thread's store and the render threads'
    assert.equal(
      sample(t, 'solportal_cold_cache_max_bytes', ds),
      Math.floor((192 * 1024 * 1024) / (defaultRenderThreads() + 1)),
    )
    assert.ok(sample(t, 'solportal_cold_cache_hits_total', ds)! >= 0)

    // the node's new blocks cannot be fetched ("not available yet"): the lag grows
    const stored = node.tip.slot
    node.setFaults({ notYetRate: 1 })
    for (let i = 0; i < 5; i++) node.produce()
    const behind = node.tip.slot - stored
    const lagging = await until('lag in slots', async () => {
      const x = await scrape()
      return sample(x, 'solportal_ingest_lag_slots', ds) === behind ? x : undefined
    })
    assert.equal(sample(lagging, 'solportal_head_block', ds), stored)
    const sec1 = sample(lagging, 'solportal_ingest_lag_seconds', ds)!
    const later = await until('lag in seconds grows', async () => {
      const x = await scrape()
      return sample(x, 'solportal_ingest_lag_seconds', ds)! > sec1 + 0.2 ? x : undefined
    })
    assert.equal(sample(later, 'solportal_ingest_lag_slots', ds), behind)

    // fetchable again: the lag goes back to 0 and the block counter moved by the new blocks
    node.setFaults({ notYetRate: 0 })
    t = await until('caught up again', async () => {
      const x = await scrape()
      return sample(x, 'solportal_ingest_lag_slots', ds) === 0 &&
        sample(x, 'solportal_head_block', ds) === node.tip.slot
        ? x
        : undefined
    })
    assert.equal(sample(t, 'solportal_ingest_lag_seconds', ds), 0)
    assert.ok(sample(t, 'solportal_ingest_blocks_total', ds)! >= blocks0 + 5)

    // the cold store's cache: a query over finalized blocks reads columns (misses), the same query
    // again finds them (hits)
    const fin = await until('finalized blocks in the cold store', async () => {
      const h = JSON.parse((await request(`${s.url}/datasets/solana-mainnet/finalized-head`)).text) as {
        number: number
      } | null
      return h ?? undefined
    })
    const coldQuery = {
      type: 'solana',
      fromBlock: (
        JSON.parse((await request(`${s.url}/datasets/solana-mainnet/metadata`)).text) as { start_block: number }
      ).start_block,
      toBlock: fin.number,
      fields: { block: { number: true }, instruction: { programId: true, data: true } },
      instructions: [{}],
    }
    const count = async (what: string) => sample(await scrape(), `solportal_cold_cache_${what}_total`, ds)!
    const hits0 = await count('hits')
    assert.equal((await postJson(`${s.url}/datasets/solana-mainnet/finalized-stream`, coldQuery)).status, 200)
    const misses1 = await count('misses')
    const hits1 = await count('hits')
    assert.ok(misses1 > 0, `misses ${misses1}`)
    assert.equal((await postJson(`${s.url}/datasets/solana-mainnet/finalized-stream`, coldQuery)).status, 200)
    assert.ok((await count('hits')) > hits1, 'the repeated query is answered from the cache')
    assert.ok(hits1 >= hits0)
    assert.ok(sample(await scrape(), 'solportal_cold_cache_bytes', ds)! > 0)

    // the shipped alert rules and dashboard name only metrics that this server exports
    const exported = exportedMetrics(await scrape())
    const shipped = shippedExpressions()
    assert.ok(shipped.length >= 20, `${shipped.length} expressions read from deploy/`)
    for (const { file, expr } of shipped) {
      const names = expr.match(/\bsolportal_[a-z0-9_]+/g) ?? []
      assert.ok(names.length > 0 || expr.startsWith('up{'), `${file}: ${expr} names no solportal metric`)
      for (const name of names) assert.ok(exported.has(name), `${file}: ${name} (in ${expr}) is not exported`)
    }
  } finally {
    await s.stop()
    await node.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a dataset that fails to load: ready rejects, the error is logged and the port closes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-badload-'))
  const file = join(dir, 'bad.jsonl')
  writeFileSync(file, '{"slot":1,"block":\n')
  const { lines, logger } = captured()
  const s = await serve(options({ archive: [file] }), { logger })
  try {
    await assert.rejects(s.ready, /bad\.jsonl:1/)
    assert.ok(lines.some((l) => l.level === 'error' && String(l.msg).startsWith('loading the datasets failed')))
    await assert.rejects(request(`${s.url}/health`), /ECONNREFUSED/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
