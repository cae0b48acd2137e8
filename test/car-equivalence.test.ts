// A block read from an Old Faithful CAR file gives exactly the records its getBlock JSON gives:
// every real block of data/mainnet and data/geyser, and generated chained blocks (v1 transactions
// included), written as CAR files with protobuf metadata and rewards (what modern epochs hold;
// test/support/car/writer.ts, payloads split over small DataFrames) and read back through the
// reader, the block bundles of the import workers and the normalizer; the generated ones through
// `solportal import` with worker threads.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/ingest/import/index.ts'
import { formatArchiveLine } from '../src/ingest/archive.ts'
import { BlockAssembler } from '../src/ingest/car/assemble.ts'
import { bundleLine, bundleTransaction, normalizeBundleInto } from '../src/ingest/car/block.ts'
import { Chain } from '../src/ingest/car/blocks.ts'
import { decodeBundle, encodeBundle } from '../src/ingest/car/bundle.ts'
import { readCar, type CarSection } from '../src/ingest/car/reader.ts'
import { decodeWireTransaction, isWireVote } from '../src/ingest/car/tx-wire.ts'
import { decodeConfirmedBlock, encodeRewards, encodeTransactionStatusMeta } from '../src/ingest/solana-storage/index.ts'
import type { Block } from '../src/model.ts'
import { isVoteTransaction, normalizeBlock, normalizeBlockFrom } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine, RpcTransaction } from '../src/rpc/types.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { realBlocks } from './fixtures/normalize/blocks.ts'
import { writeCar, type CarWriterOptions } from './support/car/writer.ts'
import { archiveLines } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const proto: CarWriterOptions = {
  meta: (m) => (m ? encodeTransactionStatusMeta(m) : null),
  rewards: (r) => encodeRewards(r),
  frameSize: 300,
}

/** the block bundles of CAR bytes, as the import's reading thread hands them to the workers */
async function carBundles(bytes: Buffer): Promise<Buffer[]> {
  const asm = new BlockAssembler({ verify: true })
  const chain = new Chain()
  const out: Buffer[] = []
  async function* one() {
    yield bytes
  }
  for await (const s of readCar(one(), { verify: true })) {
    if (!('data' in s)) continue
    const b = asm.add(s as CarSection)
    if (!b) continue
    out.push(encodeBundle(b, chain.parentOf(b.parentSlot)))
    chain.seen(b.slot, b.hash)
  }
  return out
}

/** the records of the blocks of CAR bytes, read as the import reads them */
async function carRecords(bytes: Buffer): Promise<Block[]> {
  return (await carBundles(bytes)).map((b) => {
    const bundle = decodeBundle(b)
    const txs = { count: bundle.transactions.length, at: (i: number) => bundleTransaction(bundle, i) }
    return normalizeBlockFrom(bundleLine(bundle), { includeVotes: true }, txs).block
  })
}

/** the records of a block bundle as an import worker makes them (its slices joined) */
function workerRecords(bundle: Uint8Array, includeVotes: boolean) {
  const parts: Block[] = []
  const r = normalizeBundleInto(bundle, { includeVotes }, { every: 64, take: (p) => parts.push(p) })
  const block = { ...r.block }
  for (const k of ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const)
    (block[k] as unknown[]) = parts.flatMap((p) => p[k] as unknown[])
  return block
}

function expected(line: ArchiveLine, parentKnown: boolean): Block {
  const b = normalizeBlock(line, { includeVotes: true }).block
  if (!parentKnown) b.header.parentHash = ''
  return b
}

test('every real block of data/mainnet and data/geyser: CAR → records equals JSON → records', async () => {
  const lines: [string, ArchiveLine][] = realBlocks().map((b) => [b.name, structuredClone(b.line)])
  for (const [f, slot] of [
    ['18144001.bin', 18144001],
    ['43200000.bin', 43200000],
  ] as const) {
    lines.push([
      `geyser/${f}`,
      { slot, block: decodeConfirmedBlock(new Uint8Array(readFileSync(join(ROOT, 'data/geyser', f)))) },
    ])
  }
  let txs = 0
  for (const [name, line] of lines) {
    const got = await carRecords(writeCar([line], proto))
    assert.equal(got.length, 1, name)
    assert.deepEqual(got[0], expected(line, false), name)
    txs += got[0].transactions.length
  }
  assert.ok(txs > 900, `${txs} transactions`)
})

