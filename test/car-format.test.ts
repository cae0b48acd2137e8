// Old Faithful CAR files, the format: the real epoch-39 nodes (legacy bincode metadata that ends
// early, DataFrames, Epoch, Subsets, Rewards) decode to what they hold; CAR files written from
// archive lines (test/support/car/writer.ts: legacy bincode metadata, payloads split over many
// DataFrames with CRC-64 or FNV hashes) import to the records of the same lines; a damaged file
// stops the import with one line naming the byte offset, and nothing of it is stored; an
// http:// URL whose server cuts the connection three times imports the same bytes.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/ingest/import/index.ts'
import { decodeLegacyMeta, decodeMetadata, decodeRewards } from '../src/ingest/car/meta.ts'
import {
  decodeNode,
  type DataFrameNode,
  type EpochNode,
  type SubsetNode,
  type TransactionNode,
} from '../src/ingest/car/nodes.ts'
import { decodeWireTransaction } from '../src/ingest/car/tx-wire.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine, RpcTransaction } from '../src/rpc/types.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { zstdDecompressSync } from '../src/util/zstd.mjs'
import { writeCar, type CarWriterOptions } from './support/car/writer.ts'
import { encodeLegacyMeta, encodeLegacyRewards } from './support/car/wire.ts'
import { archiveLines } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const NODES = join(ROOT, 'data', 'oldfaithful', 'nodes')
const node = (name: string) => decodeNode(readFileSync(join(NODES, `${name}.cbor`)))

async function imported(dir: string): Promise<Block[]> {
  const s = await DiskColdStore.open(coldDir(dir), { readOnly: true, verify: 'full' })
  const out = s.entries.flatMap((e) => readChunkBlocks(join(coldDir(dir), 'chunks', e.file)))
  await s.close()
  return out
}

test('the real epoch-39 nodes: legacy metadata, DataFrames, Epoch, Subsets, Rewards', () => {
  const epoch = node('epoch_raw0') as EpochNode
  assert.equal(epoch.kind, 4)
  assert.equal(epoch.epoch, 39)
  assert.equal(epoch.subsets.length, 18)
  assert.equal((node('epoch_raw1') as EpochNode).epoch, 120)
  const subset = node('subset_raw0') as SubsetNode
  assert.equal(subset.kind, 3)
  assert.equal(subset.first, 16848004)
  assert.ok(subset.last > subset.first && subset.blocks.length > 0)
  const block = node('block_raw1')
  assert.equal(block.kind, 2)
  assert.equal((block as { slot: number }).slot, 16848018)
  // DataFrames: hash (one written as a negative CBOR integer: the same 64 bits), index, total, next links
  const f0 = node('dataFrame_raw0') as DataFrameNode
  assert.deepEqual([f0.index, f0.total, Buffer.from(f0.data).toString()], [1, 2, ' world'])
  assert.equal(f0.hash, BigInt.asUintN(64, -0x4630c0a8d52653c2n))
  const f2 = node('dataFrame_raw2') as DataFrameNode
  assert.deepEqual([f2.index, f2.total, f2.hash], [22, 28, 0x48acf56598bd34f8n])
  assert.ok(f2.next.length > 0 && f2.next.length <= 5)
  // transactions of slot 16848004: votes whose metadata is legacy bincode ending after postBalances
  for (let i = 0; i < 6; i++) {
    const t = node(`transaction_raw${i}`) as TransactionNode
    const wire = decodeWireTransaction(t.data.data)
    assert.equal(wire.version, 'legacy')
    assert.equal(wire.transaction.message.accountKeys.length, 5)
    const meta = decodeMetadata(t.metadata.data)
    if (i === 3) {
      assert.equal(t.slot, 1)
      assert.equal(meta, null, 'empty metadata: none')
      continue
    }
    assert.equal(t.slot, 16848004)
    assert.ok(meta)
    assert.equal(meta.err, null)
    assert.equal(meta.fee, 5000)
    assert.equal(meta.preBalances.length, 5)
    // the fee payer paid the fee; nothing else moved
    assert.equal(Number(meta.preBalances[0]) - Number(meta.postBalances[0]), 5000)
    assert.deepEqual(meta.preBalances.slice(1), meta.postBalances.slice(1))
    assert.equal(meta.logMessages, undefined, 'the bytes end after postBalances')
  }
  const raw = zstdDecompressSync((node('transaction_raw0') as TransactionNode).metadata.data)
  assert.equal(raw.length, 108)
  assert.throws(() => decodeLegacyMeta(raw.subarray(0, 20)), /bincode (ends early|list of \d+ items beyond the bytes)/)
  // rewards: zstd of an empty bincode list
  assert.deepEqual(decodeRewards((node('rewards_raw0') as { data: DataFrameNode }).data.data), [])
})

