/**
 * solana-storage protobuf ↔ getBlock JSON (src/ingest/solana-storage): the real protobuf blocks of
 * data/geyser decode to consistent getBlock JSON and re-encode to the same bytes; every real JSON
 * block of data/mainnet and generated blocks go JSON → protobuf → JSON to the same records; the
 * bincode TransactionError codec; the wire reader's limits.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { BlockGenerator, loadTemplates } from '../src/ingest/generate.ts'
import {
  decodeConfirmedBlock,
  decodeConfirmedBlockFull,
  decodeConfirmedTransaction,
  decodeRewards,
  decodeTransaction,
  decodeTransactionStatusMeta,
  encodeConfirmedBlock,
  encodeConfirmedTransaction,
  encodeRewards,
  encodeTransaction,
  encodeTransactionStatusMeta,
  INSTRUCTION_ERRORS,
  LEN,
  ProtoError,
  ProtoReader,
  ProtoWriter,
  STORAGE_FIELDS,
  StorageDecoder,
  TRANSACTION_ERRORS,
  TransactionErrorFormatError,
  transactionErrorFromJson,
  transactionErrorToJson,
  VARINT,
} from '../src/ingest/solana-storage/index.ts'
import { decodeBase58Scratch } from '../src/ingest/solana-storage/b58.ts'
import { TextCache } from '../src/ingest/solana-storage/text-cache.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { ArchiveLine, RpcBlock, RpcTransactionMeta } from '../src/rpc/types.ts'
import { base58Decode, base58Encode, isAddress, isSignature } from '../src/util/base58.ts'
import { realBlocks } from './fixtures/normalize/blocks.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const GEYSER = join(ROOT, 'data/geyser')
const bin = (name: string) => new Uint8Array(readFileSync(join(GEYSER, name)))

/** The records of a block, votes included (what every ingest path stores). */
function records(slot: number, block: RpcBlock) {
  return normalizeBlock({ slot, block }, { includeVotes: true })
}

function roundTrip(block: RpcBlock): RpcBlock {
  return decodeConfirmedBlock(encodeConfirmedBlock(block))
}

test('real ConfirmedBlocks 18144001 and 43200000 decode to consistent getBlock JSON', () => {
  const cases = [
    { file: '18144001.bin', slot: 18144001, txs: 89, blockTime: null },
    { file: '43200000.bin', slot: 43200000, txs: 208, blockTime: 1603254141 },
  ]
  for (const c of cases) {
    const { block, numPartitions } = decodeConfirmedBlockFull(bin(c.file))
    assert.equal(numPartitions, null)
    assert.equal(block.parentSlot, c.slot - 1)
    assert.equal(block.blockTime, c.blockTime)
    assert.equal(block.blockHeight, null)
    assert.ok(isAddress(block.blockhash) && isAddress(block.previousBlockhash))
    assert.deepEqual(block.rewards, [])
    const txs = block.transactions!
    assert.equal(txs.length, c.txs)
    for (const tx of txs) {
      const msg = tx.transaction.message
      assert.equal(tx.version, 'legacy')
      assert.equal(tx.transaction.signatures.length, msg.header.numRequiredSignatures)
      for (const s of tx.transaction.signatures) assert.ok(isSignature(s), s)
      for (const k of msg.accountKeys) assert.ok(isAddress(k), k)
      assert.ok(isAddress(msg.recentBlockhash))
      const meta = tx.meta!
      const n = msg.accountKeys.length + meta.loadedAddresses!.writable.length + meta.loadedAddresses!.readonly.length
      assert.equal(meta.preBalances.length, n)
      assert.equal(meta.postBalances.length, n)
      for (const ix of msg.instructions) {
        assert.ok(ix.programIdIndex < n)
        for (const a of ix.accounts) assert.ok(a < n)
        assert.equal(ix.stackHeight, null)
      }
      assert.deepEqual(meta.status, meta.err === null ? { Ok: null } : { Err: meta.err })
      assert.equal(meta.fee, 5000 * msg.header.numRequiredSignatures)
    }
    const { block: records1, warnings } = records(c.slot, block)
    // 2020 logs had no invoke lines (votes logged nothing, programs "Call BPF program ..."; 18144001
    // carries no log lists at all): the normalizer notes the missing invoke lines, and nothing else
    assert.ok(warnings.length > 0)
    for (const w of warnings) assert.match(w.message, /^missing invoke line for instruction\(s\) \[0\] /)
    assert.equal(records1.transactions.length, c.txs)
  }
  const b = decodeConfirmedBlock(bin('43200000.bin'))
  const logs = b.transactions!.reduce((a, t) => a + (t.meta!.logMessages?.length ?? 0), 0)
  assert.equal(logs, 296)
  const inner = b.transactions!.filter((t) => (t.meta!.innerInstructions?.length ?? 0) > 0)
  assert.ok(inner.length > 0)
  assert.deepEqual([...new Set(b.transactions!.map((t) => JSON.stringify(t.meta!.err)))].sort(), [
    'null',
    '{"InstructionError":[0,{"Custom":0}]}',
  ])
  // the old block carries no log or inner-instruction lists: null, as getBlock renders `*_none`
  const old = decodeConfirmedBlock(bin('18144001.bin'))
  assert.ok(old.transactions!.every((t) => t.meta!.logMessages === null && t.meta!.innerInstructions === null))
})

