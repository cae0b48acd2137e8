/**
 * The Solana dataset, declared in one place (docs/query.md §1-§3): block headers, the six record
 * kinds with their fields, the item requests with their filters, the relations their flags pull
 * in, the fields chunks index for pruning, and the structural writers of the `json` fields whose
 * shape the model fixes (src/model.ts).
 *
 * Order of the fields = order of the keys in the rendered JSON; order of the tables = order of the
 * block members.
 */
import type { AddressTableLookup, LoadedAddresses, TransactionConfig } from '../model.ts'
import { defineDataset, field as f, type FilterDecl, type RelationDecl } from './types.ts'

function list(v: readonly string[]): string {
  return v.length === 0 ? '[]' : '["' + v.join('","') + '"]'
}

function isIntOrNull(v: unknown): boolean {
  return v === null || (typeof v === 'number' && Number.isSafeInteger(v))
}

/** `loadedAddresses` (checked address lists), key order of src/model.ts */
function loadedAddresses(v: LoadedAddresses): string {
  if (!Array.isArray(v.writable) || !Array.isArray(v.readonly)) return JSON.stringify(v)
  return '{"writable":' + list(v.writable) + ',"readonly":' + list(v.readonly) + '}'
}

/** All values of a `loadedAddresses` value that are addresses. */
function loadedAddressValues(x: unknown, out: Set<string>): void {
  if (!x || typeof x !== 'object') return
  const la = x as { writable?: unknown; readonly?: unknown }
  for (const l of [la.writable, la.readonly])
    if (Array.isArray(l)) for (const a of l) if (typeof a === 'string') out.add(a)
}

/** `addressTableLookups` (checked addresses and indexes), key order of src/model.ts */
function addressTableLookups(v: readonly AddressTableLookup[]): string {
  if (!Array.isArray(v)) return JSON.stringify(v)
  if (v.length === 0) return '[]'
  let s = '['
  for (let i = 0; i < v.length; i++) {
    const x = v[i]
    if (typeof x.accountKey !== 'string' || !Array.isArray(x.writableIndexes) || !Array.isArray(x.readonlyIndexes)) {
      return JSON.stringify(v)
    }
    s +=
      (i === 0 ? '{"accountKey":"' : ',{"accountKey":"') +
      x.accountKey +
      '","writableIndexes":[' +
      x.writableIndexes.join(',') +
      '],"readonlyIndexes":[' +
      x.readonlyIndexes.join(',') +
      ']}'
  }
  return s + ']'
}

/**
 * `transactionConfig` (integers checked by the normalizer), key order of src/model.ts;
 * `priorityFee` (a u64 held as a decimal string) as the other amounts: quoted, or bare with
 * bigintsAsNumbers
 */
function transactionConfig(v: TransactionConfig, bigintsAsNumbers: boolean): string {
  const fee = v.priorityFee
  if (
    !isIntOrNull(v.computeUnitLimit) ||
    !isIntOrNull(v.heapSize) ||
    !isIntOrNull(v.loadedAccountsDataSizeLimit) ||
    (fee !== null && (typeof fee !== 'string' || !/^[0-9]+$/.test(fee)))
  ) {
    return JSON.stringify(v)
  }
  return (
    '{"computeUnitLimit":' +
    v.computeUnitLimit +
    ',"heapSize":' +
    v.heapSize +
    ',"loadedAccountsDataSizeLimit":' +
    v.loadedAccountsDataSizeLimit +
    ',"priorityFee":' +
    (fee === null ? 'null' : bigintsAsNumbers ? fee : '"' + fee + '"') +
    '}'
  )
}

const U32_OR_NULL = { type: ['integer', 'null'], minimum: 0, maximum: 0xffffffff }

/** `transactionConfig` (src/model.ts TransactionConfig): version 1 transactions' object, else null */
const TRANSACTION_CONFIG_SCHEMA = {
  description:
    'the compute budget a version 1 transaction declares (message.transactionConfig; an extension); null for legacy and v0 transactions',
  anyOf: [
    {
      type: 'object',
      properties: {
        computeUnitLimit: U32_OR_NULL,
        heapSize: U32_OR_NULL,
        loadedAccountsDataSizeLimit: U32_OR_NULL,
        priorityFee: { type: ['string', 'integer', 'null'], pattern: '^[0-9]+$', minimum: 0 },
      },
      required: ['computeUnitLimit', 'heapSize', 'loadedAccountsDataSizeLimit', 'priorityFee'],
      additionalProperties: false,
    },
    { type: 'null' },
  ],
}

const accountsAt: FilterDecl[] = Array.from({ length: 16 }, (_, i) => ({
  member: `a${i}`,
  op: 'at' as const,
  column: 'accounts',
  index: i,
}))

