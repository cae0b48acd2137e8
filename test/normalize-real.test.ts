/**
 * Concrete facts of real mainnet blocks (data/mainnet), named by signature. Expected values were
 * read off the raw getBlock JSON by hand (log line numbers are positions in meta.logMessages).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Block, Instruction, Log, Transaction } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { chainstorage, wholeBlock } from './fixtures/normalize/blocks.ts'

const whole = normalizeBlock(wholeBlock())
const wholeWithVotes = normalizeBlock(wholeBlock(), { includeVotes: true })

function tx(b: Block, sig: string): Transaction {
  const t = b.transactions.find((x) => x.signatures[0] === sig)
  assert.ok(t, `transaction ${sig} not found`)
  return t
}
function ins(b: Block, t: Transaction): Instruction[] {
  return b.instructions.filter((i) => i.transactionIndex === t.transactionIndex)
}
function logs(b: Block, t: Transaction): Log[] {
  return b.logs.filter((l) => l.transactionIndex === t.transactionIndex)
}
function at(list: Instruction[], addr: number[]): Instruction {
  const i = list.find((x) => x.instructionAddress.join(',') === addr.join(','))
  assert.ok(i, `no instruction at [${addr}]`)
  return i
}
const addrs = (list: { instructionAddress: number[] }[]) => list.map((i) => i.instructionAddress.join('.'))

const CB = 'ComputeBudget111111111111111111111111111111'
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
const ZETA = 'ZETAxsqBRek56DhiGXrn75yj2NHU3aYUnxvHXpkf3aD'
const ZDEX = 'zDEXqXEG7gAyxb1Kg9mK5fPnUdENCGKzWrM21RMdWRq'

test('whole block 254170887: header, counts, votes dropped with index gaps, rewards, no warnings', () => {
  const b = whole.block
  assert.deepStrictEqual(b.header, {
    number: 254170887,
    hash: '5GG5pzTbH6KgZM54M9XWfBNmBupQuZXdQxoZRRQXHcpM',
    parentNumber: 254170886,
    parentHash: '9BMHTdybcGah8PWtCzu8tVFDBXmiEHZZDf3FaZ651Nf',
    height: 234724352,
    timestamp: 1710441678,
  })
  assert.deepStrictEqual(whole.warnings, [])
  // 602 transactions, 158 of them votes (single Vote111 instruction): 0..5 are votes
  assert.equal(wholeWithVotes.block.transactions.length, 602)
  assert.equal(b.transactions.length, 602 - 158)
  assert.deepStrictEqual(
    b.transactions.slice(0, 3).map((t) => t.transactionIndex),
    [6, 7, 8],
  )
  assert.deepStrictEqual(
    wholeWithVotes.block.transactions.slice(0, 3).map((t) => t.transactionIndex),
    [0, 1, 2],
  )
  // vote tx 5 (2T8QGPPv...) is kept only with includeVotes, with its instruction and its fee balance change
  const vote = tx(
    wholeWithVotes.block,
    '2T8QGPPvMu8mtwJgEd8wxJczbEXWoPnGQbFw84qX93dBXSp8Stre2JBZ8dHCJ3YaTJCfcMT5z3VZW4LVJvqR6xFR',
  )
  assert.equal(vote.transactionIndex, 5)
  assert.equal(vote.computeUnitsConsumed, 2100n)
  assert.deepStrictEqual(addrs(ins(wholeWithVotes.block, vote)), ['0'])
  assert.equal(ins(wholeWithVotes.block, vote)[0].programId, 'Vote111111111111111111111111111111111111111')
  assert.deepStrictEqual(
    wholeWithVotes.block.balances.filter((x) => x.transactionIndex === 5),
    [
      {
        transactionIndex: 5,
        account: '6UFmHMgP4ErpKrdjDgya1gAfHmcC6QhWK9w8wBT7iCNo',
        pre: 80103783978n,
        post: 80103778978n,
      },
    ],
  )
  assert.equal(
    b.transactions.some((t) => t.transactionIndex === 5),
    false,
  )
  assert.equal(
    b.instructions.some((i) => i.transactionIndex === 5),
    false,
  )
  assert.equal(
    b.balances.some((i) => i.transactionIndex === 5),
    false,
  )
  // 305 failed transactions in the whole block
  assert.equal(wholeWithVotes.block.transactions.filter((t) => t.err !== null).length, 305)
  // exactly the 2 'Log truncated' transactions are flagged
  assert.deepStrictEqual(
    b.transactions.filter((t) => t.hasDroppedLogMessages).map((t) => t.transactionIndex),
    [229, 440],
  )
  assert.deepStrictEqual(b.rewards, [
    {
      pubkey: 'Ninja1spj6n9t5hVYgF3PdnYz2PLnkt7rvaw3firmjs',
      lamports: 16906623n,
      postBalance: 66607890529n,
      rewardType: 'Fee',
      commission: null,
    },
  ])
})

test('tx 32 (v0, InstructionError [2, IllegalOwner]): loaded readonly accounts, failing instruction, one never ran', () => {
  const b = whole.block
  const t = tx(b, '43d9hAZzWQRuV5QYknDFenQpq4Ssiwd9dAT74WjRSVYwBQtUpZ73XHpFULBvzZa3s9j3prx9A9VBGne4xxMc4oKE')
  assert.equal(t.transactionIndex, 32)
  assert.equal(t.version, 0)
  assert.deepStrictEqual(t.err, { InstructionError: [2, 'IllegalOwner'] })
  assert.equal(t.fee, 105000n)
  assert.equal(t.computeUnitsConsumed, 3910n)
  assert.equal(t.feePayer, 'BXn1NMZxRheYdaRvVQJYUyoLz4qDUzFF3ZNhPAGqT5kH')
  assert.equal(t.hasDroppedLogMessages, false)
  assert.deepStrictEqual(t.loadedAddresses, {
    writable: [],
    readonly: [
      TOKEN,
      'SysvarRent111111111111111111111111111111111',
      '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1',
      'srmqPvymJeFKQ4zGQed1GFppgkRHL9kaELCbyksJtPX',
    ],
  })
  assert.deepStrictEqual(t.addressTableLookups, [
    {
      accountKey: 'FUigYUS3EPJB682u6mCgvox7JMfHn6KxqhYdnLmqm2pe',
      writableIndexes: [],
      readonlyIndexes: [2, 4, 21, 20],
    },
  ])
  const list = ins(b, t)
  assert.deepStrictEqual(addrs(list), ['0', '1', '2', '3'])
  assert.deepStrictEqual(
    list.map((i) => i.programId),
    [CB, CB, 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL', '675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8'],
  )
  const ata = list[2]
  // accounts [0,1,0,14,15,20,21]: 20 and 21 are the first two loaded readonly addresses
  assert.equal(ata.accounts.length, 7)
  assert.equal(ata.accounts[0], 'BXn1NMZxRheYdaRvVQJYUyoLz4qDUzFF3ZNhPAGqT5kH')
  assert.equal(ata.accounts[1], 'GLSb6XAfro7NdjEejx5JX4zzhM5E3erEZirf91Lxenmq')
  assert.equal(ata.accounts[2], 'BXn1NMZxRheYdaRvVQJYUyoLz4qDUzFF3ZNhPAGqT5kH')
  assert.equal(ata.accounts[5], TOKEN)
  assert.equal(ata.accounts[6], 'SysvarRent111111111111111111111111111111111')
  assert.equal(ata.data, '')
  assert.deepStrictEqual([ata.d1, ata.d2, ata.d4, ata.d8, ata.dataPrefix], [null, null, null, null, '0x'])
  assert.equal(ata.error, 'Provided owner is not allowed')
  assert.equal(ata.computeUnitsConsumed, 3610n)
  assert.equal(ata.hasDroppedLogMessages, false)
  // ComputeBudget logs its invoke lines here; no consumed line → no CU
  assert.equal(list[0].computeUnitsConsumed, null)
  assert.equal(list[0].error, null)
  // [3] never ran
  assert.deepStrictEqual(
    [list[3].error, list[3].computeUnitsConsumed, list[3].hasDroppedLogMessages, list[3].isCommitted],
    [null, null, false, false],
  )
  assert.ok(list.every((i) => i.isCommitted === false))
  assert.deepStrictEqual(logs(b, t), [
    {
      transactionIndex: 32,
      logIndex: 5,
      instructionAddress: [2],
      programId: 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
      kind: 'log',
      message: 'Create',
    },
  ])
  // only the fee payer's lamports changed
  assert.deepStrictEqual(
    b.balances.filter((x) => x.transactionIndex === 32),
    [
      {
        transactionIndex: 32,
        account: 'BXn1NMZxRheYdaRvVQJYUyoLz4qDUzFF3ZNhPAGqT5kH',
        pre: 5541496754n,
        post: 5541391754n,
      },
    ],
  )
  // token balances: 6 accounts in both lists; account index 5 holds 863634859025574264 (> 2^53)
  const tbs = b.tokenBalances.filter((x) => x.transactionIndex === 32)
  assert.equal(tbs.length, 6)
  const big = tbs.find((x) => x.account === 'CmmR3FUcVrde2VDZLF1eXAoi4s4jfWRNNMz85VPkBrqd')
  assert.deepStrictEqual(big, {
    transactionIndex: 32,
    account: 'CmmR3FUcVrde2VDZLF1eXAoi4s4jfWRNNMz85VPkBrqd',
    preMint: '8a3JkgBxGpeKtFPJrTEHW76XodtqR5HZT8XGjzDy9b7E',
    postMint: '8a3JkgBxGpeKtFPJrTEHW76XodtqR5HZT8XGjzDy9b7E',
    preDecimals: 9,
    postDecimals: 9,
    preProgramId: TOKEN,
    postProgramId: TOKEN,
    preOwner: '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1',
    postOwner: '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1',
    preAmount: 863634859025574264n,
    postAmount: 863634859025574264n,
  })
})

test('tx 9 (legacy, InstructionError [2, Custom 2]): instructions 3 and 4 never ran', () => {
  const b = whole.block
  const t = tx(b, '2HdT62UDgWtUdJQBBxz5tGbLQWquQdSFgqguLf4iLZZfAPWt6zqc8atPGNnvbmXMwAGdpdS3EkBCWGW64e7dAu7o')
  assert.equal(t.version, 'legacy')
  assert.deepStrictEqual(t.addressTableLookups, [])
  assert.deepStrictEqual(t.loadedAddresses, { writable: [], readonly: [] })
  const list = ins(b, t)
  assert.deepStrictEqual(addrs(list), ['0', '1', '2', '3', '4'])
  assert.deepStrictEqual(
    list.map((i) => i.error),
    [null, null, 'custom program error: 0x2', null, null],
  )
  assert.deepStrictEqual(
    list.map((i) => i.computeUnitsConsumed),
    [null, null, 12524n, null, null],
  )
  assert.deepStrictEqual(
    list.map((i) => i.hasDroppedLogMessages),
    [false, false, false, false, false],
  )
  assert.deepStrictEqual(
    logs(b, t).map((l) => [l.logIndex, l.instructionAddress, l.kind, l.message]),
    [[5, [2], 'log', 'Error: Delay transaction']],
  )
})

test('tx 210 (v0, failed top-level with a succeeded 4-deep CPI tree): addresses, CU, programIds via lookups, logs', () => {
  const b = whole.block
  const t = tx(b, 'g337K3ACfWiQfmRHThKSEG9RenukiJndMvNCShkeR3qWk9ZqQpz91hHftJtahnyRhrwBvadzRUB4o1vDyjvtnAY')
  const list = ins(b, t)
  assert.deepStrictEqual(addrs(list), [
    '0',
    '1',
    '2',
    '2.0',
    '2.0.0',
    '2.0.0.0',
    '2.0.0.1',
    '2.0.1',
    '2.0.1.0',
    '2.0.1.1',
    '2.1',
    '2.1.0',
    '2.1.1',
    '2.2',
    '2.2.0',
    '2.2.1',
  ])
  const EO = 'Eo7WjKq67rjJQSZxS6z3YkapzY3eMj6Xy8X5EQVn5UaB' // programIdIndex 24: loaded readonly[2]
  const MERL = 'MERLuDFBMmsHnsBPZw2sDQZHvXFMwp8EdjudcU2HKky' // programIdIndex 22: loaded readonly[0]
  const S24 = '24Uqj9JCLxUeoC3hGfh5W3s9FM9uCHDS2SG3LYwBpyTi' // programIdIndex 17: static
  assert.deepStrictEqual(
    list.map((i) => i.programId),
    [
      CB,
      CB,
      '4ngnN8dA9sAf1sbz3m6qwquxbHkyzgXVpeTYcxKPtZuf',
      EO,
      S24,
      TOKEN,
      TOKEN,
      S24,
      TOKEN,
      TOKEN,
      MERL,
      TOKEN,
      TOKEN,
      MERL,
      TOKEN,
      TOKEN,
    ],
  )
  assert.deepStrictEqual(
    list.map((i) => i.computeUnitsConsumed),
    [
      null,
      null,
      332985n,
      150289n,
      31001n,
      4645n,
      4492n,
      31193n,
      4645n,
      4715n,
      70159n,
      4645n,
      4645n,
      73975n,
      4645n,
      4645n,
    ],
  )
  assert.deepStrictEqual(
    list.map((i) => i.error),
    [null, null, 'custom program error: 0x0', ...Array(13).fill(null)],
  )
  assert.ok(list.every((i) => !i.isCommitted && !i.hasDroppedLogMessages))
  // [2,0,0,0]: Tokenkeg transfer, accounts [21,12,0]: 21 = loaded writable[1]
  assert.deepStrictEqual(at(list, [2, 0, 0, 0]).accounts, [
    'FbwFZg2m46BewxRFXhYgtmyaNKz3XwSACTYN2jhvLATT',
    list[2].accounts[5], // index 12 is the 6th account of the top-level instruction
    'BEmUSjqs7mpgaSXw6QdrePfTsD8aQHbdtnqUxa63La6E',
  ])
  const ls = logs(b, t)
  const by = (i: number) => ls.find((l) => l.logIndex === i)
  assert.deepStrictEqual(by(6), {
    transactionIndex: 210,
    logIndex: 6,
    instructionAddress: [2, 0],
    programId: EO,
    kind: 'log',
    message: 'Instruction: Swap',
  })
  assert.deepStrictEqual(by(9), {
    transactionIndex: 210,
    logIndex: 9,
    instructionAddress: [2, 0, 0],
    programId: S24,
    kind: 'data',
    message: 'H159WuM0Pbr/m+YAAAAAAPcf8QAAAAAA',
  })
  assert.deepStrictEqual(by(11)?.instructionAddress, [2, 0, 0, 0])
  assert.deepStrictEqual(by(33)?.instructionAddress, [2, 0]) // after its children closed
  assert.deepStrictEqual(by(68), {
    transactionIndex: 210,
    logIndex: 68,
    instructionAddress: [2],
    programId: '4ngnN8dA9sAf1sbz3m6qwquxbHkyzgXVpeTYcxKPtZuf',
    kind: 'log',
    message: 'ERR: Balance decreased: 110336403433 -> 110336387461',
  })
  // log records only for log/data/other lines: 71 lines, of which 16 invoke, 16 result and
  // 14 consumed lines (the two ComputeBudget frames have none)
  assert.equal(ls.length, 71 - 16 - 16 - 14)
})

test('tx 229: Log truncated inside the open frame of top-level 9', () => {
  const b = whole.block
  const t = tx(b, '4gacT954ajx8hqKaD2r2un5GCxBz3AdG9cNkwhpcRbvX4eD1dPWEet3Bm5HeMUNsGeHY5xdojdqVaCJBVv3w7Ni2')
  assert.equal(t.hasDroppedLogMessages, true)
  const list = ins(b, t)
  // 14 top-level; inner counts per top-level 3..13: 2,3,2,3,2,3,2,3,2,3,2
  assert.equal(list.length, 14 + 27)
  const top = (i: number) => at(list, [i])
  // top-level 8 closed normally (L112 consumed, L113 success)
  assert.equal(top(8).computeUnitsConsumed, 103796n)
  assert.equal(top(8).hasDroppedLogMessages, false)
  assert.equal(at(list, [8, 1]).computeUnitsConsumed, 9413n)
  // top-level 9 was open at L119: flagged, no CU, no error; its logs up to the truncation are kept
  assert.deepStrictEqual([top(9).hasDroppedLogMessages, top(9).computeUnitsConsumed, top(9).error], [true, null, null])
  assert.deepStrictEqual(
    logs(b, t)
      .filter((l) => l.instructionAddress.join() === '9')
      .map((l) => [l.logIndex, l.kind]),
    [
      [115, 'log'],
      [116, 'log'],
      [117, 'data'],
      [118, 'log'],
    ],
  )
  // everything after it: flagged, placed by stackHeight
  assert.deepStrictEqual(addrs(list.filter((i) => i.instructionAddress[0] >= 9)), [
    '9',
    '9.0',
    '9.1',
    '10',
    '10.0',
    '10.1',
    '10.2',
    '11',
    '11.0',
    '11.1',
    '12',
    '12.0',
    '12.1',
    '12.2',
    '13',
    '13.0',
    '13.1',
  ])
  assert.ok(
    list
      .filter((i) => i.instructionAddress[0] >= 9)
      .every((i) => i.hasDroppedLogMessages && i.computeUnitsConsumed === null),
  )
  assert.ok(list.filter((i) => i.instructionAddress[0] < 9).every((i) => !i.hasDroppedLogMessages))
  assert.ok(logs(b, t).every((l) => l.logIndex < 119))
})

test('tx 440: Log truncated right after top-level 9 closed; the line after it is ignored', () => {
  const b = whole.block
  const t = tx(b, '35REMd4vXGAE8vVCfmWg22RAie2swvUT6gn6VvbHxNYT1531EqQXi8Hz9ZS8zV8S4mRTSSt5aFaNhEEfCv7RAazQ')
  assert.equal(t.hasDroppedLogMessages, true)
  const list = ins(b, t)
  const top9 = at(list, [9])
  assert.deepStrictEqual([top9.programId, top9.computeUnitsConsumed, top9.hasDroppedLogMessages], [ZETA, 93823n, false])
  assert.deepStrictEqual([at(list, [9, 1]).programId, at(list, [9, 1]).computeUnitsConsumed], [ZDEX, 8937n])
  assert.deepStrictEqual(
    logs(b, t)
      .filter((l) => l.logIndex >= 119)
      .map((l) => [l.logIndex, l.instructionAddress, l.kind]),
    [
      [120, [9], 'log'],
      [121, [9], 'data'],
    ],
  )
  const after = list.filter((i) => i.instructionAddress[0] >= 10)
  assert.equal(after.length, 4 + 3 + 2 + 3 + 2)
  assert.ok(after.every((i) => i.hasDroppedLogMessages && i.computeUnitsConsumed === null && i.error === null))
})

test('token balance merges: post-only (tx 10) and pre-only (tx 265) accounts', () => {
  const b = whole.block
  const t10 = tx(b, 'NM2EdRBQWvHmvyfeiRtggYAFNEMXxvy8ttGEETprBAkBbtwyb4F1f7oSi8uyHDxyr2CWZQLPNSd3R1Q6ojqFvcw')
  const tb10 = b.tokenBalances.filter((x) => x.transactionIndex === t10.transactionIndex)
  assert.equal(tb10.length, 5) // pre: 13,14,19,20; post: 2,13,14,19,20
  const created = tb10.find((x) => x.account === 'HyVHe3JmqD9ETf24UWvYrdUvhpimF19yhLjwvhwSjcUf')
  assert.deepStrictEqual(created, {
    transactionIndex: 10,
    account: 'HyVHe3JmqD9ETf24UWvYrdUvhpimF19yhLjwvhwSjcUf',
    preMint: null,
    postMint: 'D8r8XTuCrUhLheWeGXSwC3G92RhASficV3YA7B2XWcLv',
    preDecimals: null,
    postDecimals: 9,
    preProgramId: null,
    postProgramId: TOKEN,
    preOwner: null,
    postOwner: '4aATgMGbxXmnTQfrjGPZhLon9PQXexM5Y3QVdrqFr4j1',
    preAmount: null,
    postAmount: 539260103542471n,
  })
  // unchanged accounts are emitted too (account index 19: 0 → 0)
  assert.equal(tb10.filter((x) => x.preAmount === 0n && x.postAmount === 0n).length, 2)
  const t265 = tx(b, '3pLsTox6Qae5rX5DsE2Wb1PsMGtjtFD3JsnqpkSyoRkTNuHgRDhhd4GwFaqcYbwLGgpTsGeNAW4sWCoQiEkz87uW')
  assert.deepStrictEqual(
    b.tokenBalances.filter((x) => x.transactionIndex === t265.transactionIndex),
    [
      {
        transactionIndex: 265,
        account: 'CrpRJPyvKR6JszzrLvECghNQBypTS3iYtSYEw3EGqeQH',
        preMint: 'kinXdEcpDQeHPEuQnqmUgtYykqKGVFq6CeVX5iAHJq6',
        postMint: null,
        preDecimals: 5,
        postDecimals: null,
        preProgramId: TOKEN,
        postProgramId: null,
        preOwner: 'DTpTAcVGoZQVQQauUYhLo5F1Y5XNavLBmGy2z3GZunv4',
        postOwner: null,
        preAmount: 0n,
        postAmount: null,
      },
    ],
  )
})

test('chainstorage client_solana_block (slot 100000000): legacy without version, inner CPI, failed, rewards', () => {
  const { block: b, warnings } = normalizeBlock(chainstorage('client_solana_block.json'))
  assert.deepStrictEqual(warnings, [])
  assert.equal(b.header.number, 100000000)
  assert.equal(b.header.height, 89586871)
  // txs 0, 1, 2, 5, 8, 9 are single-instruction Vote transactions: dropped
  assert.deepStrictEqual(
    b.transactions.map((t) => t.transactionIndex),
    [3, 4, 6, 7],
  )
  assert.ok(b.transactions.every((t) => t.version === 'legacy' && t.computeUnitsConsumed === 0n))
  const t = tx(b, 's28hELYcWfbRFKScS4Ysdh8CSyhFoCM3SkxU1VS6GZcWNVxHjYyBA81QQ4WNTMMnkmk68AWLB9ZsyzxAL6Tb1fc')
  const list = ins(b, t)
  assert.deepStrictEqual(addrs(list), ['0', '0.0'])
  assert.deepStrictEqual(
    list.map((i) => i.programId),
    ['9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', TOKEN],
  )
  assert.deepStrictEqual(
    list.map((i) => i.computeUnitsConsumed),
    [17783n, 3121n],
  )
  assert.deepStrictEqual(list[1].accounts, [
    'AMD3D21NmYeeohviSpyc1TmfHU1Zz4KoHbEsMYBSasu2',
    'AhQLbtvmca4VUZBCpjEeSWwrNBTE6ZskjrFSTUqWJwDp',
    'CuieVDEDtLo7FypA9SbLM9saXFdb1dsshEkyErMqkRQq',
  ])
  // data "3awLk33zPqEF" = 03 + u64 LE amount (SPL Token Transfer)
  assert.equal(list[1].d1, '0x03')
  assert.deepStrictEqual(logs(b, t), [
    {
      transactionIndex: 6,
      logIndex: 2,
      instructionAddress: [0, 0],
      programId: TOKEN,
      kind: 'log',
      message: 'Instruction: Transfer',
    },
  ])
  const tb = b.tokenBalances.find((x) => x.account === 'AMD3D21NmYeeohviSpyc1TmfHU1Zz4KoHbEsMYBSasu2')
  assert.deepStrictEqual(
    [tb?.preAmount, tb?.postAmount, tb?.preOwner, tb?.preProgramId],
    [10510779000000n, 10509537000000n, null, null],
  )
  assert.deepStrictEqual(b.rewards, [
    {
      pubkey: 'DDnAqxJVFo2GVTujibHt5cjevHMSE9bo8HJaydHoshdp',
      lamports: 7247500n,
      postBalance: 37188329304n,
      rewardType: 'Fee',
      commission: null,
    },
  ])
})

test('chainstorage parser_solana_transaction_err: a non-InstructionError err with logs → every instruction ran', () => {
  const { block: b } = normalizeBlock(chainstorage('parser_solana_transaction_err.json'), { includeVotes: true })
  const t = tx(b, 'uhHy7XE5bWFR1JpC1kYYqHpUMhBoQTkjBUCM7M4KcVAUwrxM1bx8Dpx95zVQT35XbrDJad7XJiqspaaYQS2jiHa')
  assert.equal(t.err, 'InvalidRentPayingAccount')
  const list = ins(b, t)
  assert.deepStrictEqual(
    list.map((i) => [
      i.instructionAddress,
      i.programId,
      i.computeUnitsConsumed,
      i.error,
      i.isCommitted,
      i.hasDroppedLogMessages,
    ]),
    [
      [[0], '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', 2654n, null, false, false],
      [[1], '11111111111111111111111111111111', null, null, false, false],
    ],
  )
  // the failed vote transaction (kept with includeVotes): error text of its only instruction
  const v = tx(b, 'xjUw3f94FvbbGkhkokevTUn6aY4bHPcbnkF7ybe3MnM6a9DEEbkrURT5DP4JtnFJtpE7nLeX4qF27inBxXxnqi6')
  assert.deepStrictEqual(
    ins(b, v).map((i) => i.error),
    ['custom program error: 0x0'],
  )
})

test('chainstorage versioned tx (slot 154808473): v0 resolution through loaded addresses; absent logMessages', () => {
  const { block: b, warnings } = normalizeBlock(chainstorage('parser_solana_block_with_versioned_tx.json'))
  const t = b.transactions[0]
  assert.equal(t.version, 0)
  assert.equal(
    t.signatures[0],
    '5X7cr7bxjwoWvWFvSmVfmF3PhYcid4ojtNGYiDsRRP6P5cfzkahxbZfwH4YDdhy9RnSEyaT255aDw14vis5Qxvqh',
  )
  // no logs: not a truncation, so the transaction flag stays false; every instruction is flagged
  assert.equal(t.hasDroppedLogMessages, false)
  const list = ins(b, t)
  assert.deepStrictEqual(
    list.map((i) => i.programId),
    [
      'So1endDq2YkqhipRh3WViPa8hdiSpxWy6z3Z6tMCpAo',
      'AGGZ2djPDEvrbgiBTV3P8UoB8Zf1kGawkWd2eu553o44',
      'AGGZ2djPDEvrbgiBTV3P8UoB8Zf1kGawkWd2eu553o44',
      'JUP3c2Uh3WA4Ng34tw6kPd2G4C5BB21Xo36Je1s32Ph',
      'JUP3c2Uh3WA4Ng34tw6kPd2G4C5BB21Xo36Je1s32Ph',
      'JUP3c2Uh3WA4Ng34tw6kPd2G4C5BB21Xo36Je1s32Ph',
      TOKEN,
      'So1endDq2YkqhipRh3WViPa8hdiSpxWy6z3Z6tMCpAo',
    ],
  )
  assert.ok(list.every((i) => i.hasDroppedLogMessages && i.isCommitted && i.computeUnitsConsumed === null))
  // [0] accounts [6,7,8,30,31,32,3]: 6.. = loaded writable[0..2], 30.. = loaded readonly[0..2], 3 = static
  assert.deepStrictEqual(list[0].accounts, [
    '8SheGtsopRUDzdiD6v6BR9a6bqZ9QwywYQY99Fp5meNf',
    '2PYVzDJ6Buks4yUVeDEhLwc14wKpxbehEsbeU6yM8J8d',
    'BgxfHJDzm44T7XG68MYKx7YisTjZu73tVovyZSjJMpmw',
    '4UpD2fh7xH3VP9QQaXtsS1YY3bxzWhtfpks7FatyKvdY',
    'DdZR6zRFiUt4S5mg7AV1uKB2z1f1WzcNYCaTEEWPAuby',
    'Sysvar1nstructions1111111111111111111111111',
    TOKEN,
  ])
  // [3] accounts [19, 20] = loaded writable[13], [14]
  assert.deepStrictEqual(list[3].accounts, [
    '6Q6vMHsUFA7kuwdkG9vm7gByMfk151Z9eMSwE14fHcrG',
    'BhFYKKXtKmqbRMRybivg4wpUNUsiajPcdUJNg8MUqH8J',
  ])
  assert.equal(b.logs.length, 0)
  assert.equal(t.addressTableLookups[0].accountKey, '7itwo23TLwr87ChKPWANFdqmhdVdmARcQX96rZvuFrb3')
  assert.equal(t.loadedAddresses.writable.length, 24)
  assert.equal(t.loadedAddresses.readonly.length, 11)
  // one warning for the transaction: the missing invoke lines
  assert.equal(warnings.length, 1)
  assert.equal(warnings[0].signature, t.signatures[0])
  assert.match(warnings[0].message, /missing invoke line/)
})

test('cross-check with the jsonParsed encoding of the same block (client_solana_block_v2): programIds and raw accounts', async () => {
  const { readFileSync } = await import('node:fs')
  const { join } = await import('node:path')
  const { DATA } = await import('./fixtures/normalize/blocks.ts')
  type ParsedIns = { programId: string; accounts?: string[] }
  const parsed = JSON.parse(readFileSync(join(DATA, 'chainstorage/client_solana_block_v2.json'), 'utf8')) as {
    transactions: {
      transaction: { message: { accountKeys: { pubkey: string }[]; instructions: ParsedIns[] } }
      meta: { innerInstructions?: { index: number; instructions: ParsedIns[] }[] }
    }[]
  }
  const { block } = normalizeBlock(chainstorage('client_solana_block.json'), { includeVotes: true })
  let compared = 0
  parsed.transactions.forEach((pt, txIndex) => {
    const t = block.transactions.find((x) => x.transactionIndex === txIndex)!
    assert.deepStrictEqual(
      t.accountKeys,
      pt.transaction.message.accountKeys.map((k) => k.pubkey),
    )
    // the jsonParsed order: each top-level instruction followed by its inner ones
    const expected: ParsedIns[] = []
    pt.transaction.message.instructions.forEach((ins, i) => {
      expected.push(ins)
      for (const pack of pt.meta.innerInstructions ?? []) if (pack.index === i) expected.push(...pack.instructions)
    })
    const mine = block.instructions.filter((i) => i.transactionIndex === txIndex)
    assert.deepStrictEqual(
      mine.map((i) => i.programId),
      expected.map((e) => e.programId),
    )
    mine.forEach((m, k) => {
      // instructions the node could not parse keep their raw account list
      if (expected[k].accounts) {
        assert.deepStrictEqual(m.accounts, expected[k].accounts)
        compared++
      }
    })
  })
  assert.equal(compared, 4) // the 4 unparsed instructions (Serum DEX, FsJ3...) of the block
})
