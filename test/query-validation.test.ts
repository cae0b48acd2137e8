import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseQuery, QueryError } from '../src/query/index.ts'

function reason(body: unknown, limits?: Parameters<typeof parseQuery>[1]): string {
  try {
    parseQuery(body, limits)
  } catch (e) {
    assert.ok(e instanceof QueryError, `not a QueryError: ${e}`)
    return e.message
  }
  assert.fail(`accepted: ${JSON.stringify(body)}`)
}

const ok = (body: unknown, limits?: Parameters<typeof parseQuery>[1]) => parseQuery(body, limits)

test('the body must be an object', () => {
  for (const b of [null, 5, 'x', [], true]) assert.equal(reason(b), 'the query must be a JSON object')
})

test('unknown top-level members', () => {
  assert.equal(reason({ fromBlock: 0, foo: 1 }), '.foo: unknown member')
  assert.equal(reason({ fromBlock: 0, instruction: [] }), '.instruction: unknown member')
})

test('type: absent or solana', () => {
  ok({ fromBlock: 0 })
  ok({ fromBlock: 0, type: 'solana' })
  assert.equal(reason({ fromBlock: 0, type: 'evm' }), '.type: unsupported dataset type "evm", expected "solana"')
  assert.equal(reason({ fromBlock: 0, type: 1 }), '.type: expected a string')
})

test('fromBlock: required non-negative integer', () => {
  assert.equal(reason({}), '.fromBlock: missing required member')
  for (const v of [-1, 1.5, '5', null, 2 ** 60]) {
    assert.equal(reason({ fromBlock: v }), '.fromBlock: expected a non-negative integer')
  }
  assert.equal(ok({ fromBlock: 0 }).fromBlock, 0)
})

test('toBlock: integer, not below fromBlock; null = absent', () => {
  assert.equal(reason({ fromBlock: 10, toBlock: 5 }), '.toBlock: toBlock 5 is below fromBlock 10')
  assert.equal(reason({ fromBlock: 10, toBlock: 'a' }), '.toBlock: expected a non-negative integer')
  assert.equal(ok({ fromBlock: 10, toBlock: 10 }).toBlock, 10)
  assert.equal(ok({ fromBlock: 10, toBlock: null }).toBlock, undefined)
  assert.equal(ok({ fromBlock: 10 }).toBlock, undefined)
})

test('parentBlockHash and includeAllBlocks types', () => {
  assert.equal(reason({ fromBlock: 1, parentBlockHash: 5 }), '.parentBlockHash: expected a string')
  assert.equal(ok({ fromBlock: 1, parentBlockHash: 'abc' }).parentBlockHash, 'abc')
  assert.equal(reason({ fromBlock: 1, includeAllBlocks: 'yes' }), '.includeAllBlocks: expected a boolean')
  assert.equal(reason({ fromBlock: 1, includeAllBlocks: null }), '.includeAllBlocks: expected a boolean')
  assert.equal(ok({ fromBlock: 1, includeAllBlocks: true }).includeAllBlocks, true)
  assert.equal(ok({ fromBlock: 1 }).includeAllBlocks, false)
})

test('fields: strict selectors', () => {
  assert.equal(reason({ fromBlock: 0, fields: [] }), '.fields: expected an object')
  assert.equal(reason({ fromBlock: 0, fields: { blocks: {} } }), '.fields.blocks: unknown member')
  assert.equal(reason({ fromBlock: 0, fields: { block: { foo: true } } }), '.fields.block.foo: unknown member')
  assert.equal(reason({ fromBlock: 0, fields: { block: true } }), '.fields.block: expected an object')
  assert.equal(
    reason({ fromBlock: 0, fields: { instruction: { data: 1 } } }),
    '.fields.instruction.data: expected a boolean',
  )
  assert.equal(
    reason({ fromBlock: 0, fields: { instruction: { d3: true } } }),
    '.fields.instruction.d3: unknown member',
  )
  assert.equal(
    reason({ fromBlock: 0, fields: { instruction: { dataPrefix: true } } }),
    '.fields.instruction.dataPrefix: unknown member',
  )
  assert.equal(
    reason({ fromBlock: 0, fields: { reward: { pubKey: true, foo: false } } }),
    '.fields.reward.foo: unknown member',
  )
})

