/**
 * The structural check of a full `getBlock` answer that the ingester applies before normalizing (a
 * damaged answer must be refetched, never stored with fewer transactions).
 */
import { isAddress } from '../../util/base58.ts'
import { safeJson } from '../../util/safe-json.ts'

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * The structural check of a full `getBlock` answer (json encoding, full transactions): the
 * header members, `transactions` a list, and each transaction an object with
 * `transaction.signatures` (a non-empty list), `transaction.message` with `accountKeys` and
 * `instructions` lists, and a `meta` member (an object, or null as nodes answer without status
 * metadata). Returns the first problem found, or null. The content of each transaction is left to
 * the normalizer (whose skipped transactions the ingester also counts as damage).
 */
export function checkBlockShape(block: unknown): string | null {
  if (!isObject(block)) return 'the answer is not an object'
  // both hashes link the chain: a block stored with a hash the normalizer had to blank would be
  // taken for a fork by its successor, so an unusable one is damage, not a warning
  if (typeof block.blockhash !== 'string' || block.blockhash === '') return 'no blockhash'
  if (!isAddress(block.blockhash)) return `blockhash ${safeJson(block.blockhash)} is not a 32-byte base58 hash`
  if (typeof block.previousBlockhash !== 'string') return 'no previousBlockhash'
  if (!isAddress(block.previousBlockhash)) {
    return `previousBlockhash ${safeJson(block.previousBlockhash)} is not a 32-byte base58 hash`
  }
  if (typeof block.parentSlot !== 'number' || !Number.isSafeInteger(block.parentSlot) || block.parentSlot < 0) {
    return 'no valid parentSlot'
  }
  const txs = block.transactions
  if (!Array.isArray(txs)) return `transactions is ${txs === undefined ? 'missing' : 'not a list'}`
  if (block.rewards != null && !Array.isArray(block.rewards)) return 'rewards is not a list'
  for (let i = 0; i < txs.length; i++) {
    const problem = checkTransactionShape(txs[i], i)
    if (problem !== null) return problem
  }
  return null
}

/** `checkBlockShape`'s check of the transaction at position `i` (the first problem, or null) */
export function checkTransactionShape(tx: unknown, i: number): string | null {
  const bad = (what: string) => `transaction ${i}: ${what}`
  if (!isObject(tx)) return bad('not an object')
  const t = tx.transaction
  if (!isObject(t)) return bad('no transaction')
  if (!Array.isArray(t.signatures) || t.signatures.length === 0 || typeof t.signatures[0] !== 'string') {
    return bad('no transaction.signatures')
  }
  const m = t.message
  if (!isObject(m)) return bad('no transaction.message')
  if (!Array.isArray(m.accountKeys)) return bad('no transaction.message.accountKeys')
  if (!Array.isArray(m.instructions)) return bad('no transaction.message.instructions')
  if (!('meta' in tx) || (tx.meta !== null && !isObject(tx.meta))) return bad('no meta')
  return null
}