test('real ConfirmedBlocks re-encode byte for byte', () => {
  for (const f of ['18144001.bin', '43200000.bin']) {
    const bytes = bin(f)
    const { block, numPartitions } = decodeConfirmedBlockFull(bytes)
    const again = encodeConfirmedBlock(block, { numPartitions })
    assert.ok(Buffer.from(again).equals(Buffer.from(bytes)), f)
  }
})

/** SubscribeUpdateTransaction { info = 1 { signature = 1, is_vote = 2, transaction = 3, meta = 4, index = 5 }, slot = 2 } */
function readTransactionUpdate(bytes: Uint8Array) {
  const r = new ProtoReader(bytes)
  let slot: number | string = 0
  let index: number | string = 0
  let signature: Uint8Array = new Uint8Array(0)
  let tx: Uint8Array = new Uint8Array(0)
  let meta: Uint8Array = new Uint8Array(0)
  while (r.pos < r.end) {
    const t = r.tag()
    if (t === ((1 << 3) | LEN)) {
      const e = r.lenEnd()
      const info = new ProtoReader(bytes, r.pos, e)
      r.pos = e
      while (info.pos < info.end) {
        const t2 = info.tag()
        if (t2 >>> 3 === 1) signature = info.bytes()
        else if (t2 >>> 3 === 3) tx = info.bytes()
        else if (t2 >>> 3 === 4) meta = info.bytes()
        else if (t2 >>> 3 === 5) index = info.u64()
        else info.skip(t2 & 7)
      }
    } else if (t === ((2 << 3) | VARINT)) slot = r.u64()
    else r.skip(t & 7)
  }
  return { slot, index, signature, tx, meta }
}

