/**
 * API keys of `serve` (real HTTP on loopback, in-process server): with keys configured the dataset
 * routes need one (401 text/plain with the reason otherwise), a key limited to some datasets gets
 * 403 on the others and sees only its own in /datasets, each key has its own rate limit and stream
 * cap (one key refused with 429 while another streams from the same address), logs and metrics
 * name the key's id and never the key; keys from a file of hashes, in a header the operator names.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import http from 'node:http'
import { connect } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { serve } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { postJson, request } from './support/http/client.ts'
import { serveOptions } from './support/serve-options.ts'

const work = mkdtempSync(join(tmpdir(), 'solportal-keys-'))
after(() => rmSync(work, { recursive: true, force: true }))

const KEY_A = 'key-of-team-a-0123456789'
const KEY_B = 'key-of-team-b-9876543210'
const KEY_C = 'key-of-team-c-5555555555'
const sha = (k: string) => createHash('sha256').update(k).digest('hex')
const bearer = (k: string) => ({ Authorization: `Bearer ${k}` })

const query = { type: 'solana', fromBlock: 254170887, toBlock: 254170887, fields: { block: { number: true } } }

function captured() {
  const text: string[] = []
  const logger = createLogger({ level: 'info', destination: { write: (s: string) => void text.push(s) } })
  return { text, logger }
}

function write(name: string, value: unknown): string {
  const file = join(work, name)
  writeFileSync(file, JSON.stringify(value))
  return file
}

/** a stream request whose body never completes: it holds a stream slot of its key until closed */
function slowUpload(url: string, headers: Record<string, string>): { close(): void } {
  const req = http.request(url, {
    method: 'POST',
    agent: false,
    headers: { 'Content-Type': 'application/json', 'Content-Length': '100000', ...headers },
  })
  req.on('error', () => {})
  req.write('{"type":')
  return { close: () => req.destroy() }
}

