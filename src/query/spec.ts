/**
 * The Solana dataset as a declaration: which item requests exist, their filters, and the relations
 * their flags pull in. The parser, the planner and the executor are generic over these tables.
 */
import type { RecordKind } from '../model.ts'

/** How a filter member is validated and evaluated. */
export type FilterDecl =
  /**
   * scalar column value in a list of strings (null never matches): the `allowed` words, or else
   * base58 addresses (32 bytes; anything else is a 400, as for `at` and `any`)
   */
  | { member: string; op: 'in'; column: string; allowed?: readonly string[] }
  /** boolean column equals the given boolean */
  | { member: string; op: 'bool'; column: string }
  /** element `index` of a list column in a list of strings */
  | { member: string; op: 'at'; column: string; index: number }
  /** any element of any of the list sources in a list of strings */
  | { member: string; op: 'any'; sources: readonly { column: string; sub?: string }[] }
  /**
   * prefix of a lower-case `0x…` hex column; `bytes` = exact length of every value, or 0 for
   * `0x` + an even number of hex digits up to `maxBytes`. All members with op 'prefix' of one
   * request are mutually exclusive.
   */
  | { member: string; op: 'prefix'; column: string; bytes: number; maxBytes: number }

/**
 * What each value of a filter list must be: one of the `allowed` words, a `0x` hex prefix, or a
 * base58 address of 32 bytes. The validator checks it and the published schema states it.
 */
export type FilterValueKind = 'word' | 'hexPrefix' | 'address'

export function filterValueKind(d: Exclude<FilterDecl, { op: 'bool' }>): FilterValueKind {
  if (d.op === 'prefix') return 'hexPrefix'
  return d.op === 'in' && d.allowed ? 'word' : 'address'
}

/**
 * How a relation finds the target rows of one source row (same block always):
 * - tx: rows of the same transaction
 * - subtree: instructions of the same transaction whose address has the source's as proper prefix
 * - parents: instructions of the same transaction whose address is a proper prefix of the source's
 * - address: rows of the same transaction with exactly the same instructionAddress
 */
export type JoinKind = 'tx' | 'subtree' | 'parents' | 'address'

export interface RelationDecl {
  from: RecordKind
  flag: string
  to: RecordKind
  join: JoinKind
}

export interface RequestDecl {
  kind: RecordKind
  /** member of the query holding the list of requests (also the output member name) */
  member: string
  filters: readonly FilterDecl[]
}

const accountsAt: FilterDecl[] = Array.from({ length: 16 }, (_, i) => ({
  member: `a${i}`,
  op: 'at' as const,
  column: 'accounts',
  index: i,
}))

export const REQUESTS: readonly RequestDecl[] = [
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
]

export const RELATIONS: readonly RelationDecl[] = [
  { from: 'instruction', flag: 'transaction', to: 'transaction', join: 'tx' },
  { from: 'instruction', flag: 'transactionBalances', to: 'balance', join: 'tx' },
  { from: 'instruction', flag: 'transactionTokenBalances', to: 'tokenBalance', join: 'tx' },
  { from: 'instruction', flag: 'transactionInstructions', to: 'instruction', join: 'tx' },
  { from: 'instruction', flag: 'innerInstructions', to: 'instruction', join: 'subtree' },
  { from: 'instruction', flag: 'parentInstructions', to: 'instruction', join: 'parents' },
  { from: 'instruction', flag: 'logs', to: 'log', join: 'address' },
  { from: 'transaction', flag: 'instructions', to: 'instruction', join: 'tx' },
  { from: 'transaction', flag: 'balances', to: 'balance', join: 'tx' },
  { from: 'transaction', flag: 'tokenBalances', to: 'tokenBalance', join: 'tx' },
  { from: 'transaction', flag: 'logs', to: 'log', join: 'tx' },
  { from: 'balance', flag: 'transaction', to: 'transaction', join: 'tx' },
  { from: 'balance', flag: 'transactionInstructions', to: 'instruction', join: 'tx' },
  { from: 'tokenBalance', flag: 'transaction', to: 'transaction', join: 'tx' },
  { from: 'tokenBalance', flag: 'transactionInstructions', to: 'instruction', join: 'tx' },
  { from: 'tokenBalance', flag: 'transactionBalances', to: 'balance', join: 'tx' },
  { from: 'tokenBalance', flag: 'transactionTokenBalances', to: 'tokenBalance', join: 'tx' },
  { from: 'log', flag: 'instruction', to: 'instruction', join: 'address' },
  { from: 'log', flag: 'transaction', to: 'transaction', join: 'tx' },
]