test('a real v0 Geyser transaction update: transaction and meta decode and re-encode exactly', () => {
  const u = readTransactionUpdate(bin('subscribe-update-transaction-v0.bin'))
  assert.equal(u.slot, 420181274)
  assert.equal(u.index, 159)
  const { transaction, version } = decodeTransaction(u.tx)
  const meta = decodeTransactionStatusMeta(u.meta)
  assert.equal(version, 0)
  assert.equal(transaction.message.accountKeys.length, 17)
  assert.equal(transaction.message.addressTableLookups!.length, 1)
  assert.equal(meta.loadedAddresses!.writable.length, 5)
  assert.equal(meta.loadedAddresses!.readonly.length, 5)
  assert.equal(meta.preBalances.length, 27)
  assert.equal(meta.postBalances.length, 27)
  assert.equal(meta.logMessages!.length, 64)
  assert.equal(meta.preTokenBalances!.length, 6)
  assert.equal(meta.postTokenBalances!.length, 6)
  assert.ok(meta.returnData && isAddress(meta.returnData.programId) && meta.returnData.data[1] === 'base64')
  assert.equal(typeof meta.computeUnitsConsumed, 'number')
  const lookup = transaction.message.addressTableLookups![0]
  assert.equal(lookup.writableIndexes.length, 5)
  assert.equal(lookup.readonlyIndexes.length, 5)
  for (const tb of [...meta.preTokenBalances!, ...meta.postTokenBalances!]) {
    assert.ok(isAddress(tb.mint) && isAddress(tb.owner) && isAddress(tb.programId))
    assert.ok(tb.accountIndex < 27)
    assert.match(tb.uiTokenAmount.amount, /^\d+$/)
  }
  for (const ii of meta.innerInstructions!) for (const ix of ii.instructions) assert.ok((ix.stackHeight ?? 0) >= 2)
  // the signature of the update is the transaction's first
  assert.equal(
    transaction.signatures[0],
    decodeTransaction(encodeTransaction(transaction, 0)).transaction.signatures[0],
  )
  assert.ok(Buffer.from(encodeTransaction(transaction, version)).equals(Buffer.from(u.tx)))
  assert.ok(Buffer.from(encodeTransactionStatusMeta(meta)).equals(Buffer.from(u.meta)))
  // and it normalizes cleanly inside a block
  const block: RpcBlock = {
    blockhash: transaction.message.recentBlockhash,
    previousBlockhash: transaction.message.recentBlockhash,
    parentSlot: 420181273,
    transactions: [{ transaction, meta, version }],
    rewards: [],
  }
  const { warnings, block: recs } = records(420181274, block)
  assert.deepEqual(warnings, [])
  assert.equal(recs.transactions.length, 1)
  const inner = meta.innerInstructions!.reduce((a, ii) => a + ii.instructions.length, 0)
  assert.equal(recs.instructions.length, transaction.message.instructions.length + inner)
  assert.ok(recs.tokenBalances.length >= 6)
})

test('every real JSON block: getBlock JSON → protobuf → JSON gives the same records', () => {
  for (const { name, line } of realBlocks()) {
    const back = roundTrip(line.block)
    assert.deepEqual(records(line.slot, back), records(line.slot, line.block), name)
  }
})

test('the whole mainnet block 254170887 comes back as the identical getBlock JSON', () => {
  const line = realBlocks().find((b) => b.name === 'blocks/254170887')!.line
  assert.deepStrictEqual(roundTrip(line.block), line.block)
})

test('generated blocks: JSON → protobuf → JSON gives the same records', () => {
  const g = new BlockGenerator(loadTemplates(), { blocks: 3, seed: 7, txsPerBlock: 120 })
  for (let i = 0; i < 3; i++) {
    const line = parseJsonExact(g.next()) as ArchiveLine
    const back = roundTrip(line.block)
    assert.deepEqual(records(line.slot, back), records(line.slot, line.block))
  }
})

test('real carbon metas: TransactionStatusMeta round trip', () => {
  const dir = join(ROOT, 'data/mainnet/carbon')
  for (const f of readdirSync(dir)) {
    const meta = parseJsonExact(readFileSync(join(dir, f), 'utf8')) as RpcTransactionMeta
    assert.deepStrictEqual(decodeTransactionStatusMeta(encodeTransactionStatusMeta(meta)), meta, f)
  }
})

