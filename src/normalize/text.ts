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
import type { Block } from '../model.ts'
import {
  normalizeBlock,
  normalizeBlockFrom,
  normalizeBlockInto,
  type NormalizeOptions,
  type NormalizeResult,
  type RecordSink,
} from './normalize.ts'

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

/**
 * `normalizeArchiveText`, with the records given to `sink` a slice of transactions at a time as
 * they are made (normalize.ts `normalizeBlockInto`): the result's block has the header and empty
 * lists. When a piece fails after slices were given, the next way of reading the text makes the
 * same records for the same transactions, and gives only those after the ones already given:
 * each record reaches `sink` exactly once, in order. On an exception (a bad line) some of the
 * block's slices may have been given.
 */
export function normalizeArchiveTextInto(
  text: string,
  opts: NormalizeOptions | undefined,
  sink: RecordSink,
): NormalizeResult {
  const given = new Given(sink)
  for (const guess of [true, false]) {
    const split = splitTransactions(text, ARCHIVE_PATH, guess)
    if (split === null) break
    const r = normalizeSplit(text, split, opts, given.attempt())
    if (r !== null) return r
    if (!split.guessed) break
  }
  return normalizeBlockInto(toArchiveLine(parseJsonExact(text)), opts, null, given.attempt())
}

const LIST_KEYS = ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const

/** the records given to a sink so far, over the attempts at reading one block */
class Given {
  private readonly counts = LIST_KEYS.map(() => 0)

  constructor(private readonly sink: RecordSink) {}

  /** the sink of the next attempt: its slices given on without the records already given */
  attempt(): RecordSink {
    const seen = LIST_KEYS.map(() => 0)
    const { counts, sink } = this
    return {
      every: sink.every,
      take(slice: Block): void {
        let part = slice
        for (let k = 0; k < LIST_KEYS.length; k++) {
          const key = LIST_KEYS[k]
          const list = slice[key]
          const skip = counts[k] - seen[k]
          seen[k] += list.length
          if (skip <= 0) {
            counts[k] = seen[k]
            continue
          }
          if (part === slice) part = { ...slice }
          ;(part[key] as unknown[]) = list.slice(skip)
          if (seen[k] > counts[k]) counts[k] = seen[k]
        }
        sink.take(part)
      },
    }
  }
}

/** The block normalized one transaction at a time, or null when a piece does not parse. */
function normalizeSplit(
  text: string,
  split: SplitBlock,
  opts: NormalizeOptions | undefined,
  sink: RecordSink | null = null,
): NormalizeResult | null {
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
    return sink === null ? normalizeBlockFrom(line, opts, source) : normalizeBlockInto(line, opts, source, sink)
  } catch (e) {
    if (e !== PIECE_FAILED) throw e
    return null
  }
}