test('fields: aliases render under the spelling used, catalogue order, false = not selected', () => {
  const q = ok({
    fromBlock: 0,
    fields: {
      block: { parentSlot: true, number: true, hash: false, parentNumber: true },
      reward: { pubKey: true, lamports: true, pubkey: true },
      tokenBalance: {},
    },
  })
  assert.deepEqual(
    q.fields.block.map((f) => f.key),
    ['number', 'parentNumber', 'parentSlot'],
  )
  assert.deepEqual(
    q.fields.reward.map((f) => [f.key, f.def.name]),
    [
      ['pubkey', 'pubkey'],
      ['pubKey', 'pubkey'],
      ['lamports', 'lamports'],
    ],
  )
  assert.deepEqual(q.fields.tokenBalance, [])
  // absent fields: nothing selected (no defaults applied to output)
  const bare = ok({ fromBlock: 0 })
  for (const sel of Object.values(bare.fields)) assert.deepEqual(sel, [])
})

test('item request lists and objects', () => {
  assert.equal(reason({ fromBlock: 0, instructions: {} }), '.instructions: expected an array')
  assert.equal(reason({ fromBlock: 0, logs: [5] }), '.logs[0]: expected an object')
  assert.equal(reason({ fromBlock: 0, instructions: [{}, { foo: [] }] }), '.instructions[1].foo: unknown member')
  assert.equal(reason({ fromBlock: 0, rewards: [{ pubKey: ['x'] }] }), '.rewards[0].pubKey: unknown member')
  assert.equal(reason({ fromBlock: 0, balances: [{ logs: true }] }), '.balances[0].logs: unknown member')
  assert.equal(
    reason({ fromBlock: 0, transactions: [{ transaction: true }] }),
    '.transactions[0].transaction: unknown member',
  )
})

test('filter value types', () => {
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ programId: 'abc' }] }),
    '.instructions[0].programId: expected an array of strings',
  )
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ programId: ['a', 1] }] }),
    '.instructions[0].programId[1]: expected a string',
  )
  assert.equal(reason({ fromBlock: 0, instructions: [{ a15: [null] }] }), '.instructions[0].a15[0]: expected a string')
  assert.equal(reason({ fromBlock: 0, instructions: [{ a16: ['x'] }] }), '.instructions[0].a16: unknown member')
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ isCommitted: 'true' }] }),
    '.instructions[0].isCommitted: expected a boolean',
  )
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ transaction: 1 }] }),
    '.instructions[0].transaction: expected a boolean',
  )
  assert.equal(
    reason({ fromBlock: 0, tokenBalances: [{ preMint: [{}] }] }),
    '.tokenBalances[0].preMint[0]: expected a string',
  )
  // null = absent for the optional filters (as the reference accepts)
  const q = ok({ fromBlock: 0, instructions: [{ programId: null, isCommitted: null }] })
  assert.equal(q.requests.length, 1)
  assert.equal(q.requests[0].filters.length, 0)
})

test('d1..d8: exact length of hex digits, either case', () => {
  const digits: Record<string, number> = { d1: 2, d2: 4, d3: 6, d4: 8, d8: 16 }
  for (const [d, n] of Object.entries(digits)) {
    ok({ fromBlock: 0, instructions: [{ [d]: ['0x' + 'aB'.repeat(n / 2)] }] })
    for (const bad of [
      '0x' + 'a'.repeat(n - 1),
      '0x' + 'a'.repeat(n + 2),
      'ab'.repeat(n / 2 + 1),
      '0x' + 'g'.repeat(n),
      '0X' + 'a'.repeat(n),
    ]) {
      assert.equal(
        reason({ fromBlock: 0, instructions: [{}, { [d]: ['0x' + '0'.repeat(n), bad] }] }),
        `.instructions[1].${d}[1]: expected 0x followed by ${n} hex digits`,
      )
    }
  }
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ d8: ['0xf8c69e91e17587c8', '0xf8c69e91e17587'] }] }),
    '.instructions[0].d8[1]: expected 0x followed by 16 hex digits',
  )
})