test('TransactionError: bincode bytes → RPC JSON, every variant, and back', () => {
  const le = (...words: number[]) => words.flatMap((w) => [w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, w >>> 24])
  const cases: [number[], unknown][] = [
    [le(0), 'AccountInUse'],
    [le(7), 'BlockhashNotFound'],
    [[...le(8), 3, ...le(25, 27)], { InstructionError: [3, { Custom: 27 }] }],
    [[...le(8), 0, ...le(25, 0xffffffff)], { InstructionError: [0, { Custom: 4294967295 }] }],
    [[...le(8), 2, ...le(49)], { InstructionError: [2, 'IllegalOwner'] }],
    [[...le(8), 1, ...le(44)], { InstructionError: [1, 'BorshIoError'] }],
    [[...le(30), 4], { DuplicateInstruction: 4 }],
    [[...le(31), 2], { InsufficientFundsForRent: { account_index: 2 } }],
    [[...le(35), 9], { ProgramExecutionTemporarilyRestricted: { account_index: 9 } }],
    [le(27), 'InvalidRentPayingAccount'],
    [le(38), 'CommitCancelled'],
  ]
  for (const [bytes, json] of cases) {
    assert.deepStrictEqual(transactionErrorToJson(Uint8Array.from(bytes)), json)
    assert.deepStrictEqual([...transactionErrorFromJson(json)], bytes)
  }
  // every unit variant, both enums
  for (let tag = 0; tag < TRANSACTION_ERRORS.length; tag++) {
    if ([8, 30, 31, 35].includes(tag)) continue
    const bytes = Uint8Array.from(le(tag))
    assert.equal(transactionErrorToJson(bytes), TRANSACTION_ERRORS[tag])
    assert.deepEqual(transactionErrorFromJson(TRANSACTION_ERRORS[tag]), bytes)
  }
  for (let tag = 0; tag < INSTRUCTION_ERRORS.length; tag++) {
    if (tag === 25) continue
    const bytes = Uint8Array.from([...le(8), 5, ...le(tag)])
    assert.deepEqual(transactionErrorToJson(bytes), { InstructionError: [5, INSTRUCTION_ERRORS[tag]] })
    assert.deepEqual(transactionErrorFromJson({ InstructionError: [5, INSTRUCTION_ERRORS[tag]] }), bytes)
  }
  // BorshIoError's old String payload: written from the old JSON form, read as the unit (as agave reads it)
  const old = transactionErrorFromJson({ InstructionError: [1, { BorshIoError: 'hi' }] })
  assert.deepEqual([...old], [...le(8), 1, ...le(44, 2, 0), 0x68, 0x69])
  assert.deepStrictEqual(transactionErrorToJson(old), { InstructionError: [1, 'BorshIoError'] })
  // trailing bytes are ignored, as bincode does
  assert.equal(transactionErrorToJson(Uint8Array.from([...le(0), 0])), 'AccountInUse')
  assert.equal(INSTRUCTION_ERRORS[25], 'Custom')
  assert.equal(INSTRUCTION_ERRORS[53], 'BuiltinProgramsMustConsumeComputeUnits')
  assert.equal(TRANSACTION_ERRORS[38], 'CommitCancelled')
  // bad bytes: one clear error each
  for (const [bytes, re] of [
    [le(39), /unknown TransactionError tag 39/],
    [[...le(8), 0, ...le(54)], /unknown InstructionError tag 54/],
    [[...le(8), 0, ...le(25), 1], /truncated/],
    [[1, 0], /truncated/],
    [[...le(8), 1], /truncated/],
  ] as [number[], RegExp][])
    assert.throws(() => transactionErrorToJson(Uint8Array.from(bytes)), re)
  for (const bad of ['Nope', { InstructionError: [300, 'GenericError'] }, { InstructionError: [0, 'Custom'] }, 5, null])
    assert.throws(() => transactionErrorFromJson(bad), /TransactionError|0\.\.255/)
})

test('a failed transaction keeps its error through protobuf (status and records)', () => {
  const line = realBlocks().find((b) => b.name === 'blocks/254170887')!.line
  const failed = line.block.transactions!.filter((t) => t.meta!.err !== null)
  assert.ok(failed.length > 300)
  const back = roundTrip({ ...line.block, transactions: failed })
  for (let i = 0; i < failed.length; i++) {
    assert.deepStrictEqual(back.transactions![i].meta!.err, failed[i].meta!.err)
    assert.deepStrictEqual(back.transactions![i].meta!.status, { Err: failed[i].meta!.err })
  }
})

