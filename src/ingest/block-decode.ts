/**
 * A node's `getBlock` answer, from the bytes of the HTTP body to a normalized block, in one step
 * that runs in a worker thread (block-workers.ts) or, without workers, in the calling thread.
 *
 * `decodeBlockAnswer` parses the JSON-RPC envelope with exact u64 values, applies the shape check
 * (`checkBlockShape`), normalizes the block and checks that every transaction of the answer is in
 * the result (only vote transactions may be left out). Its result keeps the envelope's form so
 * that the RPC client classifies errors as for any call: `{ error }` for a JSON-RPC error,
 * `{ result: null }` for a null result, else `{ result: DecodedBlock }`; bytes that are not JSON
 * throw (the client takes them for a truncated answer and retries).
 */
import { isAscii } from 'node:buffer'
import type { Block, NormalizationWarning } from '../model.ts'
import {
  isVoteTransaction,
  normalizeBlock,
  normalizeBlockFrom,
  type TransactionSource,
} from '../normalize/normalize.ts'
import { isWhitespace, parseJsonExact } from '../rpc/json.ts'
import { guessCut, parseElement, splitTransactions, valueEnd, type SplitBlock } from '../rpc/split.ts'
import { elementsBefore, endBeforeCut, locateCut, type Cut } from './block-cut.ts'
import type { RpcBlock, RpcTransaction } from '../rpc/types.ts'
import { packBlock, type PackedBlock } from '../store/packed-block.ts'
import { checkBlockShape, checkTransactionShape } from './rpc/shape.ts'
import { wallNow } from '../util/wall-clock.ts'

export interface NormalizeOptions {
  includeVotes?: boolean
}

/**
 * a decoded block answer: the intact normalized block (packed when decoded in a worker thread,
 * src/store/packed-block.ts), or what is wrong with the answer
 */
export type DecodedBlock =
  | {
      kind: 'normalized'
      block: Block | PackedBlock
      warnings: NormalizationWarning[]
      marks?: DecodeMarks
      /**
       * set when this is one part of the block (`DecodePart`), not the whole block: with the
       * positions [from, to) of its transactions in the block
       */
      part?: DecodePart & { from: number; to: number }
    }
  | { kind: 'malformed'; problem: string }

/**
 * Part `index` of `of`: the transactions at positions [⌊count·index/of⌋, ⌊count·(index+1)/of⌋)
 * of the answer's `count`, the rewards in the last part; every part has the block's header
 * (block-join.ts puts the packed parts together; src/store/packed-block.ts reads them as one block).
 */
export interface DecodePart {
  index: number
  of: number
}

/**
 * When each step of decoding one answer ended, as wall-clock ms (`wallNow()`, comparable across
 * threads): the worker taking the answer, parsing, normalizing, packing, posting the result, and
 * the main thread receiving it. For the stage breakdown of bench/tail.bench.ts.
 */
export interface DecodeMarks {
  start?: number
  parsed?: number
  normalized?: number
  packed?: number
  sent?: number
  received?: number
  /**
   * the decoding thread from taking the answer to posting the result: ms it ran on a core, ms it
   * waited for one (src/util/thread-clock.ts), ms of its garbage collection (in the run)
   */
  run?: number
  wait?: number
  gc?: number
  /**
   * the decoding thread's collections of its young generation between the previous answer and
   * this one (block-worker.ts), and their ms
   */
  idleCollections?: number
  idleGc?: number
}

/** the JSON-RPC envelope with the result decoded */
export interface DecodedEnvelope {
  result?: DecodedBlock | null
  error?: { code: number; message: string; data?: unknown }
}

export type NormalizeFn = (line: { slot: number; block: RpcBlock }) => {
  block: Block
  warnings: NormalizationWarning[]
}

/**
 * The normalized block of a shape-checked answer, only if it is intact: normalizing did not throw
 * and every transaction of the answer is in the result (only vote transactions may be left out).
 */
export function normalizeIntact(
  slot: number,
  answer: RpcBlock,
  normalize: NormalizeFn,
): { kind: 'normalized'; block: Block; warnings: NormalizationWarning[] } | { kind: 'malformed'; problem: string } {
  try {
    const r = normalize({ slot, block: answer })
    const missing = missingTransactions(answer, r.block)
    if (missing === null) return { kind: 'normalized', block: r.block, warnings: r.warnings }
    return { kind: 'malformed', problem: missing }
  } catch (e) {
    return { kind: 'malformed', problem: `normalization failed: ${(e as Error).message}` }
  }
}

