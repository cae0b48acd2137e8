import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { compileWriter } from '../src/query/render.ts'
import { StaticStore } from '../src/store/static.ts'

const PROG = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'

function block(): Block {
  return {
    header: {
      number: 100,
      hash: 'HASH100',
      parentNumber: 98,
      parentHash: 'HASH98',
      height: null,
      timestamp: 1700000000,
    },
    transactions: [
      {
        transactionIndex: 3,
        version: 'legacy',
        accountKeys: ['A111111111111111111111111111111111111111111', 'A211111111111111111111111111111111111111111'],
        addressTableLookups: [],
        numReadonlySignedAccounts: 0,
        numReadonlyUnsignedAccounts: 1,
        numRequiredSignatures: 1,
        recentBlockhash: 'RBH',
        signatures: ['SIG1'],
        err: { InstructionError: [0, { Custom: 6001 }] },
        fee: 5000n,
        computeUnitsConsumed: 2n ** 63n + 7n,
        loadedAddresses: { writable: [], readonly: [] },
        feePayer: 'A111111111111111111111111111111111111111111',
        hasDroppedLogMessages: false,
      },
      {
        transactionIndex: 5,
        version: 0,
        accountKeys: ['A3'],
        addressTableLookups: [{ accountKey: 'LUT', writableIndexes: [1], readonlyIndexes: [] }],
        numReadonlySignedAccounts: 0,
        numReadonlyUnsignedAccounts: 0,
        numRequiredSignatures: 1,
        recentBlockhash: 'RBH2',
        signatures: ['SIG2', 'SIG3'],
        err: null,
        fee: 10000n,
        computeUnitsConsumed: 0n,
        loadedAddresses: { writable: ['W111111111111111111111111111111111111111111'], readonly: [] },
        feePayer: 'A3',
        hasDroppedLogMessages: true,
      },
    ],
    instructions: [
      {
        transactionIndex: 3,
        instructionAddress: [0],
        programId: PROG,
        accounts: ['A111111111111111111111111111111111111111111', 'A211111111111111111111111111111111111111111'],
        data: 'DATA',
        d1: '0xf8',
        d2: '0xf8c6',
        d4: '0xf8c69e91',
        d8: '0xf8c69e91e17587c8',
        dataPrefix: '0xf8c69e91e17587c801',
        error: 'custom "quoted"\nerror',
        computeUnitsConsumed: 9007199254740993n,
        isCommitted: false,
        hasDroppedLogMessages: false,
      },
      {
        transactionIndex: 3,
        instructionAddress: [0, 0],
        programId: 'Tok1111111111111111111111111111111111111111',
        accounts: [],
        data: '',
        d1: null,
        d2: null,
        d4: null,
        d8: null,
        dataPrefix: '0x',
        error: null,
        computeUnitsConsumed: null,
        isCommitted: false,
        hasDroppedLogMessages: false,
      },
    ],
    logs: [
      {
        transactionIndex: 3,
        logIndex: 1,
        instructionAddress: [0],
        programId: PROG,
        kind: 'log',
        message: 'tab\there ✓ \u0001',
      },
      {
        transactionIndex: 3,
        logIndex: 4,
        instructionAddress: [0, 0],
        programId: 'Tok1111111111111111111111111111111111111111',
        kind: 'other',
        message: 'x',
      },
    ],
    balances: [
      {
        transactionIndex: 3,
        account: 'A111111111111111111111111111111111111111111',
        pre: 100n,
        post: 18446744073709551615n,
      },
    ],
    tokenBalances: [
      {
        transactionIndex: 3,
        account: 'TA',
        preMint: null,
        postMint: 'M',
        preDecimals: null,
        postDecimals: 6,
        preProgramId: null,
        postProgramId: 'TP',
        preOwner: null,
        postOwner: 'O',
        preAmount: null,
        postAmount: 12345678901234567890n,
      },
    ],
    rewards: [
      {
        pubkey: 'V111111111111111111111111111111111111111111',
        lamports: -5n,
        postBalance: 10n,
        rewardType: null,
        commission: null,
      },
    ],
  }
}

async function lines(body: unknown, bigintsAsNumbers = false): Promise<string[]> {
  const store = new StaticStore([block()])
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: 100, finalizedOnly: true, bigintsAsNumbers }))
    out.push(b.line)
  return out
}

