/**
 * HTTP/1.1 strictness over raw sockets on loopback: a Transfer-Encoding other than plain `chunked`
 * (`gzip, chunked`) is refused with 501 and a text/plain reason instead of being read as chunked;
 * requests Node's parser refuses (bad header bytes, headers too large, a bad chunk size) answer
 * 400/431 with a text/plain reason, with and without an observer (access log) attached.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { after, test } from 'node:test'
import { createLogger } from '../src/log.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { Observer } from '../src/server/observe.ts'
import { StaticStore } from '../src/store/static.ts'
import { makePools, randomBlocks } from './support/random-blocks.ts'
import { rawExchange, statusOf } from './support/http/hostile.ts'

const blocks = randomBlocks(3, { blocks: 4, pools: makePools(2) })
const FIRST = blocks[0].header.number
const servers: PortalServer[] = []
after(async () => {
  for (const s of servers) await s.close()
})

async function start(observer: Observer | null): Promise<number> {
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'd', aliases: [], store: new StaticStore(blocks), realTime: false }]),
    rateLimit: null,
    log: () => {},
    observer,
  })
  servers.push(server)
  return Number(new URL(await server.listen(0, '127.0.0.1')).port)
}

/** status, headers (lower-cased names) and body of a raw answer */
function parse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n')
  const headers: Record<string, string> = {}
  for (const l of raw.slice(0, end).split('\r\n').slice(1)) {
    const i = l.indexOf(':')
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
  }
  return { status: statusOf(raw), headers, body: raw.slice(end + 4) }
}

const query = JSON.stringify({ fromBlock: FIRST, toBlock: FIRST, fields: { block: { number: true } } })
const chunked = `${query.length.toString(16)}\r\n${query}\r\n0\r\n\r\n`
const post = (te: string, body = chunked) =>
  `POST /datasets/d/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n` +
  `Connection: close\r\n\r\n${body}`

for (const observed of [false, true]) {
  const what = observed ? 'with an observer' : 'without an observer'
  test(`Transfer-Encoding other than chunked is refused with 501 and a reason (${what})`, async () => {
    const lines: string[] = []
    const logger = createLogger({ level: 'info', destination: { write: (s: string) => void lines.push(s) } })
    const port = await start(observed ? new Observer({ logger }) : null)
    // plain chunked (any case) is read as before
    for (const te of ['chunked', 'Chunked']) {
      const ok = parse(await rawExchange(port, post(te)))
      assert.equal(ok.status, 200, `${te}: ${ok.body}`)
    }
    // chunked twice: Node's parser refuses it (400, RFC 9112 allows either), now with a reason
    const twice = parse(await rawExchange(port, post('chunked, chunked')))
    assert.equal(twice.status, 400, twice.body)
    assert.match(twice.body, /^Bad request: malformed HTTP request \(HPE_INVALID_TRANSFER_ENCODING/)
    for (const te of ['gzip, chunked', 'identity, chunked', 'x-custom, chunked', 'deflate,chunked']) {
      const r = parse(await rawExchange(port, post(te)))
      assert.equal(r.status, 501, `${te}: ${r.body}`)
      assert.match(r.headers['content-type'], /^text\/plain/)
      assert.equal(r.headers.connection, 'close')
      assert.match(r.body, /^Not implemented: Transfer-Encoding ".*" is not supported \(only "chunked"/)
      assert.ok(r.body.includes(JSON.stringify(te)), r.body)
    }
    // two Transfer-Encoding headers (gzip, then chunked) are the same list
    const two = parse(
      await rawExchange(
        port,
        `POST /datasets/d/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n` +
          `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunked}`,
      ),
    )
    assert.equal(two.status, 501, two.body)
    if (observed) assert.ok(lines.some((l) => /"status":501/.test(l) && /"msg":"request"/.test(l)))
  })

  test(`requests the HTTP parser refuses answer 400/431 with a text/plain reason (${what})`, async () => {
    const lines: string[] = []
    const logger = createLogger({ level: 'info', destination: { write: (s: string) => void lines.push(s) } })
    const port = await start(observed ? new Observer({ logger }) : null)
    const cases: [string, number, RegExp][] = [
      [
        'GET /health HTTP/1.1\r\nHost: x\r\nBad\x01Header: 1\r\n\r\n',
        400,
        /^Bad request: malformed HTTP request \(HPE_/,
      ],
      ['GET /health HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n', 400, /^Bad request: malformed HTTP request \(HPE_/],
      [
        post('chunked', `zz\r\n${query}\r\n0\r\n\r\n`),
        400,
        /^Bad request: malformed HTTP request \(HPE_INVALID_CHUNK_SIZE/,
      ],
      [
        `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(http.maxHeaderSize + 10)}\r\n\r\n`,
        431,
        /^Request header fields too large: the request line and headers exceed \d+ bytes$/,
      ],
    ]
    for (const [raw, status, want] of cases) {
      const r = parse(await rawExchange(port, raw))
      assert.equal(r.status, status, `${JSON.stringify(raw.slice(0, 60))}: ${r.body}`)
      assert.match(r.headers['content-type'] ?? '', /^text\/plain/)
      assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body))
      assert.match(r.body, want)
      assert.ok(!/[^\x20-\x7e]/.test(r.body), 'printable reason')
    }
    if (observed) assert.ok(lines.filter((l) => /refused by the HTTP parser/.test(l)).length >= cases.length)
  })
}
