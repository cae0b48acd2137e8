/**
 * JSON text in, normalized records out: the same result as
 * `normalizeBlock(toArchiveLine(parseJsonExact(text)), opts)`, the same exceptions, with less work.
 *
 * The block text is split into its transactions (`splitTransactions`); the rest of the block is
 * parsed first, then each transaction is parsed just before it is normalized and dropped after,
 * so no block-sized object tree ever lives (see src/rpc/split.ts for why that matters). When the
 * text does not split, or any piece fails to parse or check, the whole text goes through the
 * plain path, which then reports the problem exactly as before.
 */
import { parseJsonExact } from '../rpc/json.ts'
import { toArchiveLine } from '../rpc/line.ts'
import { parseElement, splitTransactions, type SplitBlock } from '../rpc/split.ts'
import type { RpcTransaction } from '../rpc/types.ts'
import { normalizeBlock, normalizeBlockFrom, type NormalizeOptions, type NormalizeResult } from './normalize.ts'

const ARCHIVE_PATH: readonly string[] = ['block']

/** A piece did not parse: the text goes through the plain path. */
const PIECE_FAILED = new Error('a transaction did not parse')

/** Normalizes one archive line (`{"slot", "hash", "height", "block"}`) given as JSON text. */
export function normalizeArchiveText(text: string, opts?: NormalizeOptions): NormalizeResult {
  // the guessed cut first; when a piece fails, the exact cut, then the whole text
  for (const guess of [true, false]) {
    const split = splitTransactions(text, ARCHIVE_PATH, guess)
    if (split === null) break
    const r = normalizeSplit(text, split, opts)
    if (r !== null) return r
    if (!split.guessed) break
  }
  return normalizeBlock(toArchiveLine(parseJsonExact(text)), opts)
}

/** The block normalized one transaction at a time, or null when a piece does not parse. */
function normalizeSplit(text: string, split: SplitBlock, opts: NormalizeOptions | undefined): NormalizeResult | null {
  let line
  try {
    line = toArchiveLine(parseJsonExact(split.skeleton))
  } catch {
    return null
  }
  const source = {
    count: split.spans.length / 2,
    at(i: number): RpcTransaction {
      try {
        return parseElement(text, split, i) as RpcTransaction
      } catch {
        throw PIECE_FAILED
      }
    },
  }
  try {
    return normalizeBlockFrom(line, opts, source)
  } catch (e) {
    if (e !== PIECE_FAILED) throw e
    return null
  }
}