test('every kind, exact text: selected fields only, catalogue order, u64 as strings, nulls, escaping', async () => {
  const out = await lines({
    fromBlock: 100,
    fields: {
      block: { timestamp: true, parentSlot: true, number: true, height: true, hash: true },
      transaction: {
        fee: true,
        err: true,
        signatures: true,
        version: true,
        computeUnitsConsumed: true,
        loadedAddresses: true,
        addressTableLookups: true,
      },
      instruction: {
        instructionAddress: true,
        d8: true,
        d1: true,
        error: true,
        computeUnitsConsumed: true,
        accounts: true,
        isCommitted: true,
      },
      log: { message: true, kind: true, logIndex: true },
      balance: { post: true, pre: true },
      tokenBalance: { preMint: true, postMint: true, preAmount: true, postAmount: true, postDecimals: true },
      reward: { pubKey: true, lamports: true, rewardType: true, commission: true },
    },
    transactions: [{}],
    instructions: [{}],
    logs: [{}],
    balances: [{}],
    tokenBalances: [{}],
    rewards: [{}],
  })
  assert.deepEqual(out, [
    '{"header":{"number":100,"hash":"HASH100","parentSlot":98,"height":null,"timestamp":1700000000},' +
      '"transactions":[' +
      '{"version":"legacy","addressTableLookups":[],"signatures":["SIG1"],"err":{"InstructionError":[0,{"Custom":6001}]},"fee":"5000","computeUnitsConsumed":"9223372036854775815","loadedAddresses":{"writable":[],"readonly":[]}},' +
      '{"version":0,"addressTableLookups":[{"accountKey":"LUT","writableIndexes":[1],"readonlyIndexes":[]}],"signatures":["SIG2","SIG3"],"err":null,"fee":"10000","computeUnitsConsumed":"0","loadedAddresses":{"writable":["W111111111111111111111111111111111111111111"],"readonly":[]}}],' +
      '"instructions":[' +
      '{"instructionAddress":[0],"accounts":["A111111111111111111111111111111111111111111","A211111111111111111111111111111111111111111"],"d1":"0xf8","d8":"0xf8c69e91e17587c8","error":"custom \\"quoted\\"\\nerror","computeUnitsConsumed":"9007199254740993","isCommitted":false},' +
      '{"instructionAddress":[0,0],"accounts":[],"d1":null,"d8":null,"error":null,"computeUnitsConsumed":null,"isCommitted":false}],' +
      '"logs":[{"logIndex":1,"kind":"log","message":"tab\\there ✓ \\u0001"},{"logIndex":4,"kind":"other","message":"x"}],' +
      '"balances":[{"pre":"100","post":"18446744073709551615"}],' +
      '"tokenBalances":[{"preMint":null,"postMint":"M","postDecimals":6,"preAmount":null,"postAmount":"12345678901234567890"}],' +
      '"rewards":[{"pubKey":"V111111111111111111111111111111111111111111","lamports":"-5","rewardType":null,"commission":null}]}',
  ])
})

test('bigintsAsNumbers renders exact bare integers', async () => {
  const out = await lines(
    {
      fromBlock: 100,
      fields: {
        transaction: { fee: true, computeUnitsConsumed: true },
        balance: { post: true },
        reward: { lamports: true },
        tokenBalance: { preAmount: true },
      },
      transactions: [{ feePayer: ['A111111111111111111111111111111111111111111'] }],
      balances: [{}],
      rewards: [{}],
      tokenBalances: [{}],
    },
    true,
  )
  assert.deepEqual(out, [
    '{"header":{},"transactions":[{"fee":5000,"computeUnitsConsumed":9223372036854775815}],"balances":[{"post":18446744073709551615}],"tokenBalances":[{"preAmount":null}],"rewards":[{"lamports":-5}]}',
  ])
})

test('both spellings selected: both keys; no fields selected: {} records; unselected kinds absent', async () => {
  const out = await lines({
    fromBlock: 100,
    fields: { block: { parentNumber: true, parentSlot: true }, reward: { pubkey: true, pubKey: true } },
    rewards: [{ pubkey: ['V111111111111111111111111111111111111111111'] }],
    instructions: [{ programId: [PROG], innerInstructions: true }],
  })
  assert.deepEqual(out, [
    '{"header":{"parentNumber":98,"parentSlot":98},"instructions":[{},{}],"rewards":[{"pubkey":"V111111111111111111111111111111111111111111","pubKey":"V111111111111111111111111111111111111111111"}]}',
  ])
})

