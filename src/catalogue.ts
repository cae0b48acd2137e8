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
 * - safeAscii: text proven at ingest to need no JSON escaping, rendered between quotes as is:
 *   base58 checked by `normalizeBlock` (addresses and hashes: 32 bytes, signatures: 64 bytes,
 *   instruction data: the alphabet), `0x` hex computed from checked data (d1..d8, dataPrefix), or
 *   a word the normalizer writes itself (log `kind`). A value that fails its check never gets
 *   here: its transaction is skipped with a warning (src/normalize/README.md).
 * - string: arbitrary text (JSON-escaped)
 * - bool
 * - json: arbitrary JSON value (rendered with JSON.stringify)
 * - address: number[] (instruction address)
 * - safeAsciiList: string[] of safeAscii values
 * - version: 'legacy' | number
 */
export type FieldType =
  'u32' | 'u64' | 'i64' | 'safeAscii' | 'string' | 'bool' | 'json' | 'address' | 'safeAsciiList' | 'version'

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
  f('hash', 'safeAscii'),
  f('parentNumber', 'u32', false, ['parentNumber', 'parentSlot']),
  f('parentHash', 'safeAscii'),
  f('height', 'u32', true),
  f('timestamp', 'u32'),
]

export const RECORD_FIELDS: { readonly [K in RecordKind]: readonly FieldDef[] } = {
  transaction: [
    f('transactionIndex', 'u32'),
    f('version', 'version'),
    f('accountKeys', 'safeAsciiList'),
    f('addressTableLookups', 'json'),
    f('numReadonlySignedAccounts', 'u32'),
    f('numReadonlyUnsignedAccounts', 'u32'),
    f('numRequiredSignatures', 'u32'),
    f('recentBlockhash', 'safeAscii'),
    f('signatures', 'safeAsciiList'),
    f('err', 'json', true),
    f('fee', 'u64'),
    f('computeUnitsConsumed', 'u64'),
    f('loadedAddresses', 'json'),
    f('feePayer', 'safeAscii'),
    f('hasDroppedLogMessages', 'bool'),
    // an extension (docs/query.md §3): version 1 transactions' declared compute budget, null for
    // legacy and v0 ones (a structured json value: src/query/render.ts renders its u64 as an amount)
    f('transactionConfig', 'json', true),
  ],
  instruction: [
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
  log: [
    f('transactionIndex', 'u32'),
    f('logIndex', 'u32'),
    f('instructionAddress', 'address'),
    f('programId', 'safeAscii'),
    f('kind', 'safeAscii'),
    f('message', 'string'),
  ],
  balance: [f('transactionIndex', 'u32'), f('account', 'safeAscii'), f('pre', 'u64'), f('post', 'u64')],
  tokenBalance: [
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
  reward: [
    f('pubkey', 'safeAscii', false, ['pubkey', 'pubKey']),
    f('lamports', 'i64'),
    f('postBalance', 'u64'),
    f('rewardType', 'string', true),
    f('commission', 'u32', true),
  ],
}

/** Internal, stored but never selectable, fields (filters use them). */
export const INTERNAL_FIELDS: { readonly [K in RecordKind]?: readonly FieldDef[] } = {
  instruction: [f('dataPrefix', 'safeAscii', false, [])],
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