/** generated chained blocks (the real mainnet block's transactions), reduced to what legacy bincode holds */
function legacyLines(count: number, startSlot: number): ArchiveLine[] {
  return Array.from(archiveLines({ count, txPerBlock: 12, startSlot }), (text) => {
    const line = parseJsonExact(text) as ArchiveLine
    const txs = (line.block.transactions as RpcTransaction[]).filter((t) => t.version === 'legacy')
    for (const t of txs) {
      const m = t.meta!
      delete m.loadedAddresses
      delete m.returnData
      delete m.computeUnitsConsumed
      for (const ii of m.innerInstructions ?? []) for (const ix of ii.instructions) ix.stackHeight = null
    }
    line.block.transactions = txs
    return line
  })
}

const legacy: Pick<CarWriterOptions, 'meta' | 'rewards'> = {
  meta: (m) => (m ? encodeLegacyMeta(m) : null),
  rewards: encodeLegacyRewards,
}

test('CAR files written from archive lines (legacy metadata, many DataFrames) import to the lines records', async () => {
  const work = tempDir()
  const lines = legacyLines(12, 200_000_000)
  assert.ok(lines.every((l) => (l.block.transactions ?? []).length > 0))
  const txs = lines.flatMap((l) => l.block.transactions!)
  assert.ok(txs.some((t) => t.meta!.err != null) && txs.some((t) => (t.meta!.innerInstructions ?? []).length > 0))
  assert.ok(txs.some((t) => (t.meta!.postTokenBalances ?? []).length > 0))
  const want = lines.map((l) => normalizeBlock(l, { includeVotes: true }).block)
  // the first block's parent is in no file of the import: unknown
  want[0].header.parentHash = ''
  const variants: [string, Partial<CarWriterOptions>][] = [
    ['one frame each', {}],
    ['64-byte frames, CRC-64', { frameSize: 64, hash: 'crc' }],
    ['100-byte frames, FNV-1a, index null, no heights', { frameSize: 100, hash: 'fnv', index: 'null', heights: false }],
  ]
  for (const [name, o] of variants) {
    const a = join(work, `${name}-a.car`)
    const b = join(work, `${name}-b.car`)
    writeFileSync(a, writeCar(lines.slice(0, 5), { ...legacy, ...o }))
    writeFileSync(b, writeCar(lines.slice(5), { ...legacy, ...o }))
    const dir = join(work, name)
    await runImport(dir, [a, b], { includeVotes: true, progress: 'none', workers: 1, verify: true }, () => {})
    const got = await imported(dir)
    const exp = o.heights === false ? want.map((w) => ({ ...w, header: { ...w.header, height: null } })) : want
    assert.deepEqual(got, exp, name)
  }
})

/** a CAR file of 3 generated blocks with multi-frame payloads, and where its sections start */
function sample(work: string): { path: string; bytes: Buffer } {
  const bytes = writeCar(legacyLines(3, 210_000_000), { ...legacy, frameSize: 200 })
  const path = join(work, `sample-${Math.random()}.car`)
  writeFileSync(path, bytes)
  return { path, bytes }
}