/**
 * parse, shape-check and normalize the body of a full `getBlock` answer for `slot`; `pack`: the
 * normalized block is packed into one buffer (to be transferred to another thread).
 *
 * The answer's text is first split into its transactions (src/rpc/split.ts): the rest is parsed,
 * then each transaction is parsed, shape-checked and normalized one at a time, so that no
 * block-sized object tree lives (~20 % less CPU than parsing the whole answer for a
 * 1,500-transaction block: less garbage collection). Anything unusual on that path (the text does
 * not split, a piece does not parse, a shape problem, normalization throws, an envelope without a
 * block) sends the whole text through the plain path, which gives the answer its exact meaning.
 *
 * `part` (of 2, the two threads of a large answer): the part is decoded from its half of the
 * bytes only, both parts cutting them at the same place (`decodeCut`, block-cut.ts); a part that
 * cannot be sure of its half decodes the whole answer as above (without `part` in the result).
 */
export function decodeBlockAnswer(
  bytes: Uint8Array,
  slot: number,
  opts: NormalizeOptions = {},
  pack = false,
  marks?: DecodeMarks,
  part?: DecodePart,
): DecodedEnvelope {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const cut = part?.of === 2 ? locateCut(b, ANSWER_PATH) : null
  let r: DecodedEnvelope | null = cut && part ? decodeCut(b, cut, part, slot, opts, marks) : null
  if (r === null) {
    // no cut (both threads find that alike): the part the exact way; a part whose side failed its
    // checks: the whole answer, which the join takes (block-cut.ts)
    const text = b.toString('utf8')
    r = decodeSplit(text, slot, opts, marks, cut ? undefined : part) ?? decodeWhole(text, slot, opts, marks)
  }
  if (r.result?.kind !== 'normalized' || !pack) return r
  const block = packBlock(r.result.block as Block)
  if (marks) marks.packed = wallNow()
  return { result: { ...r.result, block, marks } }
}

function decodeWhole(text: string, slot: number, opts: NormalizeOptions, marks?: DecodeMarks): DecodedEnvelope {
  const body = parseJsonExact(text) as { result?: unknown; error?: DecodedEnvelope['error'] } | null
  if (marks) marks.parsed = wallNow()
  if (!body || typeof body !== 'object') return body as unknown as DecodedEnvelope
  if (body.error || !('result' in body)) return body as DecodedEnvelope
  if (body.result === null) return { result: null }
  const problem = checkBlockShape(body.result)
  if (problem !== null) return { result: { kind: 'malformed', problem } }
  const r = normalizeIntact(slot, body.result as RpcBlock, (l) => normalizeBlock(l, opts))
  if (marks) marks.normalized = wallNow()
  return { result: r }
}

const ANSWER_PATH: readonly string[] = ['result']
/** the split path gives up: the plain path decodes the whole text */
const GIVE_UP = new Error('decode the whole answer')

/**
 * the intact normalized block (or `part` of it) of an answer decoded transaction by transaction,
 * or null: use the plain path (which decodes the whole block, also when a part was asked for)
 */
function decodeSplit(
  text: string,
  slot: number,
  opts: NormalizeOptions,
  marks?: DecodeMarks,
  part?: DecodePart,
  exact = false,
): DecodedEnvelope | null {
  // the guessed cut (src/rpc/split.ts) is checked by parsing every element: not for a part
  const split = splitTransactions(text, ANSWER_PATH, !exact && part === undefined)
  if (split === null) return null
  // the header and rewards (the transactions are checked one by one below)
  const result = skeletonBlock(split.skeleton)
  if (result === null) return null
  if (marks) marks.parsed = wallNow()
  const count = split.spans.length / 2
  const votes = new Uint8Array(count)
  let unparsed = false
  const source: TransactionSource = {
    count,
    at(i: number): RpcTransaction {
      let tx: RpcTransaction
      try {
        tx = parseElement(text, split, i) as RpcTransaction
      } catch {
        unparsed = true
        throw GIVE_UP
      }
      if (checkTransactionShape(tx, i) !== null) throw GIVE_UP
      if (isVoteTransaction(tx)) votes[i] = 1
      return tx
    },
  }
  const from = part ? Math.floor((count * part.index) / part.of) : 0
  const to = part ? Math.floor((count * (part.index + 1)) / part.of) : count
  const range = part ? { from, to, rewards: part.index === part.of - 1 } : undefined
  let r: ReturnType<typeof normalizeBlock>
  try {
    r = normalizeBlockFrom({ slot, block: result }, opts, source, range)
  } catch {
    // a guessed cut that did not parse: cut exactly
    return unparsed && split.guessed ? decodeSplit(text, slot, opts, marks, part, true) : null
  }
  if (marks) marks.normalized = wallNow()
  if (missingOf(count, (i) => votes[i] === 1 || i < from || i >= to, r.block) !== null) return null
  // the parts' warnings are their transactions' and the last part's rewards' (the header, which
  // passed the shape check, warns of nothing): in order, they are the whole block's
  return {
    result: {
      kind: 'normalized',
      block: r.block,
      warnings: r.warnings,
      ...(part ? { part: { ...part, from, to } } : {}),
    },
  }
}

