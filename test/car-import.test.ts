// Old Faithful CAR files: `solportal import` of the real mainnet files of slots 0-19 (blocks of
// votes, no metadata) gives the hashes, parent links, signatures and instructions the files hold,
// checked against @solana/kit's decoders of the same transaction bytes and against the facts of
// data/oldfaithful/SOURCES.md; the dataset directory serves them.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { copyFileSync, createReadStream, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { getCompiledTransactionMessageDecoder } from '@solana/transaction-messages'
import { getTransactionDecoder } from '@solana/transactions'
import { getBase58Decoder } from '@solana/codecs-strings'
import { runImport } from '../src/ingest/import/index.ts'
import { BlockAssembler, type CarBlock } from '../src/ingest/car/assemble.ts'
import { readCar, type CarSection } from '../src/ingest/car/reader.ts'
import type { Block } from '../src/model.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readChunkBlocks } from '../src/store/cold/chunk-file.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { tempDir } from './support/cold/util.ts'
import { postJson } from './support/http/client.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const OF = join(ROOT, 'data', 'oldfaithful')
const CARS = [join(OF, 'epoch-0-1.car'), join(OF, 'epoch-0-2.car')]
const SLOT0_HASH = '4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZAMdL4VZHirAn'

async function imported(dir: string): Promise<Block[]> {
  const s = await DiskColdStore.open(coldDir(dir), { readOnly: true, verify: 'full' })
  const out = s.entries.flatMap((e) => readChunkBlocks(join(coldDir(dir), 'chunks', e.file)))
  await s.close()
  return out
}

/** the blocks of CAR files as the assembler gives them (raw payloads) */
async function carBlocksOf(paths: string[]): Promise<CarBlock[]> {
  const out: CarBlock[] = []
  for (const p of paths) {
    const a = new BlockAssembler()
    for await (const s of readCar(createReadStream(p))) {
      if (!('data' in s)) continue
      const b = a.add(s as CarSection)
      if (b) out.push(b)
    }
  }
  return out
}

test('import of the real Old Faithful files of slots 0-19: hashes, parents, signatures, instructions', async () => {
  const work = tempDir()
  const raw = await carBlocksOf(CARS)
  assert.deepEqual(
    raw.map((b) => b.slot),
    Array.from({ length: 20 }, (_, i) => i),
  )
  for (const workers of [1, 2]) {
    const dir = join(work, `ds-${workers}`)
    const r = await runImport(dir, CARS, { includeVotes: true, progress: 'none', workers }, () => {})
    assert.equal(r.imported, 20)
    assert.equal(r.warnings, 0)
    const blocks = await imported(dir)
    assert.deepEqual(
      blocks.map((b) => b.header.number),
      raw.map((b) => b.slot),
    )
    const b58 = getBase58Decoder()
    const txDecoder = getTransactionDecoder()
    const msgDecoder = getCompiledTransactionMessageDecoder()
    assert.equal(blocks[0].header.hash, SLOT0_HASH)
    for (let i = 0; i < blocks.length; i++) {
      const h = blocks[i].header
      assert.equal(h.hash, b58.decode(raw[i].hash), `slot ${h.number}: the hash of its last entry`)
      assert.equal(h.parentNumber, i === 0 ? 0 : i - 1)
      // slot 0 is its own parent (as the RPC answers); the others link to the block before
      assert.equal(h.parentHash, i === 0 ? SLOT0_HASH : blocks[i - 1].header.hash)
      assert.equal(h.height, i === 0 ? 0 : null)
      assert.equal(h.timestamp, 0)
      // every transaction and instruction of the file, as @solana/kit decodes the same bytes
      const txs = blocks[i].transactions
      assert.equal(txs.length, raw[i].transactions.length)
      const ixs = blocks[i].instructions
      let k = 0
      for (let t = 0; t < txs.length; t++) {
        const bytes = Buffer.concat(raw[i].transactions[t].data)
        const tx = txDecoder.decode(bytes)
        const msg = msgDecoder.decode(tx.messageBytes) as unknown as {
          lifetimeToken: string
          staticAccounts: string[]
          instructions: { programAddressIndex: number; accountIndices?: number[]; data?: Uint8Array }[]
        }
        assert.deepEqual(
          txs[t].signatures,
          Object.values(tx.signatures).map((s) => b58.decode(s!)),
        )
        assert.equal(txs[t].recentBlockhash, msg.lifetimeToken)
        assert.equal(txs[t].fee, 0n, 'no metadata: no fee')
        for (const ci of msg.instructions) {
          const ix = ixs[k++]
          assert.equal(ix.transactionIndex, t)
          assert.equal(ix.programId, msg.staticAccounts[ci.programAddressIndex])
          assert.deepEqual(
            ix.accounts,
            (ci.accountIndices ?? []).map((a: number) => msg.staticAccounts[a]),
          )
          assert.equal(ix.data, b58.decode(ci.data ?? new Uint8Array()))
        }
      }
      assert.equal(k, ixs.length)
      assert.ok(txs.length > 0 || i === 0, 'the blocks hold votes')
    }
    // the slot-1 votes were made on slot 0's hash
    assert.ok(blocks[1].transactions.every((t) => t.recentBlockhash === SLOT0_HASH))
    assert.ok(blocks[1].instructions.every((x) => x.programId === 'Vote111111111111111111111111111111111111111'))
  }
  // without --include-votes the blocks are there, without their (vote) transactions
  const nv = join(work, 'no-votes')
  await runImport(nv, CARS, { progress: 'none', workers: 1 }, () => {})
  const blocks = await imported(nv)
  assert.equal(blocks.length, 20)
  assert.ok(blocks.every((b) => b.transactions.length === 0))
})