/** the sections' offsets (after the header) and lengths */
function sections(b: Buffer): { at: number; end: number; data: number }[] {
  const out = []
  const varint = (p: number) => {
    let n = 0
    let mul = 1
    for (;;) {
      const x = b[p++]
      n += (x & 0x7f) * mul
      if (x < 0x80) return { n, p }
      mul *= 128
    }
  }
  let { n, p } = varint(0)
  p += n
  while (p < b.length) {
    const at = p
    ;({ n, p } = varint(p))
    out.push({ at, end: p + n, data: p + 36 })
    p += n
  }
  return out
}

test('a damaged CAR file stops the import with one line naming the byte offset; nothing is stored', async () => {
  const work = tempDir()
  const { bytes } = sample(work)
  const secs = sections(bytes)
  const txSec = secs.find((s) => bytes[s.data + 1] === 0)!
  const frameSecs = secs.filter((s) => bytes[s.data + 1] === 6)
  assert.ok(frameSecs.length > 3, 'multi-frame payloads')
  const cases: [string, Buffer, RegExp, boolean?][] = [
    // a length varint of 9 continuation bytes
    [
      'bad varint',
      Buffer.concat([bytes.subarray(0, secs[1].at), Buffer.alloc(9, 0xff), bytes.subarray(secs[1].at)]),
      new RegExp(`bad varint \\(too long\\) \\(at byte ${secs[1].at}\\)`),
    ],
    [
      'truncated section',
      bytes.subarray(0, secs[4].at + 20),
      new RegExp(`truncated section: \\d+ bytes announced, \\d+ left \\(at byte ${secs[4].at}\\)`),
    ],
    [
      'truncated between sections',
      bytes.subarray(0, secs[4].at),
      /ends with \d+ nodes of a block without its Block node \(at byte \d+\)/,
    ],
    ['unknown kind', patch(bytes, txSec.data + 1, 9), new RegExp(`unknown node kind 9 \\(at byte ${txSec.data}\\)`)],
    [
      'wrong CID (--verify)',
      patch(bytes, txSec.data + 40, bytes[txSec.data + 40] ^ 1),
      new RegExp(`node bytes do not match their CID \\(sha256\\) \\(at byte ${txSec.data}\\)`),
      true,
    ],
    [
      'missing DataFrame',
      Buffer.concat([bytes.subarray(0, frameSecs[0].at), bytes.subarray(frameSecs[0].end)]),
      /DataFrame b\w+ missing \(at byte \d+\)/,
    ],
    [
      'DataFrame hash',
      patch(bytes, frameSecs[0].data + 20, bytes[frameSecs[0].data + 20] ^ 0x10),
      /does not match its hash .* \(at byte \d+\)/,
    ],
  ]
  for (const [name, damaged, re, verify] of cases) {
    const path = join(work, `${name}.car`)
    writeFileSync(path, damaged)
    const dir = join(work, `ds-${name}`)
    await assert.rejects(
      runImport(dir, [path], { includeVotes: true, progress: 'none', workers: 1, verify }, () => {}),
      (e: Error) => {
        assert.match(e.message, re, name)
        assert.ok(e.message.startsWith(path), name)
        assert.ok(!e.message.includes('\n'), name)
        return true
      },
    )
    assert.deepEqual(await imported(dir), [], `${name}: nothing stored`)
  }
  // through the CLI: exit 1, one line
  const path = join(work, 'unknown kind.car')
  const r = spawnSync(process.execPath, ['bin/solportal.js', 'import', '--no-progress', join(work, 'cli-ds'), path], {
    cwd: ROOT,
    encoding: 'utf8',
  })
  assert.equal(r.status, 1)
  assert.match(r.stderr, /^import failed: .*unknown node kind 9 \(at byte \d+\)\n$/)
})

function patch(b: Buffer, at: number, v: number): Buffer {
  const c = Buffer.from(b)
  c[at] = v
  return c
}

