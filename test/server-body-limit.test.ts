/**
 * The query body limit over real HTTP on loopback: the default lets the default 100,000 filter
 * values through, a chunked body stops at the same limit as a Content-Length one, a gzip body is
 * measured decoded (a bomb is cut off), and `solportal serve` wires --max-body-bytes and
 * --max-filter-values through.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import http from 'node:http'
import { after, before, test } from 'node:test'
import zlib from 'node:zlib'
import { DEFAULT_MAX_BODY_BYTES, bodyLimitFor } from '../src/server/body.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { DEFAULT_LIMITS, PortalServer, type ServerLimits } from '../src/server/http.ts'
import { StaticStore } from '../src/store/static.ts'
import { base58Encode } from '../src/util/base58.ts'
import { makePools, randomBlocks } from './support/random-blocks.ts'
import { postJson, request, type Reply } from './support/http/client.ts'

const blocks = randomBlocks(7, { blocks: 20, pools: makePools(3) })
const FIRST = blocks[0].header.number
const LAST = blocks[blocks.length - 1].header.number
const servers: PortalServer[] = []

async function start(limits: Partial<ServerLimits> = {}): Promise<string> {
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'd', aliases: [], store: new StaticStore(blocks), realTime: false }]),
    limits,
    rateLimit: null,
    log: () => {},
  })
  servers.push(server)
  return `${await server.listen(0, '127.0.0.1')}/datasets/d/stream`
}

after(async () => {
  for (const s of servers) await s.close()
})

/** n distinct valid addresses (44 characters each when the first byte is large) */
function addresses(n: number): string[] {
  const out: string[] = []
  const b = new Uint8Array(32)
  b.fill(0xff)
  for (let i = 0; i < n; i++) {
    b[28] = i >>> 24
    b[29] = (i >>> 16) & 0xff
    b[30] = (i >>> 8) & 0xff
    b[31] = i & 0xff
    out.push(base58Encode(b))
  }
  return out
}

/** POST `body` with Content-Length, or chunked (several writes, no Content-Length) */
function post(
  url: string,
  body: Buffer,
  mode: 'length' | 'chunked',
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { 'Content-Type': 'application/json', ...headers }
    if (mode === 'length') h['Content-Length'] = String(body.length)
    const req = http.request(url, { method: 'POST', headers: h, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const raw = Buffer.concat(chunks)
        const text = res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw).toString() : raw.toString()
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, raw })
      })
    })
    // the server may answer 400 and close before the whole body is written
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') reject(e)
    })
    if (mode === 'length') req.end(body)
    else {
      const piece = 64 * 1024
      for (let o = 0; o < body.length; o += piece) req.write(body.subarray(o, o + piece))
      req.end()
    }
  })
}

/** a query body of exactly `size` bytes (padded with spaces, which JSON ignores) */
function queryOfSize(size: number, extra: Record<string, unknown> = {}): Buffer {
  const text = JSON.stringify({ fromBlock: FIRST, toBlock: FIRST, fields: { block: { number: true } }, ...extra })
  assert.ok(text.length <= size)
  return Buffer.from(text + ' '.repeat(size - text.length))
}

let base: string
before(async () => {
  base = await start()
})

test('the default body limit fits the default 100,000 filter values (8 MiB, ~4.6 MB needed)', async () => {
  assert.equal(DEFAULT_LIMITS.maxBodyBytes, DEFAULT_MAX_BODY_BYTES)
  assert.equal(DEFAULT_MAX_BODY_BYTES, 8 * 1024 * 1024)
  const list = addresses(DEFAULT_LIMITS.maxFilterValues)
  assert.ok(list.every((a) => a.length === 44))
  // one of them is an account of the data: the request really filters with them
  const account = blocks.flatMap((b) => b.transactions.map((t) => t.feePayer))[0]
  list[list.length - 1] = account
  const q = {
    fromBlock: FIRST,
    toBlock: LAST,
    fields: { transaction: { feePayer: true } },
    transactions: [{ feePayer: list }],
  }
  const body = Buffer.from(JSON.stringify(q))
  assert.ok(body.length > 4_500_000 && body.length < DEFAULT_MAX_BODY_BYTES, `${body.length} bytes`)
  for (const mode of ['length', 'chunked'] as const) {
    const r = await post(base, body, mode)
    assert.equal(r.status, 200, r.text.slice(0, 200))
    const payers = r.text
      .split('\n')
      .filter((l) => l)
      .flatMap((l) => (JSON.parse(l).transactions ?? []).map((t: { feePayer: string }) => t.feePayer))
    assert.ok(payers.length > 0 && payers.every((p: string) => p === account))
  }
  // gzip: the compressed body is smaller, the limit applies to the decoded one
  const r = await post(base, zlib.gzipSync(body), 'length', { 'Content-Encoding': 'gzip' })
  assert.equal(r.status, 200, r.text.slice(0, 200))
  // one more value is the filter value limit's 400, naming it
  list.push(addresses(DEFAULT_LIMITS.maxFilterValues + 1)[DEFAULT_LIMITS.maxFilterValues])
  const over = await postJson(base, { ...q, transactions: [{ feePayer: list }] })
  assert.equal(over.status, 400)
  assert.match(over.text, /^Bad request: \.transactions\[0\]\.feePayer: 100001 values, .*maxFilterValues/)
})