test('discriminator: 0x + even number of hex digits, at most 16 bytes', () => {
  ok({ fromBlock: 0, instructions: [{ discriminator: ['0x', '0xAB', '0x' + 'ab'.repeat(16)] }] })
  for (const bad of ['0xabc', '0x' + 'ab'.repeat(17), 'abcd', '0xzz']) {
    assert.equal(
      reason({ fromBlock: 0, instructions: [{ discriminator: [bad] }] }),
      '.instructions[0].discriminator[0]: expected 0x followed by an even number of hex digits, at most 32',
    )
  }
})

test('at most one of d1, d2, d3, d4, d8, discriminator per request', () => {
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ d1: ['0x01'], d8: ['0x0102030405060708'] }] }),
    '.instructions[0]: at most one of d1, d2, d3, d4, d8, discriminator is allowed, got d1 and d8',
  )
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ d3: ['0x010203'] }, { discriminator: [], d2: ['0x0102'] }] }),
    '.instructions[1]: at most one of d1, d2, d3, d4, d8, discriminator is allowed, got discriminator and d2',
  )
  ok({ fromBlock: 0, instructions: [{ d1: ['0x01'] }, { d8: ['0x0102030405060708'] }] })
})

test('log kind values', () => {
  ok({ fromBlock: 0, logs: [{ kind: ['log', 'data', 'other'] }] })
  assert.equal(
    reason({ fromBlock: 0, logs: [{ kind: ['log', 'Log'] }] }),
    '.logs[0].kind[1]: expected one of "log", "data", "other"',
  )
  assert.equal(
    reason({ fromBlock: 0, logs: [{ kind: ['error'] }] }),
    '.logs[0].kind[0]: expected one of "log", "data", "other"',
  )
})

test('address filter values: base58 alphabet and 32 decoded bytes, else 400 naming the value', () => {
  const whirl = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'
  ok({ fromBlock: 0, instructions: [{ programId: [whirl, '11111111111111111111111111111111'] }] })
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ programId: ['whirl0000'] }] }),
    '.instructions[0].programId[0]: expected a base58 address, got "whirl0000" (characters outside the base58 alphabet)',
  )
  // base58 text of the wrong decoded length: too short, one byte too many
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ programId: [whirl, 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyC'] }] }),
    '.instructions[0].programId[1]: expected a base58 address of 32 bytes, got "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyC" (31 bytes)',
  )
  assert.equal(
    reason({ fromBlock: 0, transactions: [{ feePayer: ['z'.repeat(44)] }] }),
    `.transactions[0].feePayer[0]: expected a base58 address of 32 bytes, got "${'z'.repeat(44)}" (33 bytes)`,
  )
  // every address filter, positional and list ones included; the value is shown escaped
  for (const [member, item] of [
    ['instructions', 'a0'],
    ['instructions', 'a15'],
    ['instructions', 'mentionsAccount'],
    ['transactions', 'mentionsAccount'],
    ['logs', 'programId'],
    ['balances', 'account'],
    ['tokenBalances', 'postOwner'],
    ['rewards', 'pubkey'],
  ]) {
    assert.equal(
      reason({ fromBlock: 0, [member]: [{ [item]: ['a"b\n'] }] }),
      `.${member}[0].${item}[0]: expected a base58 address, got "a\\"b\\n" (characters outside the base58 alphabet)`,
    )
  }
  assert.equal(reason({ fromBlock: 0, balances: [{ account: [''] }] }).startsWith('.balances[0].account[0]: '), true)
})