test('an http:// URL whose server cuts the connection three times imports the same bytes as the file', async () => {
  const work = tempDir()
  const { path, bytes } = sample(work)
  let cuts = 0
  const ranges: string[] = []
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    const from = m ? Number(m[1]) : 0
    ranges.push(req.headers.range ?? '')
    const body = bytes.subarray(from)
    const head = m
      ? { status: 206, headers: { 'content-range': `bytes ${from}-${bytes.length - 1}/${bytes.length}` } }
      : { status: 200, headers: {} }
    res.writeHead(head.status, { ...head.headers, 'content-length': body.length, 'accept-ranges': 'bytes' })
    if (req.method === 'HEAD') return res.end()
    if (cuts < 3) {
      cuts++
      // part of the body, then the connection is cut
      res.write(body.subarray(0, Math.floor(body.length / 3)), () => res.socket?.destroy())
      return
    }
    res.end(body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/epoch.car`
    const resumed: number[] = []
    const a = join(work, 'from-url')
    const b = join(work, 'from-file')
    const r = await runImport(
      a,
      [url],
      { includeVotes: true, progress: 'none', workers: 1, verify: true, onResume: (o) => resumed.push(o) },
      () => {},
    )
    await runImport(b, [path], { includeVotes: true, progress: 'none', workers: 1 }, () => {})
    assert.equal(r.imported, 3)
    assert.equal(cuts, 3)
    assert.equal(resumed.length, 3)
    assert.ok(
      resumed.every((o, i) => o > (resumed[i - 1] ?? 0)),
      'each resumption further on',
    )
    assert.deepEqual(
      ranges.filter(Boolean),
      resumed.map((o) => `bytes=${o}-`),
    )
    // byte for byte the same chunk files
    const files = (d: string) => readdirSync(join(coldDir(d), 'chunks')).sort()
    assert.deepEqual(files(a), files(b))
    for (const f of files(a))
      assert.ok(readFileSync(join(coldDir(a), 'chunks', f)).equals(readFileSync(join(coldDir(b), 'chunks', f))))
    assert.ok((await imported(a)).length === 3)
  } finally {
    server.close()
  }
})

test('base58 text (the fast encoder of keys, signatures and data) equals @solana/kit', async () => {
  const { base58Encode } = await import('../src/util/base58.ts')
  const { getBase58Decoder } = await import('@solana/codecs-strings')
  const { randomBytes } = await import('node:crypto')
  const kit = getBase58Decoder()
  for (const n of [0, 1, 2, 3, 31, 32, 33, 64, 65, 119, 120, 121, 122, 255, 700, 1232]) {
    for (let r = 0; r < 12; r++) {
      const b = randomBytes(n)
      for (let z = 0; z < r % 4 && z < n; z++) b[z] = 0
      if (r === 5) b.fill(0)
      if (r === 6) b.fill(255)
      const want = kit.decode(b)
      assert.equal(base58Encode(b), want, `${n} bytes`)
      const within = Buffer.concat([randomBytes(3), b, randomBytes(2)])
      assert.equal(base58Encode(within, 3, 3 + n), want, `${n} bytes within others`)
    }
  }
})

test('a version 1 transaction as @solana/kit 8.4 encodes it decodes to the getBlock JSON (and the test writer makes the same bytes)', async () => {
  const { getCompiledTransactionMessageEncoder } = await import('@solana/transaction-messages')
  const { getTransactionEncoder } = await import('@solana/transactions')
  const { randomBytes } = await import('node:crypto')
  const { base58Encode } = await import('../src/util/base58.ts')
  const { encodeWireTransaction } = await import('./support/car/wire.ts')
  const keys = [randomBytes(32), randomBytes(32), randomBytes(32), randomBytes(32)].map((k) => base58Encode(k))
  const blockhash = base58Encode(randomBytes(32))
  const message = {
    version: 1 as const,
    header: { numSignerAccounts: 2, numReadonlySignerAccounts: 1, numReadonlyNonSignerAccounts: 1 },
    configMask: 0b11111,
    configValues: [
      { kind: 'u64' as const, value: 12345678901234n },
      { kind: 'u32' as const, value: 200000 },
      { kind: 'u32' as const, value: 65536 },
      { kind: 'u32' as const, value: 262144 },
    ],
    lifetimeToken: blockhash,
    numInstructions: 2,
    numStaticAccounts: 4,
    staticAccounts: keys,
    instructionHeaders: [
      { programAccountIndex: 3, numInstructionAccounts: 2, numInstructionDataBytes: 3 },
      { programAccountIndex: 2, numInstructionAccounts: 0, numInstructionDataBytes: 0 },
    ],
    instructionPayloads: [
      { instructionAccountIndices: [0, 1], instructionData: new Uint8Array([1, 2, 3]) },
      { instructionAccountIndices: [], instructionData: new Uint8Array() },
    ],
  }
  const messageBytes = getCompiledTransactionMessageEncoder().encode(message as never)
  const sigs = [randomBytes(64), randomBytes(64)]
  const bytes = getTransactionEncoder().encode({
    messageBytes,
    signatures: { [keys[0]]: sigs[0], [keys[1]]: sigs[1] },
  } as never)
  const tx = decodeWireTransaction(new Uint8Array(bytes))
  const want = {
    version: 1,
    transaction: {
      signatures: sigs.map((s) => base58Encode(s)),
      message: {
        accountKeys: keys,
        header: { numRequiredSignatures: 2, numReadonlySignedAccounts: 1, numReadonlyUnsignedAccounts: 1 },
        recentBlockhash: blockhash,
        instructions: [
          { programIdIndex: 3, accounts: [0, 1], data: base58Encode(new Uint8Array([1, 2, 3])), stackHeight: null },
          { programIdIndex: 2, accounts: [], data: '', stackHeight: null },
        ],
        transactionConfig: {
          priorityFee: 12345678901234,
          computeUnitLimit: 200000,
          loadedAccountsDataSizeLimit: 65536,
          heapSize: 262144,
        },
      },
    },
  }
  assert.deepEqual(tx, want)
  assert.ok(Buffer.from(encodeWireTransaction({ ...want, meta: null } as RpcTransaction)).equals(Buffer.from(bytes)))
})

test("the test writer's v0 and legacy wire bytes are what @solana/kit decodes (the real block 254170887)", async () => {
  const { getCompiledTransactionMessageDecoder } = await import('@solana/transaction-messages')
  const { getTransactionDecoder } = await import('@solana/transactions')
  const { getBase58Decoder } = await import('@solana/codecs-strings')
  const { encodeWireTransaction } = await import('./support/car/wire.ts')
  const { wholeBlock } = await import('./fixtures/normalize/blocks.ts')
  const b58 = getBase58Decoder()
  const txs = wholeBlock().block.transactions as RpcTransaction[]
  let v0 = 0
  for (const tx of txs) {
    const bytes = encodeWireTransaction(tx)
    assert.deepEqual(decodeWireTransaction(bytes), { transaction: tx.transaction, version: tx.version })
    const kt = getTransactionDecoder().decode(bytes)
    const m = getCompiledTransactionMessageDecoder().decode(kt.messageBytes) as unknown as {
      version: number | 'legacy'
      staticAccounts: string[]
      lifetimeToken: string
      addressTableLookups?: { lookupTableAddress: string; writableIndexes: number[]; readonlyIndexes: number[] }[]
    }
    assert.equal(m.version, tx.version)
    assert.deepEqual(m.staticAccounts, tx.transaction.message.accountKeys)
    assert.equal(m.lifetimeToken, tx.transaction.message.recentBlockhash)
    assert.deepEqual(
      Object.values(kt.signatures).map((s) => b58.decode(s!)),
      tx.transaction.signatures,
    )
    if (tx.version === 0) {
      v0++
      assert.deepEqual(
        (m.addressTableLookups ?? []).map((l) => [l.lookupTableAddress, l.writableIndexes, l.readonlyIndexes]),
        tx.transaction.message.addressTableLookups!.map((l) => [l.accountKey, l.writableIndexes, l.readonlyIndexes]),
      )
    }
  }
  assert.ok(v0 > 200)
})