test('serve --dataset-dir answers the imported slots 0-19', async () => {
  const dir = join(tempDir(), 'ds')
  await runImport(dir, CARS, { includeVotes: true, progress: 'none', workers: 1 }, () => {})
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--dataset-dir', dir, '--quiet'],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  try {
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const on = (c: Buffer) => {
        out += c.toString()
        if (/listening on/.test(out)) resolve()
      }
      child.stdout!.on('data', on)
      child.stderr!.on('data', on)
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
    })
    const r = await postJson(`http://127.0.0.1:${port}/datasets/solana-mainnet/stream`, {
      type: 'solana',
      fromBlock: 0,
      toBlock: 19,
      includeAllBlocks: true,
      fields: {
        block: { number: true, hash: true, parentHash: true },
        transaction: { signatures: true, recentBlockhash: true },
      },
      transactions: [{}],
    })
    assert.equal(r.status, 200)
    const lines = r.text
      .split('\n')
      .filter(Boolean)
      .map(
        (l) =>
          JSON.parse(l) as {
            header: { number: number; hash: string; parentHash: string }
            transactions?: { recentBlockhash: string }[]
          },
      )
    assert.deepEqual(
      lines.map((l) => l.header.number),
      Array.from({ length: 20 }, (_, i) => i),
    )
    assert.equal(lines[0].header.hash, SLOT0_HASH)
    for (let i = 1; i < 20; i++) assert.equal(lines[i].header.parentHash, lines[i - 1].header.hash)
    assert.equal(lines[1].transactions![0].recentBlockhash, SLOT0_HASH)
    assert.equal(lines[19].header.hash, 'Bn4rzFuV1EwgsR54iwBXZWcxCSXuezFxyoE69kRpWPcC')
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
})

test('CAR imports resume: the parent hash comes from the dataset, a re-run skips what is stored', async () => {
  const dir = join(tempDir(), 'ds')
  const quiet = { includeVotes: true, progress: 'none' as const, workers: 1 }
  const a = await runImport(dir, [CARS[0]], quiet, () => {})
  assert.equal(a.imported, 10)
  // the second file in a run of its own: block 10's parent (9) is the dataset's last block
  const b = await runImport(dir, [CARS[1]], quiet, () => {})
  assert.equal(b.imported, 10)
  assert.equal(b.warnings, 0)
  const blocks = await imported(dir)
  assert.equal(blocks.length, 20)
  assert.equal(blocks[10].header.parentHash, blocks[9].header.hash)
  // both files again: everything is there with the same hashes
  const c = await runImport(dir, CARS, quiet, () => {})
  assert.deepEqual([c.imported, c.skipped], [0, 20])
  assert.deepEqual(await imported(dir), blocks)
})

test('a directory argument contributes its CAR files (recognized by their first bytes) as it does archive files', async () => {
  const work = tempDir()
  const quiet = { includeVotes: true, progress: 'none' as const, workers: 1 }
  const direct = join(work, 'direct')
  await runImport(direct, CARS, quiet, () => {})
  // no .car names (content decides), one in a subdirectory, and a file that is neither (left out)
  const inputs = join(work, 'inputs')
  mkdirSync(join(inputs, 'later'), { recursive: true })
  copyFileSync(CARS[0], join(inputs, 'epoch-0-part-1'))
  copyFileSync(CARS[1], join(inputs, 'later', 'epoch-0-part-2.bin'))
  writeFileSync(join(inputs, 'NOTES.txt'), 'not a block archive\n')
  const dir = join(work, 'from-dir')
  const r = await runImport(dir, [inputs], quiet, () => {})
  assert.deepEqual([r.imported, r.firstBlock, r.lastBlock, r.warnings], [20, 0, 19, 0])
  assert.deepEqual(await imported(dir), await imported(direct))
})