/** rows of the same transaction */
const sameTx = (from: string, flag: string, to: string): RelationDecl => ({
  from,
  flag,
  to,
  join: 'group',
  group: 'transactionIndex',
  describe: 'of the same transaction',
})

/** instructions related by their place in the call tree, or logs of the same instruction */
const byAddress = (from: string, flag: string, to: string, join: 'subtree' | 'parents' | 'path'): RelationDecl => ({
  from,
  flag,
  to,
  join,
  group: 'transactionIndex',
  path: 'instructionAddress',
  describe:
    join === 'subtree'
      ? 'called by it (its inner instructions, at any depth)'
      : join === 'parents'
        ? 'that called it (its parent instructions)'
        : 'produced by the same instruction',
})

export const SOLANA = defineDataset({
  type: 'solana',
  header: [
    f('number', 'u32'),
    f('hash', 'safeAscii'),
    f('parentNumber', 'u32', false, ['parentNumber', 'parentSlot']),
    f('parentHash', 'safeAscii'),
    f('height', 'u32', true),
    f('timestamp', 'u32'),
  ],
  tables: [
    {
      kind: 'transaction',
      member: 'transactions',
      fields: [
        f('transactionIndex', 'u32'),
        f('version', 'version'),
        f('accountKeys', 'safeAsciiList'),
        f('addressTableLookups', 'json', false, undefined, { render: addressTableLookups }),
        f('numReadonlySignedAccounts', 'u32'),
        f('numReadonlyUnsignedAccounts', 'u32'),
        f('numRequiredSignatures', 'u32'),
        f('recentBlockhash', 'safeAscii'),
        f('signatures', 'safeAsciiList'),
        f('err', 'json', true),
        f('fee', 'u64'),
        f('computeUnitsConsumed', 'u64'),
        f('loadedAddresses', 'json', false, undefined, { render: loadedAddresses, strings: loadedAddressValues }),
        f('feePayer', 'safeAscii'),
        f('hasDroppedLogMessages', 'bool'),
        // an extension (docs/query.md §3): version 1 transactions' declared compute budget, null
        // for legacy and v0 ones (its u64 rendered as an amount)
        f('transactionConfig', 'json', true, undefined, {
          render: transactionConfig,
          schema: TRANSACTION_CONFIG_SCHEMA,
        }),
      ],
      prune: ['feePayer', 'accountKeys', 'loadedAddresses'],
    },
    {
      kind: 'instruction',
      member: 'instructions',
      fields: [
        f('transactionIndex', 'u32'),
        f('instructionAddress', 'address'),
        f('programId', 'safeAscii'),
        f('accounts', 'safeAsciiList'),
        f('data', 'safeAscii'),
        f('d1', 'safeAscii', true),
        f('d2', 'safeAscii', true),
        f('d4', 'safeAscii', true),
        f('d8', 'safeAscii', true),
        f('error', 'string', true),
        f('computeUnitsConsumed', 'u64', true),
        f('isCommitted', 'bool'),
        f('hasDroppedLogMessages', 'bool'),
      ],
      // `0x` + hex of the first min(16, len) bytes of the data: d3 and `discriminator` filter on it
      internal: [f('dataPrefix', 'safeAscii', false, [])],
      prune: ['programId', 'accounts'],
    },
    {
      kind: 'log',
      member: 'logs',
      fields: [
        f('transactionIndex', 'u32'),
        f('logIndex', 'u32'),
        f('instructionAddress', 'address'),
        f('programId', 'safeAscii'),
        f('kind', 'safeAscii'),
        f('message', 'string'),
      ],
      prune: ['programId'],
    },
    {
      kind: 'balance',
      member: 'balances',
      fields: [f('transactionIndex', 'u32'), f('account', 'safeAscii'), f('pre', 'u64'), f('post', 'u64')],
      prune: ['account'],
    },
    {
      kind: 'tokenBalance',
      member: 'tokenBalances',
      fields: [
        f('transactionIndex', 'u32'),
        f('account', 'safeAscii'),
        f('preMint', 'safeAscii', true),
        f('postMint', 'safeAscii', true),
        f('preDecimals', 'u32', true),
        f('postDecimals', 'u32', true),
        f('preProgramId', 'safeAscii', true),
        f('postProgramId', 'safeAscii', true),
        f('preOwner', 'safeAscii', true),
        f('postOwner', 'safeAscii', true),
        f('preAmount', 'u64', true),
        f('postAmount', 'u64', true),
      ],
      prune: ['account', 'preMint', 'postMint', 'preOwner', 'postOwner', 'preProgramId', 'postProgramId'],
    },
    {
      kind: 'reward',
      member: 'rewards',
      fields: [
        f('pubkey', 'safeAscii', false, ['pubkey', 'pubKey']),
        f('lamports', 'i64'),
        f('postBalance', 'u64'),
        f('rewardType', 'string', true),
        f('commission', 'u32', true),
      ],
      prune: ['pubkey'],
    },
  ],
  requests: [
    {
      kind: 'transaction',
      member: 'transactions',
      filters: [
        { member: 'feePayer', op: 'in', column: 'feePayer' },
        {
          member: 'mentionsAccount',
          op: 'any',
          sources: [
            { column: 'accountKeys' },
            { column: 'loadedAddresses', sub: 'writable' },
            { column: 'loadedAddresses', sub: 'readonly' },
          ],
        },
      ],
    },
    {
      kind: 'instruction',
      member: 'instructions',
      filters: [
        { member: 'programId', op: 'in', column: 'programId' },
        { member: 'd1', op: 'prefix', column: 'dataPrefix', bytes: 1, maxBytes: 1 },
        { member: 'd2', op: 'prefix', column: 'dataPrefix', bytes: 2, maxBytes: 2 },
        { member: 'd3', op: 'prefix', column: 'dataPrefix', bytes: 3, maxBytes: 3 },
        { member: 'd4', op: 'prefix', column: 'dataPrefix', bytes: 4, maxBytes: 4 },
        { member: 'd8', op: 'prefix', column: 'dataPrefix', bytes: 8, maxBytes: 8 },
        { member: 'discriminator', op: 'prefix', column: 'dataPrefix', bytes: 0, maxBytes: 16 },
        ...accountsAt,
        { member: 'mentionsAccount', op: 'any', sources: [{ column: 'accounts' }] },
        { member: 'isCommitted', op: 'bool', column: 'isCommitted' },
      ],
    },
    {
      kind: 'log',
      member: 'logs',
      filters: [
        { member: 'programId', op: 'in', column: 'programId' },
        { member: 'kind', op: 'in', column: 'kind', allowed: ['log', 'data', 'other'] },
      ],
    },
    {
      kind: 'balance',
      member: 'balances',
      filters: [{ member: 'account', op: 'in', column: 'account' }],
    },
    {
      kind: 'tokenBalance',
      member: 'tokenBalances',
      filters: [
        { member: 'account', op: 'in', column: 'account' },
        { member: 'preProgramId', op: 'in', column: 'preProgramId' },
        { member: 'postProgramId', op: 'in', column: 'postProgramId' },
        { member: 'preMint', op: 'in', column: 'preMint' },
        { member: 'postMint', op: 'in', column: 'postMint' },
        { member: 'preOwner', op: 'in', column: 'preOwner' },
        { member: 'postOwner', op: 'in', column: 'postOwner' },
      ],
    },
    {
      kind: 'reward',
      member: 'rewards',
      filters: [{ member: 'pubkey', op: 'in', column: 'pubkey' }],
    },
  ],
  relations: [
    sameTx('instruction', 'transaction', 'transaction'),
    sameTx('instruction', 'transactionBalances', 'balance'),
    sameTx('instruction', 'transactionTokenBalances', 'tokenBalance'),
    sameTx('instruction', 'transactionInstructions', 'instruction'),
    byAddress('instruction', 'innerInstructions', 'instruction', 'subtree'),
    byAddress('instruction', 'parentInstructions', 'instruction', 'parents'),
    byAddress('instruction', 'logs', 'log', 'path'),
    sameTx('transaction', 'instructions', 'instruction'),
    sameTx('transaction', 'balances', 'balance'),
    sameTx('transaction', 'tokenBalances', 'tokenBalance'),
    sameTx('transaction', 'logs', 'log'),
    sameTx('balance', 'transaction', 'transaction'),
    sameTx('balance', 'transactionInstructions', 'instruction'),
    sameTx('tokenBalance', 'transaction', 'transaction'),
    sameTx('tokenBalance', 'transactionInstructions', 'instruction'),
    sameTx('tokenBalance', 'transactionBalances', 'balance'),
    sameTx('tokenBalance', 'transactionTokenBalances', 'tokenBalance'),
    byAddress('log', 'instruction', 'instruction', 'path'),
    sameTx('log', 'transaction', 'transaction'),
  ],
  example: {
    fields: {
      block: { number: true, hash: true, timestamp: true },
      transaction: { transactionIndex: true, signatures: true, fee: true, feePayer: true },
      instruction: { transactionIndex: true, instructionAddress: true, programId: true, data: true },
    },
    transactions: [{}],
    instructions: [{ programId: ['ComputeBudget111111111111111111111111111111'], isCommitted: true }],
  },
})