test('relations: d8 + innerInstructions + transaction + logs; log → instruction', async () => {
  const out = await lines({
    fromBlock: 100,
    fields: {
      transaction: { transactionIndex: true },
      instruction: { instructionAddress: true },
      log: { logIndex: true },
    },
    instructions: [
      { programId: [PROG], d8: ['0xF8C69E91E17587C8'], innerInstructions: true, transaction: true, logs: true },
    ],
  })
  assert.deepEqual(out, [
    '{"header":{},"transactions":[{"transactionIndex":3}],"instructions":[{"instructionAddress":[0]},{"instructionAddress":[0,0]}],"logs":[{"logIndex":1}]}',
  ])
  const out2 = await lines({
    fromBlock: 100,
    fields: { instruction: { instructionAddress: true }, log: { logIndex: true } },
    logs: [{ kind: ['other'], instruction: true }],
  })
  assert.deepEqual(out2, ['{"header":{},"instructions":[{"instructionAddress":[0,0]}],"logs":[{"logIndex":4}]}'])
  const out3 = await lines({
    fromBlock: 100,
    fields: { instruction: { instructionAddress: true } },
    instructions: [{ programId: ['Tok1111111111111111111111111111111111111111'], parentInstructions: true }],
  })
  assert.deepEqual(out3, ['{"header":{},"instructions":[{"instructionAddress":[0]},{"instructionAddress":[0,0]}]}'])
  const out4 = await lines({
    fromBlock: 100,
    fields: { transaction: { transactionIndex: true } },
    transactions: [{ mentionsAccount: ['W111111111111111111111111111111111111111111'] }],
  })
  assert.deepEqual(out4, ['{"header":{},"transactions":[{"transactionIndex":5}]}'])
})

test('writers are compiled once per selection: a query parsed again reuses them, another selection does not', () => {
  const sel = (fields: Record<string, Record<string, boolean>>) => parseQuery({ type: 'solana', fromBlock: 0, fields })
  const a = sel({ transaction: { fee: true, transactionIndex: true } })
  const b = sel({ transaction: { fee: true, transactionIndex: true } })
  assert.notEqual(a.fields.transaction, b.fields.transaction)
  const w = compileWriter(a.fields.transaction, false)
  assert.equal(compileWriter(b.fields.transaction, false), w)
  assert.notEqual(compileWriter(b.fields.transaction, true), w)
  assert.notEqual(compileWriter(sel({ transaction: { fee: true } }).fields.transaction, false), w)
  // both spellings of one field: its own writer (two keys, one column)
  const both = sel({ block: { parentNumber: true, parentSlot: true } }).fields.block
  const one = sel({ block: { parentNumber: true } }).fields.block
  assert.notEqual(compileWriter(both, false), compileWriter(one, false))
  assert.equal(compileWriter(both, false)([[7]])(0), '{"parentNumber":7,"parentSlot":7}')
  // the cached writer renders the same text as a fresh compile of the other parse
  assert.equal(w([[1], [5000n]])(0), compileWriter(b.fields.transaction, false)([[1], [5000n]])(0))
})

test('a json value shared by rows (a stored column dictionary value) is stringified once, its text reused', () => {
  const q = parseQuery({ type: 'solana', fromBlock: 0, fields: { transaction: { transactionIndex: true, err: true } } })
  const err = { InstructionError: [0, { Custom: 6001 }] }
  const other = { InstructionError: [1, 'InvalidAccountData'] }
  const w = compileWriter(
    q.fields.transaction,
    false,
  )([
    [1, 2, 3, 4],
    [err, other, err, null],
  ])
  const stringify = JSON.stringify
  let calls = 0
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    calls++
    return stringify(...args)
  }) as typeof JSON.stringify
  let out: string[]
  try {
    out = [0, 1, 2, 3, 0, 1].map((i) => w(i))
  } finally {
    JSON.stringify = stringify
  }
  assert.deepEqual(out, [
    '{"transactionIndex":1,"err":{"InstructionError":[0,{"Custom":6001}]}}',
    '{"transactionIndex":2,"err":{"InstructionError":[1,"InvalidAccountData"]}}',
    '{"transactionIndex":3,"err":{"InstructionError":[0,{"Custom":6001}]}}',
    '{"transactionIndex":4,"err":null}',
    '{"transactionIndex":1,"err":{"InstructionError":[0,{"Custom":6001}]}}',
    '{"transactionIndex":2,"err":{"InstructionError":[1,"InvalidAccountData"]}}',
  ])
  assert.equal(calls, 2, 'each object stringified once')
})
