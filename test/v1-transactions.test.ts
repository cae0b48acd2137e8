/**
 * Version 1 transactions (SIMD-0385) end to end: the bundled sample's v1 blocks through the
 * normalizer (object, text and bytes paths alike), the selectable `transactionConfig` field through
 * the memory and cold stores (chunks written before the field existed read it as null), Parquet
 * export, and a real-time dataset following the fake node over JSON-RPC and served over HTTP. The
 * fake node refuses a block holding transactions above the version a request declares (-32015), and
 * the follower stops at such a block, naming its slot and the version, instead of skipping it.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { DuckDBInstance } from '@duckdb/node-api'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { createRealtimeDataset, type RealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { RpcSource } from '../src/ingest/rpc/source.ts'
import { UnsupportedTransactionVersionError } from '../src/ingest/rpc/errors.ts'
import type { Block, Transaction } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { normalizeArchiveBytesInto, normalizeArchiveText } from '../src/normalize/text.ts'
import { executeQuery } from '../src/query/execute.ts'
import { parseQuery } from '../src/query/index.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine, RpcBlock, RpcTransaction } from '../src/rpc/types.ts'
import type { PortalServer } from '../src/server/http.ts'
import { blockJsonSchema } from '../src/server/openapi.ts'
import { readChunkBlocks, readFooter } from '../src/store/cold/chunk-file.ts'
import { coldDir, openDatasetDir, writeDatasetMeta } from '../src/store/dataset-dir.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { cli } from './support/cli.ts'
import { datasetOf, tempDir, writeStore } from './support/cold/util.ts'
import { followAndServe, silent, until } from './support/realtime/served.ts'

const ROOT = join(import.meta.dirname, '..')
const U64_MAX = '18446744073709551615'

/** the sample's archive lines (text) that hold version 1 transactions (blocks 120 on) */
const V1_TEXTS = gunzipSync(readFileSync(join(ROOT, 'data', 'sample', 'litesvm.jsonl.gz')))
  .toString('utf8')
  .split('\n')
  .filter((l) => l.includes('"version":1'))

/** a v1 line whose first v1 transaction declares the largest u64 priority fee (beyond 2^53) */
function bigFeeText(): string {
  const t = V1_TEXTS[0]
  const out = t.replace(/"priorityFee":(null|\d+)/, `"priorityFee":${U64_MAX}`)
  assert.notEqual(out, t)
  return out
}

/** the transactionConfig a transaction's message declares, as the model holds it (or null) */
function declared(tx: RpcTransaction) {
  const c = tx.transaction.message.transactionConfig
  if (c == null) return null
  return { ...c, priorityFee: c.priorityFee === null ? null : String(c.priorityFee) }
}

describe('normalizing version 1 transactions', () => {
  test('the object, text and bytes paths give the same records; version 1, transactionConfig, static accounts', () => {
    let v1 = 0
    for (const text of [bigFeeText(), ...V1_TEXTS.slice(1, 8)]) {
      const line = parseJsonExact(text) as ArchiveLine
      const want = normalizeBlock(line)
      assert.deepEqual(want.warnings, [])
      assert.deepStrictEqual(normalizeArchiveText(text), want)
      const slices: Block[] = []
      const r = normalizeArchiveBytesInto(Buffer.from(text), undefined, { every: 5, take: (b) => slices.push(b) })
      assert.deepStrictEqual(r.warnings, want.warnings)
      assert.deepStrictEqual(
        slices.flatMap((s) => s.transactions),
        want.block.transactions,
      )
      assert.deepStrictEqual(
        slices.flatMap((s) => s.instructions),
        want.block.instructions,
      )
      assert.deepStrictEqual(
        slices.flatMap((s) => s.balances),
        want.block.balances,
      )

      const src = line.block.transactions!
      for (const t of want.block.transactions) {
        const tx = src[t.transactionIndex]
        assert.equal(t.version, tx.version)
        assert.deepStrictEqual(t.transactionConfig, declared(tx))
        if (t.version !== 1) {
          assert.equal(t.transactionConfig, null)
          continue
        }
        v1++
        // no lookups: the account list is the static keys
        assert.deepEqual(t.addressTableLookups, [])
        assert.deepEqual(t.loadedAddresses, { writable: [], readonly: [] })
        for (const ix of want.block.instructions.filter((i) => i.transactionIndex === t.transactionIndex)) {
          for (const a of [ix.programId, ...ix.accounts]) assert.ok(t.accountKeys.includes(a))
        }
        for (const b of want.block.balances.filter((x) => x.transactionIndex === t.transactionIndex)) {
          assert.ok(t.accountKeys.includes(b.account))
        }
      }
    }
    assert.ok(v1 >= 8, `${v1} v1 transactions`)
    const big = normalizeArchiveText(bigFeeText()).block.transactions.find((t) => t.version === 1)!
    assert.equal(big.transactionConfig!.priorityFee, U64_MAX)
  })

  test('a transactionConfig out of its ranges skips the transaction with a warning naming the member', () => {
    const line = parseJsonExact(V1_TEXTS[0]) as ArchiveLine
    const txs = line.block.transactions!
    const i = txs.findIndex((t) => t.version === 1)
    const ok = normalizeBlock(line).block.transactions.length
    for (const [member, value] of [
      ['heapSize', -1],
      ['computeUnitLimit', 2 ** 32],
      ['loadedAccountsDataSizeLimit', 1.5],
      ['priorityFee', '12x'],
      ['priorityFee', '18446744073709551616'],
    ] as const) {
      const bad = structuredClone(line)
      ;(bad.block.transactions![i].transaction.message.transactionConfig as unknown as Record<string, unknown>)[
        member
      ] = value
      const r = normalizeBlock(bad)
      assert.equal(r.block.transactions.length, ok - 1, member)
      assert.ok(!r.block.transactions.some((t) => t.transactionIndex === i))
      assert.equal(r.warnings.length, 1)
      assert.match(r.warnings[0].message, new RegExp(`transactionConfig\\.${member}`))
      assert.equal(r.warnings[0].transactionIndex, i)
    }
  })
})