test('u64 and i64 values stay exact; numbers below 10^15 as parseJsonExact gives them', () => {
  const big = ['18446744073709551615', '1000000000000000', '9007199254740993']
  const meta: RpcTransactionMeta = {
    err: null,
    status: { Ok: null },
    fee: big[0],
    preBalances: [0, 1, 999999999999999, ...big],
    postBalances: [4294967296, 4294967295, 2 ** 53 - 1 > 1e15 ? 123 : 0],
    innerInstructions: [],
    logMessages: ['é ✓ 𝄞', ''],
    preTokenBalances: [],
    postTokenBalances: [],
    rewards: [
      { pubkey: 'x', lamports: -5, postBalance: 1, rewardType: 'Rent', commission: null },
      { pubkey: 'y', lamports: '-9223372036854775808', postBalance: big[0], rewardType: null, commission: 7 },
      { pubkey: 'z', lamports: -4294967296, postBalance: 0, rewardType: 'Voting', commission: 100 },
    ],
    loadedAddresses: { writable: [], readonly: [] },
    computeUnitsConsumed: 0,
    costUnits: '18446744073709551615',
  }
  assert.deepStrictEqual(decodeTransactionStatusMeta(encodeTransactionStatusMeta(meta)), meta)
  fc.assert(
    fc.property(
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      (u, i) => {
        const w = new ProtoWriter(4)
        w.u64Value(u)
        w.u64Value(i)
        const r = new ProtoReader(w.finish())
        const a = r.u64()
        const b = r.i64()
        assert.equal(BigInt(a), u)
        assert.equal(BigInt(b), i)
        assert.equal(typeof a, u < 10n ** 15n ? 'number' : 'string')
        assert.equal(typeof b, i < 10n ** 15n && i > -(10n ** 15n) ? 'number' : 'string')
        assert.equal(r.pos, r.end)
      },
    ),
    { numRuns: 2000 },
  )
})

test('rewards: protobuf Rewards with num_partitions, reward types and commission', () => {
  const rewards = [
    {
      pubkey: 'Ninja1spj6n9t5hVYgF3PdnYz2PLnkt7rvaw3firmjs',
      lamports: 16906623,
      postBalance: 66607890529,
      rewardType: 'Fee',
      commission: null,
    },
    { pubkey: 'a', lamports: 1, postBalance: 2, rewardType: 'Staking', commission: 0 },
    { pubkey: 'b', lamports: 1, postBalance: 2, rewardType: 'Voting', commission: 255 },
  ]
  assert.deepStrictEqual(decodeRewards(encodeRewards(rewards, 43)), { rewards, numPartitions: 43 })
  assert.deepStrictEqual(decodeRewards(encodeRewards(rewards)), { rewards, numPartitions: null })
  const block = { ...decodeConfirmedBlock(bin('43200000.bin')), rewards, numRewardPartitions: 7 }
  const full = decodeConfirmedBlockFull(encodeConfirmedBlock(block))
  assert.equal(full.numPartitions, 7)
  assert.deepStrictEqual(full.block, block)
  assert.deepStrictEqual(Object.keys(full.block), [
    'previousBlockhash',
    'blockhash',
    'parentSlot',
    'transactions',
    'rewards',
    'numRewardPartitions',
    'blockTime',
    'blockHeight',
  ])
})

