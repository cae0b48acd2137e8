/**
 * HTTP end to end over the bundled sample: the same queries through the real server on loopback
 * (identity and gzip) against the engine alone (baseline measured in the same run), so the
 * table shows what HTTP, socket backpressure and gzip cost.
 */
import http from 'node:http'
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { sampleLines, REPO_ROOT } from '../src/ingest/sample.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'
import { allFields } from './support.ts'

const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'

function queries(from: number): Record<string, Record<string, unknown>> {
  const qs: Record<string, Record<string, unknown>> = {
    'selective instructions (program + d8)': {
      fromBlock: from,
      fields: {
        block: { number: true },
        instruction: { programId: true, accounts: true, data: true, instructionAddress: true },
      },
      instructions: [{ programId: [WHIRLPOOL], d8: ['0xf8c69e91e17587c8'] }],
    },
    'all instructions, all fields': {
      fromBlock: from,
      fields: {
        block: { number: true, hash: true },
        instruction: allFields('instruction'),
      },
      instructions: [{}],
    },
    'transactions + instructions, balances, logs': {
      fromBlock: from,
      fields: {
        block: { number: true },
        transaction: { transactionIndex: true, signatures: true, fee: true, err: true, feePayer: true },
        instruction: { transactionIndex: true, instructionAddress: true, programId: true, data: true },
        balance: { transactionIndex: true, account: true, pre: true, post: true },
        log: { transactionIndex: true, logIndex: true, kind: true, message: true },
      },
      transactions: [{ instructions: true, balances: true, logs: true }],
    },
  }
  const dir = join(REPO_ROOT, 'bench', 'queries')
  if (existsSync(dir)) {
    for (const name of ['whirlpool_swap', 'hard', 'instr_and_logs', 'instr_and_balances', 'all_blocks']) {
      const p = join(dir, `${name}.json`)
      if (existsSync(p)) qs[`reference: ${name}`] = { ...JSON.parse(readFileSync(p, 'utf8')), fromBlock: from }
    }
  }
  return qs
}

function post(url: string, body: string, gzip: boolean): Promise<{ bytes: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json', ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
      },
      (res) => {
        let bytes = 0
        let lines = 0
        res.on('data', (c: Buffer) => {
          bytes += c.length
          if (!gzip) for (let i = 0; i < c.length; i++) if (c[i] === 10) lines++
        })
        res.on('end', () => resolve({ bytes, lines }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

export async function run(): Promise<string> {
  const { store, blocks } = await loadStaticStore(sampleLines())
  const from = store.firstBlock()!
  const to = store.head()!.number
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 's', aliases: [], store, realTime: false }]),
    limits: { responseTimeMs: 600_000, responseBytes: 2 ** 40 },
    rateLimit: null,
    log: () => {},
  })
  const url = await server.listen(0, '127.0.0.1')
  const rows: string[] = []
  const MIN_MS = 1500
  for (const [name, q] of Object.entries(queries(from))) {
    const body = JSON.stringify(q)
    // baseline: the engine alone
    let t0 = performance.now()
    let iters = 0
    let jsonBytes = 0
    let outBlocks = 0
    do {
      jsonBytes = 0
      outBlocks = 0
      for await (const b of executeQuery(store, parseQuery(q), { to, finalizedOnly: false })) {
        jsonBytes += Buffer.byteLength(b.line) + 1
        outBlocks++
      }
      iters++
    } while (performance.now() - t0 < MIN_MS)
    const engineMs = (performance.now() - t0) / iters
    const measure = async (gzip: boolean) => {
      const t = performance.now()
      let n = 0
      let wire = 0
      do {
        wire = (await post(`${url}/datasets/s/stream`, body, gzip)).bytes
        n++
      } while (performance.now() - t < MIN_MS)
      return { ms: (performance.now() - t) / n, wire }
    }
    const plain = await measure(false)
    const gz = await measure(true)
    const mbs = (ms: number) => (jsonBytes / 1e6 / (ms / 1000)).toFixed(1)
    const bps = (ms: number) => Math.round(blocks / (ms / 1000)).toLocaleString('en-US')
    rows.push(
      `| ${name} | ${outBlocks} | ${(jsonBytes / 1e6).toFixed(2)} | ${bps(engineMs)} | ${mbs(engineMs)} | ${bps(plain.ms)} | ${mbs(plain.ms)} | ${(plain.ms / engineMs).toFixed(2)} | ${mbs(gz.ms)} | ${(gz.wire / jsonBytes).toFixed(3)} |`,
    )
  }
  await server.close()
  return [
    `## HTTP end to end over the bundled sample (${blocks} blocks, slots ${from}..${to})`,
    '',
    'Blocks/s counts every block of the scanned range; MB/s is JSON lines produced (before gzip). Baseline: the engine without HTTP, same run.',
    '',
    '| query | blocks out | JSON MB | engine blocks/s | engine MB/s | HTTP blocks/s | HTTP MB/s | HTTP/engine time | HTTP+gzip MB/s | gzip ratio |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