// --- querying ----------------------------------------------------------------------------------

function blocksOf(texts: string[]): Block[] {
  return texts.map((t) => normalizeArchiveText(t).block)
}

function txQuery(from: number, to: number, fields: Record<string, boolean>): unknown {
  return { type: 'solana', fromBlock: from, toBlock: to, fields: { transaction: fields }, transactions: [{}] }
}

async function lines(store: BlockStore, body: unknown, bigintsAsNumbers = false): Promise<string[]> {
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: 1e12, finalizedOnly: true, bigintsAsNumbers })) {
    out.push(b.line)
  }
  return out
}

/** the rendered transactions `{transactionIndex, version, transactionConfig}` expected of the blocks */
function expectedText(blocks: Block[], bare = false): string[] {
  return blocks.map((b) => {
    const txs = b.transactions.map((t) => {
      const c = t.transactionConfig
      const cfg =
        c == null
          ? 'null'
          : `{"computeUnitLimit":${c.computeUnitLimit},"heapSize":${c.heapSize},"loadedAccountsDataSizeLimit":` +
            `${c.loadedAccountsDataSizeLimit},"priorityFee":${c.priorityFee === null ? 'null' : bare ? c.priorityFee : `"${c.priorityFee}"`}}`
      return `{"transactionIndex":${t.transactionIndex},"version":${t.version === 'legacy' ? '"legacy"' : t.version},"transactionConfig":${cfg}}`
    })
    return `{"header":{"number":${b.header.number}},"transactions":[${txs.join(',')}]}`
  })
}