test('unknown member names from the request are quoted unless plain identifiers', () => {
  assert.equal(reason({ fromBlock: 0, 'a\nb': 1 }), '["a\\nb"]: unknown member')
  assert.equal(reason({ fromBlock: 0, instructions: [{ 'x"': [] }] }), '.instructions[0]["x\\""]: unknown member')
})

test('relation flags of every kind, with the reference extensions', () => {
  const q = ok({
    fromBlock: 0,
    instructions: [
      {
        transaction: true,
        transactionBalances: true,
        transactionTokenBalances: true,
        transactionInstructions: true,
        innerInstructions: true,
        parentInstructions: true,
        logs: false,
      },
    ],
    transactions: [{ instructions: true, balances: true, tokenBalances: true, logs: true }],
    balances: [{ transaction: true, transactionInstructions: true }],
    tokenBalances: [
      { transaction: true, transactionInstructions: true, transactionBalances: true, transactionTokenBalances: true },
    ],
    logs: [{ instruction: true, transaction: true }],
    rewards: [{ pubkey: ['x111111111111111111111111111111111111111111'] }],
  })
  assert.deepEqual(
    q.requests.map((r) => [r.kind, r.relations.map((x) => x.flag)]),
    [
      ['transaction', ['instructions', 'balances', 'tokenBalances', 'logs']],
      [
        'instruction',
        [
          'transaction',
          'transactionBalances',
          'transactionTokenBalances',
          'transactionInstructions',
          'innerInstructions',
          'parentInstructions',
        ],
      ],
      ['log', ['instruction', 'transaction']],
      ['balance', ['transaction', 'transactionInstructions']],
      ['tokenBalance', ['transaction', 'transactionInstructions', 'transactionBalances', 'transactionTokenBalances']],
      ['reward', []],
    ],
  )
})

test('a request with an empty filter list matches nothing and is dropped', () => {
  const q = ok({
    fromBlock: 0,
    instructions: [
      { programId: [], transaction: true },
      { programId: ['p111111111111111111111111111111111111111111'] },
    ],
  })
  assert.deepEqual(
    q.requests.map((r) => r.path),
    ['.instructions[1]'],
  )
})

test('limit: number of item requests', () => {
  const many = (n: number) => Array.from({ length: n }, () => ({}))
  ok({ fromBlock: 0, instructions: many(50), logs: many(50) })
  assert.equal(
    reason({ fromBlock: 0, instructions: many(50), logs: many(51) }),
    'query contains 101 item requests, but at most 100 are allowed (limit maxItemRequests)',
  )
  assert.equal(
    reason({ fromBlock: 0, rewards: many(3) }, { maxItemRequests: 2 }),
    'query contains 3 item requests, but at most 2 are allowed (limit maxItemRequests)',
  )
})

test('limit: values per filter list', () => {
  // distinct valid addresses: `Acc<i>` (0 written z) padded with `1`s to 43 characters
  const list = (n: number) => Array.from({ length: n }, (_, i) => `Acc${i}`.replace(/0/g, 'z').padEnd(43, '1'))
  ok({ fromBlock: 0, transactions: [{ mentionsAccount: list(100_000) }] })
  assert.equal(
    reason({ fromBlock: 0, transactions: [{ mentionsAccount: list(100_001) }] }),
    '.transactions[0].mentionsAccount: 100001 values, but at most 100000 are allowed per filter (limit maxFilterValues)',
  )
  assert.equal(
    reason({ fromBlock: 0, instructions: [{ a3: list(11) }] }, { maxFilterValues: 10 }),
    '.instructions[0].a3: 11 values, but at most 10 are allowed per filter (limit maxFilterValues)',
  )
  // an undefined limit keeps the default
  assert.equal(
    reason(
      { fromBlock: 0, transactions: [{ feePayer: list(100_001) }] },
      { maxFilterValues: undefined, maxItemRequests: 5 },
    ),
    '.transactions[0].feePayer: 100001 values, but at most 100000 are allowed per filter (limit maxFilterValues)',
  )
})
