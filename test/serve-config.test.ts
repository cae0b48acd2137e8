/**
 * `serve --config FILE`: one process serves the datasets a JSON file declares (an imported dataset
 * directory, a chain followed from a fake Solana node over real JSON-RPC, the sample's two views
 * sharing one source), each with its own /metadata and /head; a wrong file is refused before the
 * port opens with one line naming the file and the path of the wrong key.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { runImport } from '../src/ingest/import/index.ts'
import { serve } from '../src/cli/commands/serve.ts'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { sampleArchives } from '../src/ingest/sample.ts'
import { createLogger } from '../src/log.ts'
import { postJson, request } from './support/http/client.ts'
import { serveOptions } from './support/serve-options.ts'

const work = mkdtempSync(join(tmpdir(), 'solportal-config-'))
const imported = join(work, 'imported')
const silent = createLogger({ level: 'silent' })

/** the first and last block of the sample's archives, as imported */
let importedRange: { first: number; last: number }
before(async () => {
  const r = await runImport(imported, sampleArchives(), { progress: 'none' }, () => {})
  importedRange = { first: r.firstBlock!, last: r.lastBlock! }
})
after(() => rmSync(work, { recursive: true, force: true }))

function writeConfig(name: string, value: unknown): string {
  const file = join(work, name)
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2))
  return file
}

const getJson = async (url: string) => {
  const r = await request(url)
  assert.equal(r.status, 200, `${url}: ${r.text}`)
  return JSON.parse(r.text) as Record<string, unknown> & { number?: number }
}

test('one process serves an imported dataset, a followed chain and two views of the sample, each with its own metadata and head', async () => {
  const node = await FakeSolanaNode.start({
    startSlot: 500_000_000,
    intervalMs: 0,
    initialBlocks: 12,
    finalityLag: 4,
    txPerBlock: 2,
    seed: 3,
  })
  const file = writeConfig('two.json', {
    sources: { sample: { kind: 'sample' } },
    datasets: [
      // a relative path: resolved against the file's directory
      { name: 'imported', aliases: ['archive'], kind: 'solana', source: { kind: 'dataset-dir', path: 'imported' } },
      {
        name: 'live',
        source: { kind: 'rpc', url: node.url, dataDir: 'live-data', startSlot: node.firstSlot, pollMs: 20 },
        displayName: 'Followed chain',
      },
      { name: 'sample-stable', source: 'sample', view: 'stable' },
      { name: 'sample-all', source: 'sample', view: 'complete', bigintsAsNumbers: true },
    ],
  })
  mkdirSync(join(work, 'live-data'))
  const s = await serve(serveOptions({ config: file }), { logger: silent })
  try {
    await s.ready
    const list = (await getJson(`${s.url}/datasets`)) as unknown as { dataset: string; real_time: boolean }[]
    assert.deepEqual(
      list.map((d) => [d.dataset, d.real_time]),
      [
        ['imported', false],
        ['live', true],
        ['sample-stable', false],
        ['sample-all', false],
      ],
    )
    // the imported dataset: the sample's archives, from the whole mainnet block
    const meta = await getJson(`${s.url}/datasets/archive/metadata`)
    assert.deepEqual(meta, {
      dataset: 'imported',
      aliases: ['archive'],
      real_time: false,
      start_block: importedRange.first,
    })
    const head = await getJson(`${s.url}/datasets/imported/head`)
    assert.equal(head.number, importedRange.last)
    // the followed chain: its own head, on the fake node's slots
    const live = await getJson(`${s.url}/datasets/live/metadata?expand[]=metadata`)
    assert.equal(live.real_time, true)
    assert.deepEqual(live.metadata, { kind: 'solana', display_name: 'Followed chain', type: 'solana' })
    let liveHead: { number: number } | null = null
    for (const t0 = Date.now(); Date.now() - t0 < 30_000; await new Promise((r) => setTimeout(r, 50))) {
      liveHead = (await getJson(`${s.url}/datasets/live/head`)) as { number: number } | null
      if (liveHead?.number === node.tip.slot) break
    }
    assert.equal(liveHead?.number, node.tip.slot)
    assert.ok(liveHead!.number >= 500_000_000)
    const r = await postJson(`${s.url}/datasets/live/stream`, {
      type: 'solana',
      fromBlock: liveHead!.number,
      toBlock: liveHead!.number,
      fields: { block: { number: true } },
    })
    assert.equal(r.status, 200, r.text)
    assert.equal(JSON.parse(r.text.split('\n')[0]).header.number, liveHead!.number)
    // one source, two views: the stable one starts at the sample's whole mainnet block
    assert.equal((await getJson(`${s.url}/datasets/sample-stable`)).start_block, 254170887)
    assert.equal((await getJson(`${s.url}/datasets/sample-all`)).start_block, 100000000)
    // metrics of the followed chain are labelled with its dataset's name
    assert.match((await request(`${s.url}/metrics`)).text, /solportal_ingest_blocks_total\{dataset="live"\} [1-9]/)
    // a name the file does not declare
    assert.equal((await request(`${s.url}/datasets/solana-mainnet/head`)).status, 404)
  } finally {
    await s.stop()
    await node.stop()
  }
})

