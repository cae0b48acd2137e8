/**
 * The field catalogue: one declaration of every record kind's fields. Validation (which names a
 * `fields` selector accepts), storage (column types) and rendering (JSON writers) all read it.
 *
 * Order of the entries = order of the keys in the rendered JSON (docs/query.md §3).
 */
import type { RecordKind } from './model.ts'

/**
 * Value types:
 * - u32: small non-negative integer (JS number)
 * - u64 / i64: bigint; rendered as a decimal string (or a bare integer with `bigintsAsNumbers`)
 * - base58: string that needs no JSON escaping (addresses, hashes, signatures, base58 data, hex)
 * - string: arbitrary text (JSON-escaped)
 * - bool
 * - json: arbitrary JSON value (rendered with JSON.stringify)
 * - address: number[] (instruction address)
 * - base58List: string[] of base58
 * - version: 'legacy' | number
 */
export type FieldType =
  'u32' | 'u64' | 'i64' | 'base58' | 'string' | 'bool' | 'json' | 'address' | 'base58List' | 'version'

export interface FieldDef {
  /** property name in the model record (src/model.ts) */
  name: string
  type: FieldType
  nullable: boolean
  /** names accepted in the `fields` selector; each renders under its own spelling */
  selectors: readonly string[]
}

export type SelectorName = 'block' | RecordKind

function f(name: string, type: FieldType, nullable = false, selectors: readonly string[] = [name]): FieldDef {
  return { name, type, nullable, selectors }
}

export const HEADER_FIELDS: readonly FieldDef[] = [
  f('number', 'u32'),
  f('hash', 'base58'),
  f('parentNumber', 'u32', false, ['parentNumber', 'parentSlot']),
  f('parentHash', 'base58'),
  f('height', 'u32', true),
  f('timestamp', 'u32'),
]

export const RECORD_FIELDS: { readonly [K in RecordKind]: readonly FieldDef[] } = {
  transaction: [
    f('transactionIndex', 'u32'),
    f('version', 'version'),
    f('accountKeys', 'base58List'),
    f('addressTableLookups', 'json'),
    f('numReadonlySignedAccounts', 'u32'),
    f('numReadonlyUnsignedAccounts', 'u32'),
    f('numRequiredSignatures', 'u32'),
    f('recentBlockhash', 'base58'),
    f('signatures', 'base58List'),
    f('err', 'json', true),
    f('fee', 'u64'),
    f('computeUnitsConsumed', 'u64'),
    f('loadedAddresses', 'json'),
    f('feePayer', 'base58'),
    f('hasDroppedLogMessages', 'bool'),
  ],
  instruction: [
    f('transactionIndex', 'u32'),
    f('instructionAddress', 'address'),
    f('programId', 'base58'),
    f('accounts', 'base58List'),
    f('data', 'base58'),
    f('d1', 'base58', true),
    f('d2', 'base58', true),
    f('d4', 'base58', true),
    f('d8', 'base58', true),
    f('error', 'string', true),
    f('computeUnitsConsumed', 'u64', true),
    f('isCommitted', 'bool'),
    f('hasDroppedLogMessages', 'bool'),
  ],
  log: [
    f('transactionIndex', 'u32'),
    f('logIndex', 'u32'),
    f('instructionAddress', 'address'),
    f('programId', 'base58'),
    f('kind', 'base58'),
    f('message', 'string'),
  ],
  balance: [f('transactionIndex', 'u32'), f('account', 'base58'), f('pre', 'u64'), f('post', 'u64')],
  tokenBalance: [
    f('transactionIndex', 'u32'),
    f('account', 'base58'),
    f('preMint', 'base58', true),
    f('postMint', 'base58', true),
    f('preDecimals', 'u32', true),
    f('postDecimals', 'u32', true),
    f('preProgramId', 'base58', true),
    f('postProgramId', 'base58', true),
    f('preOwner', 'base58', true),
    f('postOwner', 'base58', true),
    f('preAmount', 'u64', true),
    f('postAmount', 'u64', true),
  ],
  reward: [
    f('pubkey', 'base58', false, ['pubkey', 'pubKey']),
    f('lamports', 'i64'),
    f('postBalance', 'u64'),
    f('rewardType', 'string', true),
    f('commission', 'u32', true),
  ],
}

/** Internal, stored but never selectable, fields (filters use them). */
export const INTERNAL_FIELDS: { readonly [K in RecordKind]?: readonly FieldDef[] } = {
  instruction: [f('dataPrefix', 'base58', false, [])],
}

export function fieldsOf(selector: SelectorName): readonly FieldDef[] {
  return selector === 'block' ? HEADER_FIELDS : RECORD_FIELDS[selector]
}

/** Every stored column of a kind: the selectable fields plus the internal ones. */
export function columnsOf(kind: RecordKind): readonly FieldDef[] {
  return [...RECORD_FIELDS[kind], ...(INTERNAL_FIELDS[kind] ?? [])]
}

/** Map selector spelling → field definition, per selector. */
export const SELECTOR_INDEX: { readonly [S in SelectorName]: ReadonlyMap<string, FieldDef> } = (() => {
  const out = {} as { [S in SelectorName]: Map<string, FieldDef> }
  for (const sel of ['block', 'transaction', 'instruction', 'log', 'balance', 'tokenBalance', 'reward'] as const) {
    const m = new Map<string, FieldDef>()
    for (const fd of fieldsOf(sel)) for (const s of fd.selectors) m.set(s, fd)
    out[sel] = m
  }
  return out
})()

/** Names of the `fields` members (selectors) in a query. */
export const SELECTOR_NAMES: readonly SelectorName[] = [
  'block',
  'transaction',
  'instruction',
  'log',
  'balance',
  'tokenBalance',
  'reward',
]

/** The JSON member name of each kind's list in a rendered block, in output order (docs/query.md §3). */
export const BLOCK_MEMBERS: readonly { kind: RecordKind; member: string }[] = [
  { kind: 'transaction', member: 'transactions' },
  { kind: 'instruction', member: 'instructions' },
  { kind: 'log', member: 'logs' },
  { kind: 'balance', member: 'balances' },
  { kind: 'tokenBalance', member: 'tokenBalances' },
  { kind: 'reward', member: 'rewards' },
]
