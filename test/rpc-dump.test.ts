// The range fetcher and `solportal dump` against a fake node that behaves like a provider: API key
// headers required, gzip on the wire, 429s, -32004 / -32014 answers, skipped slots (unlisted and
// listed-but-skipped), -32015 and -32001.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { request } from 'node:http'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Writable } from 'node:stream'
import { test } from 'node:test'
import { runDump } from '../src/cli/commands/dump-blocks.ts'
import { serve } from '../src/cli/commands/serve.ts'
import { createLogger } from '../src/log.ts'
import { serveOptions } from './support/serve-options.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { RpcClient } from '../src/ingest/rpc/client.ts'
import { blockParams, resultText } from '../src/ingest/rpc-fetch.ts'
import { RequestLimiter } from '../src/ingest/rpc-provider.ts'

const KEY = 'S3CRET-header-value'

/** the node's answer text to a getBlock of `slot`, fetched plainly (no gzip) */
function rawBlock(node: FakeSolanaNode, slot: number): Promise<Buffer> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: blockParams(slot, 'finalized') })
  return new Promise((resolve, reject) => {
    const req = request(node.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY } })
    req.on('response', (res) => {
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => resolve(Buffer.concat(parts)))
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function dumpText(node: FakeSolanaNode, url: string, o: Record<string, unknown>, logs: string[]) {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  const r = await runDump(url, { rpcHeader: [`X-Api-Key: ${KEY}`], ...o }, out, (l) => logs.push(l))
  return { r, text: Buffer.concat(chunks).toString('utf8') }
}

test('dump: every produced slot once, in order, the node’s text exactly; a provider’s faults retried; no credential in the logs', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 3,
    initialBlocks: 45,
    intervalMs: 0,
    finalityLag: 3,
    skipRate: 0.3,
    seed: 21,
    rate429: 0.15,
    retryAfterSec: 0,
    notAvailableRate: 0.15,
    notYetRate: 0.05,
    gzip: true,
    requireHeaders: { 'x-api-key': KEY },
  })
  try {
    const chain = node.chain()
    // a slot the node lists as produced but answers as skipped (long-term storage)
    const gap = chain.findIndex((b, i) => i > 0 && b.slot - chain[i - 1].slot > 1)
    assert.ok(gap > 0, 'the chain has a skipped slot')
    node.answerSkipped(chain[gap].slot - 1, -32009)
    const logs: string[] = []
    const url = node.url.replace('http://', 'http://user:pw-S3CRET@') + `/?api-key=S3CRET-query`
    const { r, text } = await dumpText(node, url, { from: String(node.firstSlot), rpcConcurrency: '4' }, logs)
    const want = chain.filter((b) => b.slot <= node.finalizedSlot)
    const lines = text.trimEnd().split('\n')
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { slot: number }).slot),
      want.map((b) => b.slot),
    )
    assert.equal(r.skipped, 1)
    node.setFaults({ rate429: 0, notAvailableRate: 0, notYetRate: 0 })
    for (let i = 0; i < want.length; i++) {
      const b = want[i]
      const answer = resultText(await rawBlock(node, b.slot))!
      const head = `{"slot":${b.slot},"hash":"${b.hash}","height":${b.height},"block":`
      assert.equal(lines[i], head + answer.toString('utf8') + '}', `line of slot ${b.slot}`)
    }
    assert.ok(node.stats.injected429 >= 3 && node.stats.notAvailable >= 3, JSON.stringify(node.stats))
    assert.ok(node.stats.gzipAnswers > 0 && node.stats.gzipRequests > 0, 'gzip both ways')
    assert.equal(node.stats.unauthorized, 0)
    const all = logs.join('\n')
    assert.ok(!/S3CRET/.test(all), `a credential in the logs:\n${all}`)
    // the 429s in one summary line (and the closing line), not a line each
    assert.ok(logs.filter((l) => /429/.test(l)).length <= 2, all)
    assert.match(all, /dumped \d+ blocks .* from http:\/\/127\.0\.0\.1:\d+\/\*\*\*/)
  } finally {
    await node.stop()
  }
})