test('chunked and Content-Length bodies stop at the same limit, naming it', async () => {
  const limit = 64 * 1024
  const url = await start({ maxBodyBytes: limit })
  for (const mode of ['length', 'chunked'] as const) {
    const atLimit = await post(url, queryOfSize(limit), mode)
    assert.equal(atLimit.status, 200, `${mode} at the limit: ${atLimit.text}`)
    // one byte over (and a bit more: chunked framing must not buy any slack)
    for (const size of [limit + 1, limit + 1000]) {
      const r = await post(url, queryOfSize(size), mode)
      assert.equal(r.status, 400, `${mode}, ${size} bytes`)
      assert.equal(
        r.text,
        `Bad request: request body is larger than the limit of ${limit} bytes (limit maxBodyBytes, --max-body-bytes)`,
      )
    }
  }
})

test('gzip bodies count decoded bytes; a gzip bomb is cut off at the limit', async () => {
  const limit = 64 * 1024
  const url = await start({ maxBodyBytes: limit })
  const gz = { 'Content-Encoding': 'gzip' }
  assert.equal((await post(url, zlib.gzipSync(queryOfSize(limit)), 'chunked', gz)).status, 200)
  const over = await post(url, zlib.gzipSync(queryOfSize(limit + 1)), 'length', gz)
  assert.equal(over.status, 400)
  assert.match(over.text, /larger than the limit of 65536 bytes/)
  // 32 MiB of spaces compress to ~32 KB, under the limit: the decoded size must refuse it
  const text = JSON.stringify({ fromBlock: FIRST })
  const bomb = zlib.gzipSync(Buffer.concat([Buffer.from(text), Buffer.alloc(32 << 20, 0x20)]), { level: 9 })
  assert.ok(bomb.length < limit, `${bomb.length} bytes compressed`)
  const r = await post(url, bomb, 'chunked', gz)
  assert.equal(r.status, 400)
  assert.match(r.text, /larger than the limit of 65536 bytes/)
  // not gzip at all
  const bad = await post(url, Buffer.from('{"fromBlock":0}'), 'length', gz)
  assert.equal(bad.status, 400)
  assert.match(bad.text, /not valid gzip/)
})

test('an unknown dataset name is echoed escaped in the 404', async () => {
  const r = await request(base.replace('/datasets/d/stream', '/datasets/a%0Ab%22c%00/metadata'))
  assert.equal(r.status, 404)
  assert.equal(r.text, 'Dataset "a\\nb\\"c\\u0000" not found')
})

test('bodyLimitFor: the body limit follows a larger filter value limit', () => {
  assert.equal(bodyLimitFor(100_000), DEFAULT_MAX_BODY_BYTES)
  assert.ok(bodyLimitFor(1_000_000) >= 1_000_000 * 47)
})

test('serve --max-body-bytes and --max-filter-values reach the server', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--port',
      '0',
      '--max-body-bytes',
      '2000',
      '--max-filter-values',
      '3',
      '--rate-limit',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  try {
    let out = ''
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer) => {
        out += d.toString()
        const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out)
        if (m) resolve(m[1])
      }
      child.stdout.on('data', onData)
      child.stderr.on('data', onData)
      child.on('exit', (code) => reject(new Error(`serve exited (${code}): ${out}`)))
    })
    // wait until the sample is loaded
    for (;;) {
      const r = await request(`${url}/datasets/solana-mainnet/head`)
      if (r.status === 200) break
      await new Promise((res) => setTimeout(res, 200))
    }
    const stream = `${url}/datasets/solana-mainnet/stream`
    const four = addresses(4)
    let r = await postJson(stream, { fromBlock: 254170887, toBlock: 254170887, transactions: [{ feePayer: four }] })
    assert.equal(r.status, 400)
    assert.match(r.text, /feePayer: 4 values, but at most 3 are allowed/)
    r = await postJson(stream, {
      fromBlock: 254170887,
      toBlock: 254170887,
      transactions: [{ feePayer: four.slice(1) }],
    })
    assert.equal(r.status, 200, r.text)
    r = await post(stream, Buffer.from(JSON.stringify({ fromBlock: 254170887 }) + ' '.repeat(2000)), 'chunked')
    assert.equal(r.status, 400)
    assert.match(r.text, /limit of 2000 bytes/)
  } finally {
    child.kill('SIGTERM')
  }
})