test('real blocks through the import worker: the votes it drops are recognized from their bytes, same records', async () => {
  let votes = 0
  for (const { name, line } of realBlocks()) {
    const [bundle] = await carBundles(writeCar([structuredClone(line)], proto))
    for (const t of decodeBundle(bundle).transactions) {
      const vote = isVoteTransaction(decodeWireTransaction(t.data) as RpcTransaction)
      assert.equal(isWireVote(t.data), vote, name)
      if (!vote) continue
      votes++
      // damaged vote bytes are not taken for a vote: their decoding reports them
      assert.equal(isWireVote(t.data.subarray(0, t.data.length - 1)), false)
      assert.equal(isWireVote(Buffer.concat([t.data, Buffer.from([0])])), false)
    }
    for (const includeVotes of [false, true]) {
      const want = normalizeBlock(line, { includeVotes })
      want.block.header.parentHash = ''
      assert.deepEqual(workerRecords(bundle, includeVotes), want.block, `${name} includeVotes ${includeVotes}`)
    }
  }
  assert.ok(votes > 100, `${votes} votes`)
})

/** generated chained blocks from the real mainnet block, some transactions turned into v1 ones */
function generated(count: number, startSlot: number): ArchiveLine[] {
  let n = 0
  return Array.from(archiveLines({ count, txPerBlock: 30, startSlot }), (text) => {
    const line = parseJsonExact(text) as ArchiveLine
    for (const t of line.block.transactions as RpcTransaction[]) {
      if (t.version !== 'legacy' || n++ % 4 !== 0) continue
      t.version = 1
      t.transaction.message.transactionConfig =
        n % 3 === 0
          ? { priorityFee: 5000 + n, computeUnitLimit: 200_000, loadedAccountsDataSizeLimit: null, heapSize: 65536 }
          : { priorityFee: null, computeUnitLimit: null, loadedAccountsDataSizeLimit: 1 << 20, heapSize: null }
    }
    return line
  })
}

test('generated blocks (v1 transactions, many DataFrames): solportal import of CAR files equals the JSON', async () => {
  const work = tempDir()
  const lines = generated(12, 220_000_000)
  assert.ok(lines.some((l) => l.block.transactions!.some((t) => t.version === 1)))
  assert.ok(lines.some((l) => l.block.transactions!.some((t) => t.version === 0)))
  const direct = await carRecords(writeCar(lines, proto))
  const want = lines.map((l, i) => expected(l, i > 0))
  assert.deepEqual(direct, want)
  const a = join(work, 'a.car')
  const b = join(work, 'b.car')
  writeFileSync(a, writeCar(lines.slice(0, 7), { ...proto, frameSize: 128 }))
  writeFileSync(b, writeCar(lines.slice(7), { ...proto, hash: 'fnv', index: 'absent' }))
  for (const votes of [true, false]) {
    const dir = join(work, `ds-${votes}`)
    const r = await runImport(
      dir,
      [a, b],
      { includeVotes: votes, progress: 'none', workers: 2, targetBlocks: 5 },
      () => {},
    )
    assert.equal(r.imported, 12)
    const s = await DiskColdStore.open(coldDir(dir), { readOnly: true, verify: 'full' })
    const got = s.entries.flatMap((e) => readChunkBlocks(join(coldDir(dir), 'chunks', e.file)))
    await s.close()
    const exp = lines.map((l, i) => {
      const x = normalizeBlock(l, { includeVotes: votes }).block
      if (i === 0) x.header.parentHash = ''
      return x
    })
    assert.deepEqual(got, exp, `includeVotes ${votes}`)
  }
  // archive lines, then a CAR file, in one command: the CAR's first block takes its parent hash
  // from the last line's block
  const jsonl = join(work, 'first.jsonl')
  writeFileSync(
    jsonl,
    lines
      .slice(0, 7)
      .map((l) => formatArchiveLine(l))
      .join('\n') + '\n',
  )
  const mixed = join(work, 'ds-mixed')
  const r = await runImport(mixed, [jsonl, b], { includeVotes: true, progress: 'none', workers: 1 }, () => {})
  assert.deepEqual([r.imported, r.warnings], [12, 0])
  const s = await DiskColdStore.open(coldDir(mixed), { readOnly: true, verify: 'full' })
  const got = s.entries.flatMap((e) => readChunkBlocks(join(coldDir(mixed), 'chunks', e.file)))
  await s.close()
  assert.deepEqual(
    got,
    lines.map((l) => normalizeBlock(l, { includeVotes: true }).block),
  )
})