test('unknown fields of every wire type are skipped; damaged bytes give one clear error', () => {
  const bytes = bin('43200000.bin')
  const w = new ProtoWriter()
  w.tag(99, VARINT)
  w.varint64(0xffffffff, 0xffffffff)
  w.tag(98, 1)
  for (let i = 0; i < 8; i++) w.varint32(0)
  w.bytesPresent(97, Uint8Array.from([1, 2, 3]))
  w.tag(96, 5)
  for (let i = 0; i < 4; i++) w.varint32(0)
  const extended = Buffer.concat([bytes, w.finish()])
  assert.deepStrictEqual(decodeConfirmedBlock(extended), decodeConfirmedBlock(bytes))
  assert.throws(
    () => decodeConfirmedBlock(bytes.subarray(0, 5000)),
    /ConfirmedBlock: protobuf: length \d+ past the end/,
  )
  assert.throws(() => decodeConfirmedBlock(Uint8Array.from([0x18, 0x80])), /truncated varint at byte 1/)
  assert.throws(() => decodeConfirmedBlock(Uint8Array.from([0x1a, 0x00])), /parent_slot: wire type 2, expected 0/)
  assert.throws(() => decodeConfirmedBlock(Uint8Array.from([0x9b, 0x06])), /unsupported wire type 3/)
  // a nested message may not run past its parent: account key length reaching past the message
  const msg = encodeTransaction({
    signatures: [],
    message: {
      header: { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 },
      accountKeys: ['11111111111111111111111111111111'],
      recentBlockhash: '11111111111111111111111111111111',
      instructions: [],
    },
  })
  const broken = Uint8Array.from(msg)
  broken[1] -= 20 // the message's length: its account key now runs past it
  assert.throws(() => decodeTransaction(broken), /Transaction: protobuf: /)
})

test('base58 of the codecs equals @solana/kit and src/util/base58 (property, leading zeros included)', async () => {
  // the encoder is src/util/base58's; @solana/kit's codec is the independent reference
  const kit = (await import('@solana/codecs-strings')).getBase58Decoder()
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), fc.nat(4), (body, zeros) => {
      const bytes = Uint8Array.from([...new Array<number>(zeros).fill(0), ...body])
      const text = kit.decode(bytes)
      assert.equal(base58Encode(bytes), text)
      assert.deepEqual([...decodeBase58Scratch(text)], [...base58Decode(text)])
      assert.deepEqual([...decodeBase58Scratch(text)], [...bytes])
      // a sub-range of a larger buffer
      const padded = Uint8Array.from([7, ...bytes, 9])
      assert.equal(base58Encode(padded, 1, padded.length - 1), text)
    }),
    { numRuns: 3000 },
  )
  assert.throws(() => decodeBase58Scratch('abc0'), /invalid base58 character '0'/)
  assert.throws(() => decodeBase58Scratch('é'), /invalid base58 character/)
})

test('the base58 text cache gives base58Encode of the bytes, through repeats, a full table and long values', () => {
  const cache = new TextCache()
  let seed = 7
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0)
  // 100,000 values (the table starts again after 65,536), one in three repeating an earlier one
  const pool = Buffer.alloc(64 * 2048)
  for (let i = 0; i < pool.length; i++) pool[i] = rnd() & 0xff
  for (let k = 0; k < 100_000; k++) {
    const len =
      k % 500 === 0 ? [1024, 1025, 1400][rnd() % 3] : [0, 1, 2, 5, 16, 23, 24, 31, 32, 33, 64, 100][rnd() % 12]
    const at = k % 3 === 0 ? (rnd() % 64) * 17 : rnd() % (pool.length - len)
    if (k % 1000 === 0) pool[at] ^= 0xff // the same place later holds other bytes
    const want = base58Encode(pool, at, at + len)
    assert.equal(cache.of(pool, at, at + len), want, `length ${len} at ${at}`)
    // the cache keeps a copy of the bytes: another buffer with the same bytes gives the same text
    assert.equal(cache.of(Buffer.from(pool.subarray(at, at + len)), 0, len), want)
  }
})