test('deep nesting and container-packed bodies are refused before JSON.parse, naming the limit', async () => {
  const size = DEFAULT_MAX_BODY_BYTES - 1024
  const refused: [Buffer, RegExp][] = [
    // 8 MB of `[`: JSON.parse held the event loop ~3 s on it
    [Buffer.alloc(size, '['), /^Bad request: request body nests JSON deeper than 32 levels \(JSON nesting limit\)$/],
    // nested inside a valid-looking query
    [
      Buffer.from(`{"fromBlock":${FIRST},"transactions":[${'['.repeat(40)}${']'.repeat(40)}]}`),
      /nests JSON deeper than 32 levels/,
    ],
    // `[[],[],…]`: shallow, but one array per 3 bytes (JSON.parse took as long as the deep one)
    [
      Buffer.from(`[${'[],'.repeat(Math.floor(size / 3) - 1)}[]]`),
      /^Bad request: request body holds more than 10000 JSON arrays and objects \(limit: 64 per item request/,
    ],
    [
      Buffer.from(`[${'0,'.repeat(Math.floor(size / 2) - 1)}0]`),
      /^Bad request: request body holds more than 1000000 JSON values \(limit: 4 per filter value allowed/,
    ],
  ]
  for (const [body, want] of refused) {
    for (const mode of ['length', 'chunked'] as const) {
      const r = await post(base, body, mode)
      assert.equal(r.status, 400, `${body.subarray(0, 40)}: ${r.text.slice(0, 200)}`)
      assert.match(String(r.headers['content-type']), /^text\/plain/)
      assert.match(r.text, want)
    }
  }
  // brackets inside strings are text, not nesting (an escaped quote does not end the string)
  const inString = await postJson(base, { fromBlock: FIRST, type: `\\"${'['.repeat(100)}` })
  assert.equal(inString.status, 400)
  assert.match(inString.text, /unsupported dataset type/)
})

test('the nesting and value limits let the largest real queries through', async () => {
  // the most item requests allowed, each an instruction request with every kind of filter list
  // (a0..a15, programId, d8, mentionsAccount): ~2,000 containers, 4 levels deep
  const list = addresses(20)
  const account = blocks.flatMap((b) => b.transactions.map((t) => t.feePayer))[0]
  const req = (i: number) => {
    const r: Record<string, unknown> = { programId: list, mentionsAccount: list, isCommitted: true }
    for (let k = 0; k < 16; k++) r[`a${k}`] = list
    r.d8 = ['0x' + '00'.repeat(8), '0x' + 'ff'.repeat(8)]
    return i === 0 ? { ...r, programId: [...list, account] } : r
  }
  const items = DEFAULT_LIMITS.maxItemRequests
  const q = {
    fromBlock: FIRST,
    toBlock: LAST,
    fields: { instruction: { programId: true }, transaction: { feePayer: true } },
    instructions: Array.from({ length: items - 1 }, (_, i) => req(i)),
    transactions: [{ feePayer: [...addresses(80_000), account] }],
  }
  const body = Buffer.from(JSON.stringify(q))
  assert.ok(body.length < DEFAULT_MAX_BODY_BYTES, `${body.length} bytes`)
  const r = await post(base, body, 'length')
  assert.equal(r.status, 200, r.text.slice(0, 300))
  assert.ok(r.text.split('\n').some((l) => l.includes(account)))
  // 32 levels deep is allowed by the scan (the query's own validation answers)
  const deep = await post(base, Buffer.from(`{"fromBlock":${FIRST},"x":${'['.repeat(31)}${']'.repeat(31)}}`), 'length')
  assert.equal(deep.status, 400)
  assert.doesNotMatch(deep.text, /nests JSON/)
})