test('a wrong configuration file is refused with the path of the wrong key', async () => {
  const cases: [unknown, RegExp][] = [
    ['{\n  "datasets": [\n    { "name": "a", }\n  ]\n}', /bad\.json:3:20: not valid JSON/],
    [{ datasets: [] }, /datasets: must have at least 1 item/],
    [
      { datasets: [{ name: 'a', sorce: 'x' }] },
      /datasets\[0\]\.sorce: unknown key \(expected one of: name, aliases, kind/,
    ],
    [
      { datasets: [{ name: 'a', source: { kind: 'rcp' } }] },
      /datasets\[0\]\.source\.kind: must be one of sample, archive, dataset-dir, rpc, demo, got "rcp"/,
    ],
    [
      { datasets: [{ name: 'a', source: { kind: 'rpc', url: 'http://x', dataDir: 'd', concurrency: 0 } }] },
      /datasets\[0\]\.source\.concurrency: must be an integer in 1\.\.256, got 0/,
    ],
    [
      { datasets: [{ name: 'a', source: { kind: 'rpc', url: 'localhost:8899' } }] },
      /datasets\[0\]\.source\.url: must be an http/,
    ],
    [{ datasets: [{ name: 'a', source: { kind: 'archive' } }] }, /datasets\[0\]\.source\.paths: is required/],
    [
      { datasets: [{ name: 'a', source: { kind: 'archive', paths: ['nope.jsonl'] } }] },
      /datasets\[0\]\.source\.paths\[0\]: \S+nope\.jsonl: no such file/,
    ],
    [
      { datasets: [{ name: 'Bad Name', source: { kind: 'sample' } }] },
      /datasets\[0\]\.name: must be a name of lowercase/,
    ],
    [
      { datasets: [{ name: 'a', source: 'main' }] },
      /datasets\[0\]\.source: no source named 'main' under "sources" \(none declared\)/,
    ],
    [
      {
        sources: { s: { kind: 'sample' } },
        datasets: [
          { name: 'a', source: 's' },
          { name: 'b', aliases: ['a'], source: 's' },
        ],
      },
      /datasets\[1\]: the name or alias 'a' is already used by datasets\[0\] \(a\)/,
    ],
    [
      { datasets: [{ name: 'a', source: { kind: 'sample' }, view: 'beta' }] },
      /datasets\[0\]\.view: must be one of stable, complete/,
    ],
    [
      {
        datasets: [
          { name: 'a', source: { kind: 'demo', dataDir: 'same' } },
          { name: 'b', source: { kind: 'rpc', url: 'http://127.0.0.1:1', dataDir: './same' } },
        ],
      },
      /datasets\[1\]\.source\.dataDir: \S+same is also the data directory of datasets\[0\]\.source/,
    ],
    [
      { datasets: [{ name: 'a', source: { kind: 'sample' } }], port: 3000 },
      /port: unknown key \(expected one of: sources, datasets, apiKeys, cors, trustProxy\)/,
    ],
  ]
  for (const [i, [value, want]] of cases.entries()) {
    const file = writeConfig(i === 0 ? 'bad.json' : `bad-${i}.json`, value)
    await assert.rejects(serve(serveOptions({ config: file }), { logger: silent }), (e: Error) => {
      assert.equal(e.name, 'UsageError')
      assert.match(e.message, /^--config \S+\.json/)
      assert.match(e.message, want)
      return true
    })
  }
  await assert.rejects(
    serve(serveOptions({ config: join(work, 'absent.json') }), { logger: silent }),
    /absent\.json: no such file/,
  )
  const ok = writeConfig('ok.json', { datasets: [{ name: 'a', source: { kind: 'sample' } }] })
  await assert.rejects(
    serve(serveOptions({ config: ok, demo: true }), { logger: silent }),
    /--config cannot be used with --demo: the file's datasets name their sources/,
  )
})

test('solportal serve --config with a wrong file: one line, status 2', () => {
  const file = writeConfig('cli.json', { datasets: [{ name: 'a', source: { kind: 'dataset-dir', path: 'missing' } }] })
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--config', file, '--port', '0'],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  )
  assert.equal(r.status, 2, r.stderr)
  assert.match(
    r.stderr,
    /^solportal: error: --config \S+cli\.json: datasets\[0\]\.source\.path: \S+missing: no such file or directory\n$/,
  )
})

test('examples/serve-config.json (the documented example) serves its three datasets to its keys', async () => {
  const example = join(import.meta.dirname, '..', 'examples', 'serve-config.json')
  const s = await serve(serveOptions({ config: example }), { logger: silent })
  try {
    await s.ready
    const names = async (key: string) =>
      (
        JSON.parse((await request(`${s.url}/datasets`, { headers: { Authorization: `Bearer ${key}` } })).text) as {
          dataset: string
        }[]
      ).map((d) => d.dataset)
    assert.deepEqual(await names('team-a-secret-change-me'), ['solana-mainnet', 'solana-mainnet-complete'])
    assert.deepEqual(await names('demo-key-change-me-0000'), ['solana-demo'])
    assert.equal((await request(`${s.url}/datasets`)).status, 401)
    const pre = await request(`${s.url}/datasets/solana-demo/stream`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST' },
    })
    assert.equal(pre.status, 204)
  } finally {
    await s.stop()
  }
})