test('dump: a block the node refuses for its transaction version (-32015) stops it, naming the slot and version', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 2, initialBlocks: 12, intervalMs: 0, finalityLag: 1, seed: 3 })
  try {
    const slot = node.chain()[5].slot
    node.refuseVersion(slot, 2)
    const out = new PassThrough()
    const lines: string[] = []
    out.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)))
    await assert.rejects(
      runDump(node.url, { from: String(node.firstSlot) }, out, () => {}),
      new RegExp(`slot ${slot}: .*-32015.*version 2`),
    )
    // version 1 is what solportal declares: a version-1 block is not refused
    node.refuseVersion(slot, 1)
    const { r } = await dumpText(node, node.url, { from: String(node.firstSlot) }, [])
    assert.equal(r.last, node.finalizedSlot)
  } finally {
    await node.stop()
  }
})

test('dump: a range below the node’s first available block is refused once, with its slot range', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 2, initialBlocks: 12, intervalMs: 0, finalityLag: 1, seed: 4 })
  try {
    const first = node.chain()[4].slot
    node.setFirstAvailable(first)
    const before = node.stats.getBlock
    await assert.rejects(
      runDump(node.url, { from: String(node.firstSlot) }, new PassThrough(), () => {}),
      new RegExp(`slots ${node.firstSlot}\\.\\.${first - 1} are below the node's first available block ${first}`),
    )
    assert.equal(node.stats.getBlock, before, 'no block asked for')
  } finally {
    await node.stop()
  }
})

test('--rpc-rps: requests spaced to the cap (retries included), a 429’s Retry-After holds every request', async () => {
  const node = await FakeSolanaNode.start({ txPerBlock: 1, initialBlocks: 2, intervalMs: 0 })
  try {
    const c = new RpcClient({ url: node.url, limiter: new RequestLimiter(40) })
    let t0 = performance.now()
    await Promise.all(Array.from({ length: 21 }, () => c.getSlot('confirmed')))
    const capped = performance.now() - t0
    assert.ok(capped >= 480, `21 requests at 40/s took ${capped} ms`)
    // a 429 with Retry-After: 1 pauses the client's other requests too
    node.setFaults({ rate429: 1, retryAfterSec: 1 })
    const limiter = new RequestLimiter(0)
    const d = new RpcClient({ url: node.url, limiter, minBackoffMs: 1 })
    t0 = performance.now()
    const first = d.getSlot('confirmed')
    await new Promise((r) => setTimeout(r, 100))
    node.setFaults({ rate429: 0 })
    const t1 = performance.now()
    await d.getSlot('confirmed')
    const waited = performance.now() - t1
    await first
    assert.ok(waited >= 700, `a request after the 429 went ${waited} ms later`)
  } finally {
    await node.stop()
  }
})