/**
 * Part `part.index` (of 2) of an answer cut at `c` (block-cut.ts), decoded from its own bytes only,
 * or null when any of its checks fails (then this thread decodes the whole answer).
 */
function decodeCut(
  b: Buffer,
  c: Cut,
  part: DecodePart,
  slot: number,
  opts: NormalizeOptions,
  marks?: DecodeMarks,
): DecodedEnvelope | null {
  const second = part.index === 1
  // this part's elements, and the text after the array (from the last element, in part 0)
  const side = second ? textOf(b, c.cut, b.length) : textOf(b, c.first, endBeforeCut(b, c))
  const cut = guessCut(side)
  if (cut === null || (!second && cut.end !== side.length)) return null
  const tail = second ? side : textOf(b, c.last, b.length)
  let close = second ? cut.end : valueEnd(tail, 0)
  if (close < 0) return null
  while (isWhitespace(tail.charCodeAt(close))) close++
  if (tail.charCodeAt(close) !== 93) return null
  const prefix = textOf(b, 0, c.open + 1)
  const skeleton = prefix + tail.slice(close)
  // the text around the array, exactly: the transactions array is the one at the junction
  const around = splitTransactions(skeleton, ANSWER_PATH)
  if (around === null || around.spans.length !== 0 || around.open !== prefix.length - 1) return null
  const result = skeletonBlock(skeleton)
  if (result === null) return null
  if (marks) marks.parsed = wallNow()
  const n = cut.spans.length / 2
  const from = second ? elementsBefore(b, c) : 0
  const to = from + n
  const split: SplitBlock = { skeleton: '', spans: cut.spans, bigInts: cut.bigInts, guessed: true, open: -1 }
  const votes = new Uint8Array(to)
  const source: TransactionSource = {
    count: to,
    at(i: number): RpcTransaction {
      const tx = parseElement(side, split, i - from) as RpcTransaction
      if (checkTransactionShape(tx, i) !== null) throw GIVE_UP
      if (isVoteTransaction(tx)) votes[i] = 1
      return tx
    },
  }
  let r: ReturnType<typeof normalizeBlock>
  try {
    r = normalizeBlockFrom({ slot, block: result }, opts, source, { from, to, rewards: second })
  } catch {
    return null
  }
  if (marks) marks.normalized = wallNow()
  if (missingOf(to, (i) => votes[i] === 1 || i < from, r.block) !== null) return null
  return { result: { kind: 'normalized', block: r.block, warnings: r.warnings, part: { ...part, from, to } } }
}

/**
 * The block of an answer's text without its transactions (a split's skeleton): the envelope
 * parsed with exact integers, a result and no error, the header and rewards shape-checked; null
 * otherwise (the caller then takes the plain path).
 */
function skeletonBlock(skeleton: string): RpcBlock | null {
  let body: { result?: unknown; error?: unknown } | null
  try {
    body = parseJsonExact(skeleton) as typeof body
  } catch {
    return null
  }
  if (!body || typeof body !== 'object' || body.error || !body.result) return null
  return checkBlockShape(body.result) === null ? (body.result as RpcBlock) : null
}

/** the text of bytes [start, end): ASCII ones (the usual answer) copied as they are, faster than UTF-8 */
function textOf(b: Buffer, start: number, end: number): string {
  return b.toString(isAscii(b.subarray(start, end)) ? 'latin1' : 'utf8', start, end)
}

/**
 * null when every transaction of the answer is in the normalized block (vote transactions may
 * be left out), else what is missing. Transactions keep their position as `transactionIndex`.
 */
export function missingTransactions(answer: RpcBlock, block: Block): string | null {
  const txs = answer.transactions ?? []
  return missingOf(txs.length, (i) => isVoteTransaction(txs[i]), block)
}

/** `missingTransactions` of an answer of `count` transactions, `isVote(i)` telling the votes */
export function missingOf(count: number, isVote: (i: number) => boolean, block: Block): string | null {
  const kept = new Set<number>()
  for (const t of block.transactions) kept.add(t.transactionIndex)
  let missing = 0
  let first = -1
  for (let i = 0; i < count; i++) {
    if (kept.has(i) || isVote(i)) continue
    if (first < 0) first = i
    missing++
  }
  if (missing === 0) return null
  return `${missing} of ${count} transactions could not be normalized (first: ${first})`
}