test('a version 1 transaction: config instead of lookups, version 1, back to the same bytes', () => {
  const key = (i: number) => base58Encode(Uint8Array.from({ length: 32 }, (_, k) => (k * 7 + i) & 255))
  const transaction = {
    signatures: [base58Encode(new Uint8Array(64).fill(3))],
    message: {
      header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1 },
      accountKeys: [key(1), key(2), key(3)],
      recentBlockhash: key(4),
      instructions: [{ programIdIndex: 2, accounts: [0, 1], data: '3Bxs4Bc3VYuGVB19', stackHeight: null }],
      transactionConfig: {
        priorityFee: 5000,
        computeUnitLimit: 200000,
        loadedAccountsDataSizeLimit: null,
        heapSize: 0,
      },
    },
  }
  const bytes = encodeTransaction(transaction, 1)
  const back = decodeTransaction(bytes)
  assert.equal(back.version, 1)
  assert.deepStrictEqual(back.transaction, transaction)
  assert.equal('addressTableLookups' in back.transaction.message, false)
  assert.ok(Buffer.from(encodeTransaction(back.transaction, back.version)).equals(Buffer.from(bytes)))
  // v1 with an empty config stays v1; v0 without lookups stays v0 with []
  const empty = { ...transaction, message: { ...transaction.message, transactionConfig: undefined } }
  delete empty.message.transactionConfig
  const v1 = decodeTransaction(encodeTransaction(empty, 1))
  assert.equal(v1.version, 1)
  assert.deepStrictEqual(v1.transaction.message.transactionConfig, {
    priorityFee: null,
    computeUnitLimit: null,
    loadedAccountsDataSizeLimit: null,
    heapSize: null,
  })
  const v0 = decodeTransaction(encodeTransaction(empty, 0))
  assert.equal(v0.version, 0)
  assert.deepStrictEqual(v0.transaction.message.addressTableLookups, [])
  // in a block, v1 normalizes like the others
  const block: RpcBlock = {
    blockhash: key(5),
    previousBlockhash: key(6),
    parentSlot: 9,
    transactions: [
      {
        transaction: back.transaction,
        version: back.version,
        meta: decodeTransactionStatusMeta(
          encodeTransactionStatusMeta({
            err: null,
            fee: 5000,
            preBalances: [10, 0, 1],
            postBalances: [5, 0, 1],
            innerInstructions: [],
            logMessages: [`Program ${key(3)} invoke [1]`, `Program ${key(3)} success`],
            preTokenBalances: [],
            postTokenBalances: [],
            rewards: [],
            loadedAddresses: { writable: [], readonly: [] },
          }),
        ),
      },
    ],
  }
  const { warnings, block: recs } = records(10, block)
  assert.deepEqual(warnings, [])
  assert.equal(recs.transactions[0].version, 1)
})

test('the recorded SubscribeUpdate stream reads with the wire reader, every nested field walked', () => {
  const all = readFileSync(join(GEYSER, 'subscribe-updates-slots.bin'))
  const bytes = new Uint8Array(all.buffer, all.byteOffset, all.length)
  /** walks every field; a length-delimited field that parses as a message is walked too (two levels) */
  const walk = (r: ProtoReader, depth = 0): number => {
    let n = 0
    while (r.pos < r.end) {
      const t = r.tag()
      n++
      if ((t & 7) === LEN && depth < 2) {
        const e = r.lenEnd()
        try {
          n += walk(new ProtoReader(r.buf, r.pos, e), depth + 1)
        } catch {
          // bytes or text, not a message
        }
        r.pos = e
      } else r.skip(t & 7)
    }
    return n
  }
  let messages = 0
  let fields = 0
  const kinds = new Map<number, number>()
  for (let p = 0; p < all.length;) {
    const len = all.readUInt32BE(p)
    const r = new ProtoReader(bytes, p + 4, p + 4 + len)
    const first = new ProtoReader(bytes, p + 4, p + 4 + len)
    while (first.pos < first.end) {
      const t = first.tag()
      if (t >>> 3 >= 2 && t >>> 3 <= 10) kinds.set(t >>> 3, (kinds.get(t >>> 3) ?? 0) + 1)
      first.skip(t & 7)
    }
    fields += walk(r)
    assert.equal(r.pos, p + 4 + len)
    p += 4 + len
    messages++
  }
  assert.equal(messages, 40186)
  assert.ok(fields > messages * 3)
  // slot updates (field 3), entries (8), block metas (7) and a ping (6) are all there
  for (const k of [3, 6, 7, 8]) assert.ok((kinds.get(k) ?? 0) > 0, `field ${k}`)
})