describe('transactionConfig in queries, cold chunks and exports', () => {
  const texts = [bigFeeText(), ...V1_TEXTS.slice(1, 12)]
  const blocks = blocksOf(texts)
  const from = blocks[0].header.number
  const to = blocks[blocks.length - 1].header.number
  const fields = { transactionIndex: true, version: true, transactionConfig: true }
  const body = {
    ...(txQuery(from, to, fields) as object),
    fields: { block: { number: true }, transaction: fields },
  }

  test('rendered only when selected, alike from the memory store and from cold chunks (amounts quoted or bare)', async () => {
    const memory = new StaticStore(blocks, 4)
    const cold = await datasetOf(blocks, {}, [5, 7])
    try {
      for (const bare of [false, true]) {
        const want = expectedText(blocks, bare)
        assert.deepEqual(await lines(memory, body, bare), want)
        assert.deepEqual(await lines(cold, body, bare), want)
      }
      const text = (await lines(cold, body)).join('\n')
      assert.ok(text.includes(`"priorityFee":"${U64_MAX}"`))
      assert.ok(text.includes('"version":1,"transactionConfig":{"computeUnitLimit":'))
      // not selected: not rendered
      const without = await lines(cold, txQuery(from, to, { transactionIndex: true, version: true }))
      assert.ok(without.length > 0 && without.every((l) => !l.includes('transactionConfig')))
    } finally {
      await cold.close()
    }
  })

  test('the rendered lines match the OpenAPI Block schema (quoted and bare amounts); a mis-shaped config does not', async () => {
    const v = new Ajv2020({ strict: true, allowUnionTypes: true }).compile(blockJsonSchema())
    const memory = new StaticStore(blocks, 4)
    const out = [...(await lines(memory, body)), ...(await lines(memory, body, true))]
    for (const l of out) assert.ok(v(JSON.parse(l)), `${l.slice(0, 300)}: ${JSON.stringify(v.errors)}`)
    const bad = JSON.parse(out.find((l) => l.includes('"version":1'))!)
    bad.transactions.find((t: { version: unknown }) => t.version === 1).transactionConfig.priorityFee = 1.5
    assert.equal(v(bad), false)
  })

  test('solportal import of an archive with v1 transactions stores them as the normalizer gives them', async () => {
    const work = tempDir('solportal-v1-import-')
    const archive = join(work, 'v1.jsonl')
    writeFileSync(archive, texts.join('\n') + '\n')
    const dir = join(work, 'ds')
    const r = await cli(['import', dir, archive, '--no-progress', '--chunk-blocks', '5'])
    assert.equal(r.code, 0, r.stderr)
    const store = await openDatasetDir(dir)
    try {
      assert.deepEqual(await lines(store, body), expectedText(blocks))
      assert.deepEqual(await lines(store, body, true), expectedText(blocks, true))
    } finally {
      await store.close()
    }
  })

  test('a chunk file written before the field existed reads it as null', async () => {
    const path = join(ROOT, 'test', 'fixtures', 'cold', 'format4-mainnet-before-shuffle.spc')
    assert.equal(readFooter(path).footer.kinds.transaction.cols.transactionConfig, undefined)
    const old = readChunkBlocks(path)
    const txs = old.flatMap((b) => b.transactions)
    assert.ok(txs.length > 0)
    for (const t of txs) assert.equal(t.transactionConfig, null)
    const q = txQuery(old[0].header.number, old[old.length - 1].header.number, { transactionConfig: true })
    const out = await lines(new StaticStore(old, 8), q)
    assert.ok(out.join('').includes('"transactions":[{"transactionConfig":null}'))
  })

  test('solportal export writes transactionConfig as JSON text and version 1 as "1", u64 exact', async () => {
    const dir = tempDir('solportal-v1-export-')
    writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false }, false)
    await writeStore(coldDir(dir), blocks, {}, [6])
    const out = join(tempDir('solportal-v1-export-out-'), 'pq')
    const r = await cli(['export', dir, out, '--from', String(from), '--to', String(to)])
    assert.equal(r.code, 0, r.stderr)
    const db = await DuckDBInstance.create(':memory:')
    const conn = await db.connect()
    const rows = (
      await conn.runAndReadAll(
        `SELECT blockNumber, transactionIndex, version, CAST(transactionConfig AS VARCHAR) AS c ` +
          `FROM '${join(out, 'transactions.parquet')}' ORDER BY blockNumber, transactionIndex`,
      )
    ).getRowObjectsJson()
    const want = blocks.flatMap((b) =>
      b.transactions.map((t: Transaction) => ({
        blockNumber: b.header.number,
        transactionIndex: t.transactionIndex,
        version: String(t.version),
        c: t.transactionConfig === null ? null : JSON.stringify(t.transactionConfig),
      })),
    )
    assert.deepEqual(rows, want)
    assert.ok(rows.some((x) => x.version === '1' && String(x.c).includes(`"priorityFee":"${U64_MAX}"`)))
  })
})

// --- over JSON-RPC -----------------------------------------------------------------------------

async function getBlock(url: string, slot: number, cfg: Record<string, unknown>) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'getBlock',
      params: [slot, { commitment: 'confirmed', ...cfg }],
    }),
  })
  return parseJsonExact(await r.text()) as { result?: RpcBlock; error?: { code: number; message: string } }
}