test('keys: 401 without one, 403 off its datasets, own rate limits and stream caps, ids in logs and metrics', async () => {
  write('hashed.json', { keys: [{ id: 'team-b', sha256: sha(KEY_B), maxStreams: 1 }] })
  const config = write('keys.json', {
    sources: { sample: { kind: 'sample' } },
    datasets: [
      { name: 'public', source: 'sample', view: 'stable' },
      { name: 'team', aliases: ['team-alias'], source: 'sample', view: 'stable' },
    ],
    apiKeys: {
      file: 'hashed.json',
      keys: [
        { id: 'team-a', key: KEY_A, rateLimit: 1, datasets: ['team-alias'] },
        { id: 'team-c', sha256: sha(KEY_C) },
      ],
    },
  })
  const { text, logger } = captured()
  const s = await serve(serveOptions({ config, rateLimit: '100' }), { logger })
  try {
    await s.ready
    const base = `${s.url}/datasets`
    // no key, a malformed header, an unknown key: 401 text/plain with the reason
    for (const [headers, reason] of [
      [{}, 'Unauthorized: An API key is required: send it as "Authorization: Bearer KEY"'],
      [{ Authorization: KEY_A }, 'Unauthorized: The Authorization header must be "Bearer KEY"'],
      [bearer('not-a-key-at-all-xxxxx'), 'Unauthorized: Unknown API key'],
    ] as [Record<string, string>, string][]) {
      for (const r of [
        await request(base, { headers }),
        await request(`${base}/public/head`, { headers }),
        await postJson(`${base}/public/stream`, query, headers),
      ]) {
        assert.equal(r.status, 401)
        assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8')
        assert.equal(r.headers['www-authenticate'], 'Bearer realm="solportal"')
        assert.equal(r.text, reason)
      }
    }
    // probes and the metrics need none
    assert.equal((await request(`${s.url}/health`)).status, 200)
    assert.equal((await request(`${s.url}/metrics`)).status, 200)

    // team-a may use `team` (listed by its alias) only
    const listA = JSON.parse((await request(base, { headers: bearer(KEY_A) })).text) as { dataset: string }[]
    assert.deepEqual(
      listA.map((d) => d.dataset),
      ['team'],
    )
    const listB = JSON.parse((await request(base, { headers: bearer(KEY_B) })).text) as { dataset: string }[]
    assert.deepEqual(
      listB.map((d) => d.dataset),
      ['public', 'team'],
    )
    const denied = await postJson(`${base}/public/stream`, query, bearer(KEY_A))
    assert.equal(denied.status, 403)
    assert.equal(denied.headers['content-type'], 'text/plain; charset=utf-8')
    assert.equal(denied.text, `Forbidden: API key 'team-a' may not use dataset "public"`)

    // stream caps per key: team-b (1 stream) holds its slot with an unfinished upload; its next
    // stream is refused while team-c streams from the same address
    const held = slowUpload(`${base}/public/stream`, bearer(KEY_B))
    try {
      let refused: Awaited<ReturnType<typeof postJson>> | undefined
      for (let i = 0; i < 100 && refused?.status !== 429; i++) {
        refused = await postJson(`${base}/public/stream`, query, bearer(KEY_B))
        if (refused.status !== 429) await new Promise((r) => setTimeout(r, 20))
      }
      assert.equal(refused!.status, 429)
      assert.equal(refused!.text, 'Too many concurrent streams with this API key, retry later')
      assert.equal((await postJson(`${base}/public/stream`, query, bearer(KEY_C))).status, 200)
    } finally {
      held.close()
    }

    // rate limits per key: team-a (1/s, a burst of 2) is refused while team-c goes on streaming
    const a = [] as number[]
    for (let i = 0; i < 3; i++) a.push((await postJson(`${base}/team/stream`, query, bearer(KEY_A))).status)
    assert.deepEqual(a, [200, 200, 429])
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${base}/team/stream`, query, bearer(KEY_C))
      assert.equal(r.status, 200)
      assert.equal(JSON.parse(r.text).header.number, 254170887)
    }

    // metrics by key id
    const m = (await request(`${s.url}/metrics`)).text
    assert.match(m, /solportal_key_requests_total\{key="team-a",endpoint="stream",status="429"\} 1\n/)
    assert.match(m, /solportal_key_requests_total\{key="team-a",endpoint="stream",status="403"\} 1\n/)
    assert.match(m, /solportal_key_requests_total\{key="team-c",endpoint="stream",status="200"\} 4\n/)
    assert.match(m, /solportal_key_response_bytes_total\{key="team-c"\} [1-9]/)
    assert.doesNotMatch(m, /key="(?!team-[abc]")/)

    // a request the HTTP parser refuses is logged with its first bytes: the key is not among them
    await new Promise<void>((resolve) => {
      const port = Number(new URL(s.url).port)
      const sock = connect(port, '127.0.0.1', () =>
        sock.end(`GET /datasets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY_B}\r\nBad\x01Header: 1\r\n\r\n`),
      )
      sock.on('data', () => {})
      sock.on('error', () => resolve())
      sock.on('close', () => resolve())
    })
    for (let i = 0; i < 100 && !text.join('').includes('refused by the HTTP parser'); i++)
      await new Promise((r) => setTimeout(r, 10))
    assert.match(text.join(''), /Authorization: \[redacted\]/)
  } finally {
    await s.stop()
  }
  // access lines carry the key's id; no line carries a key
  const log = text.join('')
  assert.match(log, /"key":"team-a"/)
  assert.match(log, /"key":"team-c"/)
  for (const k of [KEY_A, KEY_B, KEY_C]) assert.ok(!log.includes(k), 'a key was logged')
})

test('keys from a file of hashes in a header the operator names; without keys nothing is asked', async () => {
  const file = write('flag-keys.json', { keys: [{ id: 'ops', sha256: sha(KEY_A) }] })
  // 1 request/s, a burst of 2, per address and (by default) per key
  const s = await serve(serveOptions({ apiKeys: [file], apiKeyHeader: 'X-Api-Key', rateLimit: '1' }), {
    logger: createLogger({ level: 'silent' }),
  })
  try {
    await s.ready
    const url = `${s.url}/datasets/solana-mainnet/stream`
    const r = await postJson(url, query, bearer(KEY_A))
    assert.equal(r.status, 401)
    assert.equal(r.text, 'Unauthorized: An API key is required: send it in the x-api-key header')
    assert.equal((await postJson(url, query, { 'X-Api-Key': KEY_A })).status, 200)
    // refused keys take their address's tokens: guessing is rate limited
    assert.equal((await postJson(url, query, { 'X-Api-Key': KEY_B })).status, 401)
    const guess = await postJson(url, query, { 'X-Api-Key': KEY_C })
    assert.equal(guess.status, 429)
    assert.equal(guess.text, 'Too many requests')
    // while the key's own bucket still has a token
    assert.equal((await postJson(url, query, { 'X-Api-Key': KEY_A })).status, 200)
  } finally {
    await s.stop()
  }
  const open = await serve(serveOptions(), { logger: createLogger({ level: 'silent' }) })
  try {
    await open.ready
    assert.equal((await postJson(`${open.url}/datasets/solana-mainnet/stream`, query)).status, 200)
    assert.equal((await request(`${open.url}/datasets`)).status, 200)
  } finally {
    await open.stop()
  }
})

test('wrong keys are refused before the server starts, naming where', async () => {
  const ds = [{ name: 'a', source: { kind: 'sample' } }]
  const cases: [unknown, RegExp][] = [
    [{ datasets: ds, apiKeys: { keys: [{ id: 'x' }] } }, /apiKeys\.keys\[0\]: needs either "key" or "sha256"/],
    [{ datasets: ds, apiKeys: { keys: [{ id: 'x', key: 'short' }] } }, /apiKeys\.keys\[0\]\.key: must be 16 to 256/],
    [
      { datasets: ds, apiKeys: { keys: [{ id: 'x', sha256: 'abc' }] } },
      /apiKeys\.keys\[0\]\.sha256: must be 64 lowercase hex/,
    ],
    [
      { datasets: ds, apiKeys: { keys: [{ id: 'x', key: KEY_A, datasets: ['b'] }] } },
      /apiKeys\.keys\[0\]\.datasets\[0\]: no dataset named 'b'/,
    ],
    [
      {
        datasets: ds,
        apiKeys: {
          keys: [
            { id: 'x', key: KEY_A },
            { id: 'x', key: KEY_B },
          ],
        },
      },
      /apiKeys\.keys\[1\]\.id: the id 'x' is also the id of apiKeys\.keys\[0\]/,
    ],
    [
      {
        datasets: ds,
        apiKeys: {
          keys: [
            { id: 'x', key: KEY_A },
            { id: 'y', sha256: sha(KEY_A) },
          ],
        },
      },
      /apiKeys\.keys\[1\]: the same key as apiKeys\.keys\[0\]/,
    ],
    [{ datasets: ds, apiKeys: { header: 'X-Key' } }, /apiKeys\.header: no key is configured/],
    [{ datasets: ds, apiKeys: { file: 'absent.json' } }, /absent\.json: no such file/],
  ]
  for (const [i, [value, want]] of cases.entries()) {
    const config = write(`bad-keys-${i}.json`, value)
    await assert.rejects(serve(serveOptions({ config }), { logger: createLogger({ level: 'silent' }) }), (e: Error) => {
      assert.equal(e.name, 'UsageError')
      assert.match(e.message, want)
      return true
    })
  }
})
