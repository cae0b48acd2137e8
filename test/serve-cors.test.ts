/**
 * CORS of `serve --cors ORIGIN...` (real HTTP on loopback, in-process server): preflights from an
 * allowed origin answered 204 (no API key needed), from another one 403 with the reason; answers
 * to an allowed origin carry Access-Control-Allow-Origin and expose the X-Sqd-* headers, errors
 * included; without --cors nothing changes (OPTIONS 405, no CORS header). Then the same from a page
 * on another origin in headless Chromium (skipped, with the reason printed, where it cannot be had).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import http from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { chromium } from 'playwright-core'
import { CHROMIUM, ensureChromium } from '../scripts/chromium.ts'
import { serve, type Serving } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { postJson, request } from './support/http/client.ts'
import { serveOptions } from './support/serve-options.ts'

const work = mkdtempSync(join(tmpdir(), 'solportal-cors-'))
after(() => rmSync(work, { recursive: true, force: true }))
const silent = createLogger({ level: 'silent' })

const APP = 'https://app.example.com'
const KEY = 'a-key-for-the-browser-tests'
const query = { type: 'solana', fromBlock: 254170887, toBlock: 254170887, fields: { block: { number: true } } }

function keyFile(): string {
  const file = join(work, 'keys.json')
  writeFileSync(file, JSON.stringify({ keys: [{ id: 'web', sha256: createHash('sha256').update(KEY).digest('hex') }] }))
  return file
}

const preflight = (url: string, origin: string, headers = 'content-type, authorization') =>
  request(url, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': headers },
  })

test('preflights answered for the allowed origins, X-Sqd-* headers exposed, errors readable; nothing changes without --cors', async () => {
  const s = await serve(serveOptions({ cors: [APP, 'http://localhost:8080'], apiKeys: [keyFile()] }), {
    logger: silent,
  })
  try {
    await s.ready
    const stream = `${s.url}/datasets/solana-mainnet/stream`
    const ok = await preflight(stream, APP)
    assert.equal(ok.status, 204)
    assert.equal(ok.headers['access-control-allow-origin'], APP)
    assert.equal(ok.headers['vary'], 'Origin')
    assert.equal(ok.headers['access-control-allow-methods'], 'GET, HEAD, POST')
    assert.equal(ok.headers['access-control-allow-headers'], 'content-type, authorization')
    assert.equal(ok.headers['access-control-max-age'], '600')

    const other = await preflight(stream, 'https://evil.example.com')
    assert.equal(other.status, 403)
    assert.equal(other.headers['content-type'], 'text/plain; charset=utf-8')
    assert.equal(other.text, 'Forbidden: origin "https://evil.example.com" is not allowed (--cors)')
    assert.equal(other.headers['access-control-allow-origin'], undefined)

    // the request itself: the origin allowed, the heads readable, the response varies by both
    const r = await postJson(stream, query, { Origin: APP, Authorization: `Bearer ${KEY}`, 'Accept-Encoding': 'gzip' })
    assert.equal(r.status, 200, r.text)
    assert.equal(r.headers['access-control-allow-origin'], APP)
    assert.equal(r.headers['vary'], 'Origin, Accept-Encoding')
    const exposed = String(r.headers['access-control-expose-headers']).split(/,\s*/)
    for (const h of ['X-Sqd-Head-Number', 'X-Sqd-Finalized-Head-Number', 'X-Sqd-Finalized-Head-Hash', 'Retry-After'])
      assert.ok(exposed.includes(h), h)
    assert.equal(r.headers['x-sqd-head-number'] !== undefined, true)
    // an error a page can read: the 401's reason
    const denied = await postJson(stream, query, { Origin: APP })
    assert.equal(denied.status, 401)
    assert.equal(denied.headers['access-control-allow-origin'], APP)
    // another origin's request gets no CORS header (the browser keeps the answer from the page)
    const foreign = await postJson(stream, query, {
      Origin: 'https://evil.example.com',
      Authorization: `Bearer ${KEY}`,
    })
    assert.equal(foreign.headers['access-control-allow-origin'], undefined)
  } finally {
    await s.stop()
  }

  const open = await serve(serveOptions({ cors: ['*'] }), { logger: silent })
  try {
    await open.ready
    const any = await preflight(`${open.url}/datasets/solana-mainnet/stream`, 'https://anywhere.example')
    assert.equal(any.status, 204)
    assert.equal(any.headers['access-control-allow-origin'], '*')
    assert.equal(any.headers['vary'], undefined)
  } finally {
    await open.stop()
  }

  const plain = await serve(serveOptions(), { logger: silent })
  try {
    await plain.ready
    const r = await preflight(`${plain.url}/datasets/solana-mainnet/stream`, APP)
    assert.equal(r.status, 405)
    assert.equal(r.headers['access-control-allow-origin'], undefined)
    const got = await postJson(`${plain.url}/datasets/solana-mainnet/stream`, query, { Origin: APP })
    assert.equal(got.status, 200)
    assert.equal(got.headers['access-control-allow-origin'], undefined)
    assert.equal(got.headers['vary'], 'Accept-Encoding')
  } finally {
    await plain.stop()
  }

  for (const bad of ['https://app.example.com/', 'app.example.com', 'ftp://x.example']) {
    await assert.rejects(serve(serveOptions({ cors: [bad] }), { logger: silent }), (e: Error) => {
      assert.equal(e.name, 'UsageError')
      assert.match(e.message, /^--cors: an origin is \* or scheme:\/\/host\[:port\]/)
      return true
    })
  }
})

/** a page server on loopback (its own origin): an empty HTML page */
async function pageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
    res.end('<!doctype html><title>client</title>')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

const skip = ensureChromium()
if (skip) console.log(`# CORS browser test skipped: ${skip}`)

test(
  'a page on another origin streams in headless Chromium with --cors; a page of an origin not listed cannot',
  { skip: skip ?? false },
  async () => {
    const allowed = await pageServer()
    const foreign = await pageServer()
    let s: Serving | undefined
    const browser = await chromium.launch({ executablePath: CHROMIUM })
    try {
      s = await serve(serveOptions({ cors: [allowed.origin], apiKeys: [keyFile()] }), { logger: silent })
      await s.ready
      const page = await browser.newPage()
      // runs in the page: a POST with a JSON body and an Authorization header (a preflighted request)
      const call = ([url, key, body]: string[]) =>
        fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
          body,
        }).then(
          async (r) => ({ status: r.status, head: r.headers.get('X-Sqd-Head-Number'), text: await r.text() }),
          (e: Error) => ({ status: 0, head: null, text: `failed: ${e.name}` }),
        )
      const args = [`${s.url}/datasets/solana-mainnet/stream`, KEY, JSON.stringify(query)]
      await page.goto(allowed.origin)
      const got = await page.evaluate(call, args)
      assert.equal(got.status, 200, got.text)
      assert.match(got.head ?? '', /^\d+$/)
      assert.equal(JSON.parse(got.text.split('\n')[0]).header.number, 254170887)

      await page.goto(foreign.origin)
      const refused = await page.evaluate(call, args)
      assert.deepEqual(refused, { status: 0, head: null, text: 'failed: TypeError' })
    } finally {
      await browser.close()
      await s?.stop()
      await allowed.close()
      await foreign.close()
    }
  },
)
