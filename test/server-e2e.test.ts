/**
 * End to end: the real HTTP server on loopback over the bundled sample (real mainnet blocks plus
 * the locally executed chain), real gzip both ways, every status code of the interface.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import zlib from 'node:zlib'
import { sampleLines } from '../src/ingest/sample.ts'
import type { Block } from '../src/model.ts'
import type { DatasetConfig } from '../src/server/datasets.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import type { RateLimit, ServerLimits } from '../src/server/http.ts'
import { DEFAULT_LIMITS, PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'
import { StaticStore } from '../src/store/static.ts'
import { lines, postJson, request, streamAll } from './support/http/client.ts'

const STABLE_START = 254170887

let store: StaticStore
let blocks: Block[]

async function startServer(
  datasets: DatasetConfig[],
  limits: Partial<ServerLimits> = {},
  rateLimit: RateLimit | null = null,
): Promise<{ url: string; server: PortalServer }> {
  const server = new PortalServer({ datasets: new DatasetRegistry(datasets), limits, rateLimit, log: () => {} })
  const url = await server.listen(0, '127.0.0.1')
  return { url, server }
}

function sampleDatasets(extra: Partial<DatasetConfig> = {}): DatasetConfig[] {
  return [
    { name: 'solana-mainnet', aliases: ['solana-beta'], store, startBlock: STABLE_START, realTime: false, ...extra },
    { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store, realTime: false, ...extra },
  ]
}

before(async () => {
  const collected: Block[] = []
  const lineSource = sampleLines()
  const r = await loadStaticStore(lineSource)
  store = r.store
  // keep the normalized blocks for expectations
  for await (const c of store.chunks(0, Number.MAX_SAFE_INTEGER, false)) {
    const numbers = c.header('number')
    for (let i = 0; i < c.blockCount; i++) collected.push({ header: { number: numbers[i] } } as Block)
  }
  blocks = collected
})

describe('server: GET endpoints', () => {
  let url: string
  let server: PortalServer
  before(async () => ({ url, server } = await startServer(sampleDatasets())))
  after(() => server.close())

  test('metadata of the stable dataset and its alias', async () => {
    for (const name of ['solana-mainnet', 'solana-beta']) {
      const r = await request(`${url}/datasets/${name}/metadata`)
      assert.equal(r.status, 200)
      assert.equal(r.headers['content-type'], 'application/json')
      assert.deepEqual(JSON.parse(r.text), {
        dataset: 'solana-mainnet',
        aliases: ['solana-beta'],
        real_time: false,
        start_block: STABLE_START,
      })
    }
    const complete = JSON.parse((await request(`${url}/datasets/solana-mainnet-complete/metadata`)).text)
    assert.equal(complete.start_block, blocks[0].header.number)
    assert.ok(complete.start_block < STABLE_START)
  })

  test('metadata?expand[]=metadata adds the kind', async () => {
    const r = await request(`${url}/datasets/solana-mainnet/metadata?expand[]=metadata`)
    const m = JSON.parse(r.text)
    assert.equal(m.metadata.kind, 'solana')
    const list = JSON.parse((await request(`${url}/datasets`)).text)
    assert.deepEqual(
      list.map((d: { dataset: string }) => d.dataset),
      ['solana-mainnet', 'solana-mainnet-complete'],
    )
  })

  test('unknown dataset: 404 text', async () => {
    for (const path of ['/metadata', '/head', '/finalized-head']) {
      const r = await request(`${url}/datasets/nope${path}`)
      assert.equal(r.status, 404)
      assert.match(String(r.headers['content-type']), /^text\/plain/)
      assert.match(r.text, /nope/)
    }
    const r = await postJson(`${url}/datasets/nope/stream`, { type: 'solana', fromBlock: 0 })
    assert.equal(r.status, 404)
  })

  test('head and finalized head are the last sample block', async () => {
    const last = blocks[blocks.length - 1].header.number
    for (const p of ['head', 'finalized-head']) {
      const r = await request(`${url}/datasets/solana-mainnet/${p}`)
      assert.equal(r.status, 200)
      assert.equal(r.headers['content-type'], 'application/json')
      const h = JSON.parse(r.text)
      assert.equal(h.number, last)
      assert.equal(typeof h.hash, 'string')
    }
  })

  test('wrong method: 405', async () => {
    const r = await request(`${url}/datasets/solana-mainnet/stream`)
    assert.equal(r.status, 405)
    const r2 = await postJson(`${url}/datasets/solana-mainnet/head`, {})
    assert.equal(r2.status, 405)
  })

  test('timestamp → block', async () => {
    const r = await request(`${url}/datasets/solana-mainnet-complete/timestamps/0/block`)
    assert.equal(r.status, 200)
    assert.deepEqual(JSON.parse(r.text), { block_number: blocks[0].header.number })
    const none = await request(`${url}/datasets/solana-mainnet/timestamps/99999999999/block`)
    assert.equal(none.status, 404)
    assert.ok(JSON.parse(none.text).message)
  })
})

describe('server: stream requests', () => {
  let url: string
  let base: string
  let server: PortalServer
  before(async () => {
    // a long head wait, so that "waited" and "answered at once" stay apart on a loaded machine
    ;({ url, server } = await startServer(sampleDatasets(), { headWaitMs: 2000 }))
    base = `${url}/datasets/solana-mainnet-complete`
  })
  after(() => server.close())

  test('one block, header fields only, headers of a 200', async () => {
    const r = await postJson(`${base}/stream`, {
      type: 'solana',
      fromBlock: STABLE_START,
      toBlock: STABLE_START,
      fields: { block: { number: true, hash: true, parentNumber: true, height: true } },
    })
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], 'application/jsonl')
    assert.equal(r.headers['x-sqd-finalized-head-number'], String(store.finalizedHead()!.number))
    assert.equal(r.headers['x-sqd-finalized-head-hash'], store.finalizedHead()!.hash)
    assert.equal(r.headers['x-sqd-head-number'], String(store.head()!.number))
    assert.equal(
      r.text,
      '{"header":{"number":254170887,"hash":"5GG5pzTbH6KgZM54M9XWfBNmBupQuZXdQxoZRRQXHcpM","parentNumber":254170886,"height":234724352}}\n',
    )
  })

  test('parentSlot spelling is echoed', async () => {
    const r = await postJson(`${base}/stream`, {
      fromBlock: STABLE_START,
      toBlock: STABLE_START,
      fields: { block: { parentSlot: true } },
    })
    assert.equal(r.text, '{"header":{"parentSlot":254170886}}\n')
  })

  test('400: fromBlock below start_block names the start', async () => {
    const r = await postJson(`${url}/datasets/solana-mainnet/stream`, { type: 'solana', fromBlock: 1 })
    assert.equal(r.status, 400)
    assert.match(String(r.headers['content-type']), /^text\/plain/)
    assert.equal(r.text, `Bad request: dataset starts from block ${STABLE_START}`)
  })

  test('400: malformed requests', async () => {
    const cases: [string | object, RegExp][] = [
      ['{not json', /^Bad request: request body is not valid JSON/],
      [{ fromBlock: STABLE_START, bogus: 1 }, /^Bad request: .*bogus/],
      [{ fromBlock: STABLE_START, toBlock: STABLE_START - 1 }, /^Bad request: .*toBlock/],
      [{ fromBlock: STABLE_START, instructions: [{ d8: ['0x12'] }] }, /^Bad request: \.instructions\[0\]\.d8\[0\]/],
      [{ fromBlock: STABLE_START, type: 'evm' }, /^Bad request: .*type/],
      [{ fromBlock: STABLE_START, fields: { instruction: { nope: true } } }, /^Bad request: .*nope/],
    ]
    for (const [body, re] of cases) {
      const r = await postJson(`${base}/stream`, body)
      assert.equal(r.status, 400, JSON.stringify(body))
      assert.match(r.text, re)
    }
  })

  test('400: content type, encodings, size', async () => {
    const q = JSON.stringify({ fromBlock: STABLE_START, toBlock: STABLE_START })
    let r = await request(`${base}/stream`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: q })
    assert.equal(r.status, 400)
    assert.match(r.text, /Content-Type/)
    r = await postJson(`${base}/stream`, q, { 'Content-Encoding': 'br' })
    assert.equal(r.status, 400)
    assert.match(r.text, /Content-Encoding/)
    r = await request(`${base}/stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: 'this is not gzip',
    })
    assert.equal(r.status, 400)
    assert.match(r.text, /gzip/)
    const huge = JSON.stringify({
      fromBlock: STABLE_START,
      transactions: [{ feePayer: ['x'.repeat(DEFAULT_LIMITS.maxBodyBytes)] }],
    })
    r = await postJson(`${base}/stream`, huge)
    assert.equal(r.status, 400)
    assert.match(r.text, new RegExp(`limit of ${DEFAULT_LIMITS.maxBodyBytes} bytes`))
    // a gzip bomb is bounded by the decoded size
    r = await request(`${base}/stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: zlib.gzipSync(huge),
    })
    assert.equal(r.status, 400)
    assert.match(r.text, new RegExp(`limit of ${DEFAULT_LIMITS.maxBodyBytes} bytes`))
  })

  test('gzip both ways', async () => {
    const q = { fromBlock: STABLE_START, toBlock: STABLE_START, fields: { block: { number: true } } }
    const r = await request(`${base}/stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip, deflate' },
      body: zlib.gzipSync(JSON.stringify(q)),
    })
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-encoding'], 'gzip')
    assert.equal(r.headers['vary'], 'Accept-Encoding')
    assert.equal(r.raw[0], 0x1f)
    assert.equal(r.text, '{"header":{"number":254170887}}\n')
    const plain = await postJson(`${base}/stream`, q)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal(plain.text, r.text)
    const refused = await postJson(`${base}/stream`, q, { 'Accept-Encoding': 'gzip;q=0' })
    assert.equal(refused.headers['content-encoding'], undefined)
    // content negotiation: a named gzip decides by its own q-value, `*` speaks for the rest
    const cases: [string, boolean][] = [
      ['gzip;q=0, *', false],
      ['*, GZIP; Q=0.000', false],
      ['*;q=0, gzip;q=0.5', true],
      ['zstd, *;q=0.1', true],
      ['gzip, zstd', true],
      ['x-gzip', true],
      ['zstd, br', false],
      ['*;q=0', false],
      ['identity', false],
    ]
    for (const [accept, gzipped] of cases) {
      const got = await postJson(`${base}/stream`, q, { 'Accept-Encoding': accept })
      assert.equal(got.headers['content-encoding'], gzipped ? 'gzip' : undefined, accept)
      assert.equal(got.headers['vary'], 'Accept-Encoding', accept)
    }
  })

  test('204 after waiting when fromBlock is above the head', async () => {
    const head = store.head()!
    const t0 = Date.now()
    const r = await postJson(`${base}/stream`, { fromBlock: head.number + 1 })
    assert.equal(r.status, 204)
    assert.ok(Date.now() - t0 >= 1900, 'waited for the block')
    assert.equal(r.headers['x-sqd-head-number'], String(head.number))
    assert.equal(r.headers['x-sqd-finalized-head-number'], String(head.number))
    const f = await postJson(`${base}/finalized-stream`, { fromBlock: head.number + 5, toBlock: head.number + 9 })
    assert.equal(f.status, 204)
  })

  test('409 when parentBlockHash does not match; previousBlocks ascend and end with the parent', async () => {
    const all = await store.chainBefore(Number.MAX_SAFE_INTEGER, 1000)
    const idx = all.findIndex((b) => b.number === STABLE_START)
    assert.ok(idx > 0)
    const r = await postJson(`${base}/stream`, { fromBlock: STABLE_START, parentBlockHash: 'wrong' })
    assert.equal(r.status, 409)
    assert.equal(r.headers['content-type'], 'application/json')
    const body = JSON.parse(r.text)
    assert.deepEqual(body.previousBlocks, all.slice(Math.max(0, idx - 100), idx))
    // the right parent hash passes
    const ok = await postJson(`${base}/stream`, {
      fromBlock: STABLE_START,
      toBlock: STABLE_START,
      parentBlockHash: all[idx - 1].hash,
    })
    assert.equal(ok.status, 200)
    // fromBlock = head + 1 with a foreign parent: 409 at once, no 204 wait
    const head = store.head()!
    const t0 = Date.now()
    const c = await postJson(`${base}/stream`, { fromBlock: head.number + 1, parentBlockHash: 'other' })
    assert.equal(c.status, 409)
    assert.ok(Date.now() - t0 < 1500, 'answered without the 2 s head wait')
    const prev = JSON.parse(c.text).previousBlocks
    assert.deepEqual(prev[prev.length - 1], head)
  })

  test('a range of skipped slots only: empty 200', async () => {
    const r = await postJson(`${base}/stream`, { fromBlock: 200_000_000, toBlock: 200_000_010 })
    assert.equal(r.status, 200)
    assert.equal(r.text, '')
  })

  test('no match: the first and the last produced block of the range, header only', async () => {
    const head = store.head()!
    const r = await postJson(`${base}/stream`, {
      fromBlock: 100_000_000,
      fields: { block: { number: true } },
      instructions: [{ programId: ['11111111111111111111111111111111'], d8: ['0xffffffffffffffff'] }],
    })
    assert.equal(r.status, 200)
    assert.deepEqual(lines(r), [{ header: { number: blocks[0].header.number } }, { header: { number: head.number } }])
  })

  test('includeAllBlocks returns every produced block', async () => {
    const r = await postJson(`${base}/stream`, {
      fromBlock: 0 + blocks[0].header.number,
      includeAllBlocks: true,
      fields: { block: { number: true } },
    })
    assert.deepEqual(
      lines(r).map((l) => (l as { header: { number: number } }).header.number),
      blocks.map((b) => b.header.number),
    )
  })

  test('resuming from every cut point gives the same blocks as one uninterrupted stream', async () => {
    const { url: u2, server: s2 } = await startServer(sampleDatasets(), { responseBytes: 1 })
    try {
      const queries = [
        { includeAllBlocks: true, fields: { block: { number: true, hash: true } } },
        {
          fields: {
            block: { number: true },
            instruction: { programId: true, instructionAddress: true },
            transaction: { signatures: true },
          },
          instructions: [{ programId: ['whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'], transaction: true }],
        },
      ]
      for (const q of queries) {
        const full = { type: 'solana', fromBlock: blocks[0].header.number, toBlock: store.head()!.number, ...q }
        const one = await postJson(`${base}/stream`, full)
        const oneLines = one.text.split('\n').filter(Boolean)
        const cut = await streamAll(`${u2}/datasets/solana-mainnet-complete`, full)
        assert.ok(cut.requests > 1, 'the small byte budget cut the response')
        const withData = (ls: string[]) =>
          ls.filter((l) => l.includes('"instructions"') || l.includes('"transactions"'))
        // every response carries its first block (header-only when nothing matched), so a resumed
        // stream holds more header-only lines; the blocks with data, and the range ends, are the same
        assert.deepEqual(withData(cut.lines), withData(oneLines))
        if ('instructions' in q) assert.ok(withData(oneLines).length > 0)
        assert.equal(cut.lines[0], oneLines[0])
        assert.equal(cut.lines[cut.lines.length - 1], oneLines[oneLines.length - 1])
        // and every resumed response ended on a block boundary: no block number appears twice
        const numbers = cut.lines.map((l) => (JSON.parse(l) as { header: { number: number } }).header.number)
        assert.equal(new Set(numbers).size, numbers.length)
      }
    } finally {
      await s2.close()
    }
  })

  test('the early end of a response is on a complete line and a gzip stream that closes', async () => {
    const { url: u2, server: s2 } = await startServer(sampleDatasets(), { responseBytes: 10 })
    try {
      const r = await postJson(
        `${u2}/datasets/solana-mainnet-complete/stream`,
        { fromBlock: blocks[0].header.number, includeAllBlocks: true, fields: { block: { number: true } } },
        { 'Accept-Encoding': 'gzip' },
      )
      assert.equal(r.status, 200)
      // gunzipSync in the client throws on a truncated gzip stream
      assert.ok(r.text.endsWith('\n'))
      assert.equal(lines(r).length, 1)
    } finally {
      await s2.close()
    }
  })
})

describe('server: limits', () => {
  test('429 with Retry-After above the rate limit', async () => {
    const { url, server } = await startServer(sampleDatasets(), {}, { perSecond: 1, burst: 2 })
    try {
      const q = { fromBlock: STABLE_START, toBlock: STABLE_START }
      const statuses: number[] = []
      let retry: string | undefined
      for (let i = 0; i < 4; i++) {
        const r = await postJson(`${url}/datasets/solana-mainnet/stream`, q)
        statuses.push(r.status)
        if (r.status === 429) retry = r.headers['retry-after'] as string
      }
      assert.deepEqual(statuses.slice(0, 2), [200, 200])
      assert.equal(statuses[3], 429)
      assert.ok(Number(retry) >= 1)
    } finally {
      await server.close()
    }
  })

  test('503 with Retry-After above the concurrent stream limit', async () => {
    const { url, server } = await startServer(sampleDatasets(), { maxConcurrentStreams: 1, headWaitMs: 5000 })
    try {
      const head = store.head()!
      const waiting = postJson(`${url}/datasets/solana-mainnet/stream`, { fromBlock: head.number + 1 })
      // the waiting stream holds the only slot once the server counts it
      for (let i = 0; server.activeStreamCount < 1; i++) {
        assert.ok(i < 2000, 'the waiting stream was never counted')
        await new Promise((r) => setTimeout(r, 5))
      }
      const r = await postJson(`${url}/datasets/solana-mainnet/stream`, {
        fromBlock: STABLE_START,
        toBlock: STABLE_START,
      })
      assert.equal(r.status, 503)
      assert.equal(r.headers['retry-after'], '1')
      assert.equal((await waiting).status, 204)
      const again = await postJson(`${url}/datasets/solana-mainnet/stream`, {
        fromBlock: STABLE_START,
        toBlock: STABLE_START,
      })
      assert.equal(again.status, 200)
    } finally {
      await server.close()
    }
  })

  test('bigintsAsNumbers renders amounts as bare integers', async () => {
    const { url, server } = await startServer(sampleDatasets({ bigintsAsNumbers: true }))
    try {
      const q = {
        fromBlock: STABLE_START,
        toBlock: STABLE_START,
        fields: { transaction: { fee: true } },
        transactions: [{}],
      }
      const r = await postJson(`${url}/datasets/solana-mainnet/stream`, q)
      const b = lines(r)[0] as { transactions: { fee: unknown }[] }
      assert.ok(b.transactions.length > 0)
      for (const t of b.transactions) assert.equal(typeof t.fee, 'number')
    } finally {
      await server.close()
    }
    const { url: u2, server: s2 } = await startServer(sampleDatasets())
    try {
      const q = {
        fromBlock: STABLE_START,
        toBlock: STABLE_START,
        fields: { transaction: { fee: true } },
        transactions: [{}],
      }
      const b = lines(await postJson(`${u2}/datasets/solana-mainnet/stream`, q))[0] as {
        transactions: { fee: unknown }[]
      }
      for (const t of b.transactions) assert.equal(typeof t.fee, 'string')
    } finally {
      await s2.close()
    }
  })
})

test('an empty store: head is null, stream is 204', async () => {
  const empty = new StaticStore([])
  const { url, server } = await startServer([{ name: 'e', aliases: [], store: empty, realTime: false }], {
    headWaitMs: 50,
  })
  try {
    assert.equal((await request(`${url}/datasets/e/head`)).text, 'null')
    assert.equal((await request(`${url}/datasets/e/finalized-head`)).text, 'null')
    assert.equal((await postJson(`${url}/datasets/e/stream`, { fromBlock: 0 })).status, 204)
  } finally {
    await server.close()
  }
})