test('a transaction without metadata: meta null, no version; u8 fields narrowed as agave narrows them', () => {
  const line = realBlocks().find((b) => b.name === 'chainstorage/parser_solana_block.json')!.line
  const tx = line.block.transactions![0]
  const bare = decodeConfirmedTransaction(encodeConfirmedTransaction({ transaction: tx.transaction, meta: null }))
  assert.deepStrictEqual(Object.keys(bare), ['transaction', 'meta'])
  assert.equal(bare.meta, null)
  assert.equal(bare.transaction.signatures[0], tx.transaction.signatures[0])
  // header count 257 and program id index 300 as stored: rendered as their low 8 bits (1, 44)
  const w = new ProtoWriter()
  const m = w.begin()
  const h = w.begin()
  w.u32Field(STORAGE_FIELDS.header.numRequiredSignatures, 257)
  w.end(STORAGE_FIELDS.message.header, h)
  const ix = w.begin()
  w.u32Field(STORAGE_FIELDS.instruction.programIdIndex, 300)
  w.end(STORAGE_FIELDS.message.instructions, ix)
  w.end(STORAGE_FIELDS.transaction.message, m)
  const { transaction } = decodeTransaction(w.finish())
  assert.equal(transaction.message.header.numRequiredSignatures, 1)
  assert.equal(transaction.message.instructions[0].programIdIndex, 44)
})

test('StorageDecoder over embedded messages: one decoder, ranges of a wrapper message', () => {
  const bytes = bin('subscribe-update-transaction-v0.bin')
  const u = readTransactionUpdate(bytes)
  const txStart = u.tx.byteOffset - bytes.byteOffset
  const metaStart = u.meta.byteOffset - bytes.byteOffset
  const d = new StorageDecoder(bytes)
  const tx = d.transactionWithMeta(txStart, txStart + u.tx.length, metaStart, metaStart + u.meta.length)
  assert.deepStrictEqual(tx, {
    transaction: decodeTransaction(u.tx).transaction,
    meta: decodeTransactionStatusMeta(u.meta),
    version: 0,
  })
  assert.deepStrictEqual(d.transactionWithMeta(txStart, txStart + u.tx.length), {
    transaction: tx.transaction,
    meta: null,
  })
  assert.throws(() => d.range(5, bytes.length + 1), /bad range/)
})

test('damaged blocks (bytes changed, cut) decode or fail with a ProtoError / TransactionErrorFormatError only', () => {
  const bytes = bin('43200000.bin')
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(bytes.length - 1), fc.nat(255)), { minLength: 1, maxLength: 4 }),
      fc.nat(bytes.length),
      (changes, cut) => {
        const b = Uint8Array.from(bytes.subarray(0, Math.max(cut, bytes.length - 64)))
        for (const [at, v] of changes) if (at < b.length) b[at] = v
        try {
          decodeConfirmedBlock(b)
        } catch (e) {
          assert.ok(e instanceof ProtoError || e instanceof TransactionErrorFormatError, String(e))
        }
      },
    ),
    { numRuns: 300 },
  )
})

test('keys must be 32 bytes and signatures 64: longer or shorter ones are refused, naming the field', () => {
  const header = { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 }
  const ok = '11111111111111111111111111111111'
  const long = base58Encode(new Uint8Array(200).fill(9))
  const msg = (accountKeys: string[]) => ({ header, accountKeys, recentBlockhash: ok, instructions: [] })
  assert.throws(
    () => decodeTransaction(encodeTransaction({ signatures: [], message: msg([long]) })),
    /account_keys: 200 bytes, expected 32/,
  )
  assert.throws(
    () => decodeTransaction(encodeTransaction({ signatures: [], message: msg(['1111']) })),
    /account_keys: 4 bytes, expected 32/,
  )
  assert.throws(
    () => decodeTransaction(encodeTransaction({ signatures: [long], message: msg([ok]) })),
    /signatures: 200 bytes, expected 64/,
  )
  assert.throws(
    () => decodeTransaction(encodeTransaction({ signatures: [ok], message: msg([ok]) })),
    /signatures: 32 bytes, expected 64/,
  )
})
