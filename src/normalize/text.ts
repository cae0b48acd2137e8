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
import { isAscii } from 'node:buffer'
import { parseJsonExact } from '../rpc/json.ts'
import { toArchiveLine } from '../rpc/line.ts'
import { parseElement, splitTransactions, type SplitBlock } from '../rpc/split.ts'
import { splitTransactionBytes, type ByteSplit } from '../rpc/split-bytes.ts'
import type { RpcTransaction } from '../rpc/types.ts'
import { RECORD_LISTS } from '../catalogue.ts'
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
  return textInto(text, opts, new Given(sink))
}

/**
 * `normalizeArchiveTextInto` of an archive line given as its bytes (UTF-8), which is what an import
 * worker is handed. An ASCII line (the usual one) is split into its transactions from the bytes
 * (src/rpc/split-bytes.ts) and each transaction's text made from its own bytes, so the string of
 * the whole line is never made; any other line, or one that does not split that way (a piece that
 * does not parse), is decoded whole and read as text (each record still given once).
 */
export function normalizeArchiveBytesInto(
  line: Uint8Array,
  opts: NormalizeOptions | undefined,
  sink: RecordSink,
): NormalizeResult {
  const b = Buffer.from(line.buffer, line.byteOffset, line.byteLength)
  const given = new Given(sink)
  if (isAscii(b)) {
    const split = splitTransactionBytes(b, ARCHIVE_PATH)
    if (split !== null) {
      const r = normalizeByteSplit(b, split, opts, given.attempt())
      if (r !== null) return r
    }
  }
  return textInto(b.toString('utf8'), opts, given)
}

/** the ways of reading a line's text in turn (the guessed cut, the exact one, the whole), records given through `given` */
function textInto(text: string, opts: NormalizeOptions | undefined, given: Given): NormalizeResult {
  for (const guess of [true, false]) {
    const split = splitTransactions(text, ARCHIVE_PATH, guess)
    if (split === null) break
    const r = normalizeSplit(text, split, opts, given.attempt())
    if (r !== null) return r
    if (!split.guessed) break
  }
  return normalizeBlockInto(toArchiveLine(parseJsonExact(text)), opts, null, given.attempt())
}

/** the record lists of a block */
const LIST_KEYS = RECORD_LISTS

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

/**
 * The block of an ASCII line split from its bytes, normalized one transaction at a time (each
 * parsed from a Latin-1 reading of its bytes, the same text), or null when a piece does not parse.
 */
function normalizeByteSplit(
  b: Buffer,
  split: ByteSplit,
  opts: NormalizeOptions | undefined,
  sink: RecordSink,
): NormalizeResult | null {
  const { spans } = split
  const count = spans.length / 2
  const piece = (i: number) =>
    parseJsonExact(i === count - 1 ? split.last : b.toString('latin1', spans[2 * i], spans[2 * i + 1]))
  return normalizePieces(split.skeleton, count, piece, opts, sink)
}

/** The block normalized one transaction at a time, or null when a piece does not parse. */
function normalizeSplit(
  text: string,
  split: SplitBlock,
  opts: NormalizeOptions | undefined,
  sink: RecordSink | null = null,
): NormalizeResult | null {
  return normalizePieces(split.skeleton, split.spans.length / 2, (i) => parseElement(text, split, i), opts, sink)
}

/**
 * The block of a skeleton (the line without its transactions) and `count` transactions, each
 * parsed by `piece` just before it is normalized; null when the skeleton or a piece does not parse.
 */
function normalizePieces(
  skeleton: string,
  count: number,
  piece: (i: number) => unknown,
  opts: NormalizeOptions | undefined,
  sink: RecordSink | null,
): NormalizeResult | null {
  let line
  try {
    line = toArchiveLine(parseJsonExact(skeleton))
  } catch {
    return null
  }
  const source = {
    count,
    at(i: number): RpcTransaction {
      try {
        return piece(i) as RpcTransaction
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