test('serve --rpc with a provider’s key in a header and in the URL: neither in the logs nor in /metrics, through 429s', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 2,
    initialBlocks: 20,
    intervalMs: 0,
    finalityLag: 2,
    seed: 5,
    rate429: 0.3,
    retryAfterSec: 0,
    dropRate: 0.05,
    gzip: true,
    requireHeaders: { authorization: `Bearer ${KEY}` },
  })
  const dir = mkdtempSync(join(tmpdir(), 'solportal-provider-'))
  const lines: string[] = []
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString())
      cb()
    },
  })
  const url = node.url.replace('http://', 'http://user:pw-S3CRET@') + '/S3CRET-path/?api-key=S3CRET-query'
  const s = await serve(
    serveOptions({
      rpc: url,
      dataDir: dir,
      fromSlot: String(node.firstSlot),
      rpcHeader: [`Authorization: Bearer ${KEY}`],
      commitment: 'finalized',
    }),
    { logger: createLogger({ level: 'debug', destination }) },
  )
  try {
    await s.ready
    let head: { number: number } | null = null
    for (let i = 0; i < 300 && !(head && head.number >= node.finalizedSlot); i++) {
      await new Promise((r) => setTimeout(r, 100))
      head = (await (await fetch(`${s.url}/datasets/solana-mainnet/head`)).json()) as { number: number } | null
    }
    assert.equal(head?.number, node.finalizedSlot, 'caught up through the key-checking node')
    const metrics = await (await fetch(`${s.url}/metrics`)).text()
    assert.match(metrics, /node_head_slot/)
    assert.ok(!/S3CRET/.test(metrics), 'a credential in /metrics')
  } finally {
    await s.stop()
    await node.stop()
  }
  assert.ok(node.stats.injected429 > 0 && node.stats.unauthorized === 0, JSON.stringify(node.stats))
  const all = lines.join('')
  assert.ok(!/S3CRET/.test(all), `a credential in the logs`)
  assert.ok(lines.filter((l) => /HTTP 429/.test(l)).length <= 2, 'the 429s summarized, not a line each')
})

test('gzip: requests compressed only once the node answers compressed, plain for good after it refuses one', async () => {
  const plain = await FakeSolanaNode.start({ txPerBlock: 1, initialBlocks: 3, intervalMs: 0 })
  const refusing = await FakeSolanaNode.start({
    txPerBlock: 1,
    initialBlocks: 3,
    intervalMs: 0,
    gzip: true,
    refuseGzipRequests: true,
  })
  try {
    // a node without gzip: never sent a compressed request
    const a = new RpcClient({ url: plain.url, gzip: true })
    for (let i = 0; i < 3; i++) assert.equal(await a.getSlot('confirmed'), plain.tip.slot)
    assert.equal(plain.stats.gzipAnswers + plain.stats.refusedGzip + plain.stats.gzipRequests, 0)
    // a node that compresses its answers but does not read compressed requests: one refusal, then plain
    const b = new RpcClient({ url: refusing.url, gzip: true })
    for (let i = 0; i < 4; i++) assert.equal(await b.getSlot('confirmed'), refusing.tip.slot)
    assert.equal(refusing.stats.refusedGzip, 1)
    assert.equal(refusing.stats.gzipAnswers, 4)
    assert.equal(b.stats.gzipAnswers, 4)
  } finally {
    await plain.stop()
    await refusing.stop()
  }
})

test('misused --rpc options: one line naming the option, status 2, a header value never echoed', async () => {
  const cases: { args: string[]; want: RegExp }[] = [
    { args: ['import', tmpdir(), '--rpc', 'http://127.0.0.1:1'], want: /--rpc needs --from SLOT/ },
    { args: ['dump', '--rpc', 'http://127.0.0.1:1', '--from', '10', '--to', '5'], want: /--to 5 is below --from 10/ },
    {
      args: ['dump', '--rpc', 'http://127.0.0.1:1', '--from', '1', '--rpc-header', 'Authorization Bearer S3CRET-v'],
      want: /--rpc-header: expected 'Name: value'/,
    },
    { args: ['import', tmpdir(), 'x.jsonl', '--from', '5'], want: /--from and --to apply only to --rpc/ },
    { args: ['dump', '--rpc', 'http://127.0.0.1:1', '--from', '1', '--rpc-rps', 'fast'], want: /--rpc-rps must be/ },
  ]
  await Promise.all(
    cases.map(async ({ args, want }) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
        cwd: join(import.meta.dirname, '..'),
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let err = ''
      child.stderr.on('data', (d) => (err += d))
      const code = await new Promise((r) => child.on('exit', r))
      assert.equal(code, 2, `${args.join(' ')}: ${err}`)
      assert.equal(err.trim().split('\n').length, 1, err)
      assert.match(err, want)
      assert.ok(!/S3CRET/.test(err), err)
    }),
  )
})