describe('version 1 transactions over JSON-RPC', () => {
  let node: FakeSolanaNode
  let ds: RealtimeDataset
  let server: PortalServer
  let base: string

  before(async () => {
    node = await FakeSolanaNode.start({
      templateLines: V1_TEXTS.slice(0, 6),
      intervalMs: 0,
      initialBlocks: 10,
      finalityLag: 4,
      skipRate: 0.2,
      seed: 3,
    })
    ;({ ds, server, base } = await followAndServe(node, tempDir('solportal-v1-rt-'), {
      headWaitMs: 200,
      responseTimeMs: 8_000,
    }))
    await until(() => ds.store.finalizedHead()?.number === node.finalizedSlot, 60_000, 'finalization')
  })

  after(async () => {
    await server?.close()
    await ds?.stop()
    await node?.stop()
  })

  test('the fake node refuses a block above the declared version with -32015, as mainnet does', async () => {
    const slot = node.chain().find((b) => b.template === 0)!.slot
    const v0 = await getBlock(node.url, slot, { maxSupportedTransactionVersion: 0 })
    assert.equal(v0.error?.code, -32015)
    assert.match(v0.error!.message, /^Transaction version \(1\) is not supported by the requesting client\./)
    assert.match(v0.error!.message, /"maxSupportedTransactionVersion": 1$/)
    // none declared: legacy only, the first versioned transaction of the block is named
    const none = await getBlock(node.url, slot, {})
    assert.equal(none.error?.code, -32015)
    const first = (await getBlock(node.url, slot, { maxSupportedTransactionVersion: 1 })).result!
    const firstVersioned = first.transactions!.find((t) => t.version !== 'legacy')!.version
    assert.match(none.error!.message, new RegExp(`^Transaction version \\(${firstVersioned}\\)`))
    assert.ok(first.transactions!.some((t) => t.version === 1))
  })

  test('serve --rpc: the streams give version 1 and transactionConfig when selected, hot and finalized alike', async () => {
    const chain = node.chain()
    const want: string[] = []
    for (const b of chain) {
      const r = (await getBlock(node.url, b.slot, { maxSupportedTransactionVersion: 1 })).result!
      want.push(...expectedText([normalizeBlock({ slot: b.slot, block: r }).block]))
    }
    const q = {
      type: 'solana',
      fromBlock: chain[0].slot,
      toBlock: chain[chain.length - 1].slot,
      fields: {
        block: { number: true },
        transaction: { transactionIndex: true, version: true, transactionConfig: true },
      },
      transactions: [{}],
    }
    const stream = async (path: string, body: unknown) => {
      const r = await fetch(`${base}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      assert.equal(r.status, 200, await r.clone().text())
      return (await r.text()).trim().split('\n')
    }
    assert.deepEqual(await stream('stream', q), want)
    const fin = chain.filter((b) => b.slot <= node.finalizedSlot)
    assert.ok(fin.length >= 3)
    assert.deepEqual(
      await stream('finalized-stream', { ...q, toBlock: fin[fin.length - 1].slot }),
      want.slice(0, fin.length),
    )
    assert.ok(want.join('').includes('"version":1,"transactionConfig":{"computeUnitLimit":'))
  })
})

describe('a block the node will not serve at version 1', () => {
  /** a sample block whose first v1 transaction claims version 2 (a version above the one requested) */
  const v2 = V1_TEXTS[1].replace('"version":1', '"version":2')

  test('serve --rpc exits with status 1 and one error line naming the slot and the version', async () => {
    const node = await FakeSolanaNode.start({
      templateLines: [v2],
      intervalMs: 0,
      initialBlocks: 3,
      skipRate: 0,
      finalityLag: 1,
      seed: 5,
    })
    try {
      const slot = node.finalizedSlot
      const dir = tempDir('solportal-v1-serve-')
      const r = await cli(['serve', '--rpc', node.url, '--data-dir', dir, '--port', '0', '--quiet'], {
        timeoutMs: 90_000,
      })
      // serve logs on stdout (src/log.ts)
      assert.equal(r.code, 1, r.stdout + r.stderr)
      const lines = r.stdout.split('\n').filter((l) => l.includes('-32015'))
      assert.equal(lines.length, 1, r.stdout)
      assert.match(lines[0], new RegExp(`slot ${slot}: the node holds a transaction of version 2`))
    } finally {
      await node.stop()
    }
  })

  test('RpcSource stops at the slot with the version the node named; the follower stops for good', async () => {
    const node = await FakeSolanaNode.start({
      templateLines: [V1_TEXTS[0], v2],
      intervalMs: 0,
      initialBlocks: 4,
      skipRate: 0,
      finalityLag: 1,
      seed: 5,
    })
    try {
      const bad = node.chain().find((b) => b.template === 1)!.slot
      const source = new RpcSource({ client: { url: node.url, maxRetries: 1 }, pollIntervalMs: 10 })
      const seen: number[] = []
      const err = await (async () => {
        try {
          for await (const ev of source.blocks(node.firstSlot)) if (ev.kind === 'block') seen.push(ev.slot)
        } catch (e) {
          return e
        }
      })()
      assert.ok(err instanceof UnsupportedTransactionVersionError, String(err))
      assert.equal(err.slot, bad)
      assert.equal(err.version, 2)
      assert.deepEqual(
        seen,
        node
          .chain()
          .map((b) => b.slot)
          .filter((s) => s < bad),
      )

      let fatal: Error | null = null
      const ds = await createRealtimeDataset({
        rpcUrl: node.url,
        dataDir: tempDir('solportal-v1-fatal-'),
        startSlot: node.firstSlot,
        pollIntervalMs: 10,
        retryDelayMs: 10,
        noSync: true,
        logger: silent,
        onFatal: (e) => (fatal = e),
      })
      ds.start()
      try {
        await until(() => fatal !== null, 60_000, 'the stop')
        const msg = (fatal as Error | null)!.message
        assert.match(msg, new RegExp(`^slot ${bad}: the node holds a transaction of version 2, above`))
        assert.ok(msg.includes('-32015'))
        assert.equal(ds.store.head()?.number, node.firstSlot)
      } finally {
        await ds.stop()
      }
    } finally {
      await node.stop()
    }
  })
})
