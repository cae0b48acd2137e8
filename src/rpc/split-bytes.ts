/**
 * Splitting the bytes of a block text into its transactions without making the whole text a
 * string: split.ts's guessed cut, read from the bytes. For the 5-6 MB lines of a 1,500-transaction
 * block, the string of the whole line is a large object of the JavaScript heap, allocated for each
 * line and collected in full collections only, and making it from UTF-8 costs ~4 ms per line
 * (most of it the kernel mapping fresh pages); each transaction's text, a few KB, is made from
 * its bytes and dies young instead.
 *
 * The rule is split.ts's `guessElements`: elements start with the first one's opening text (its
 * `{` up to its first key's `:`), found where that text is preceded by `}`, `,` and whitespace
 * only. Such a cut is right only if every piece then parses (see there), which the caller checks.
 * The text around the array is checked exactly (`splitTransactions` on the block without its
 * transactions must find that array there, empty). The two threads that decode halves of a large
 * `getBlock` answer cut it by the same rule (src/ingest/block-cut.ts).
 *
 * Offsets are byte offsets. The text read here is ASCII, one character per byte, where it matters:
 * the keys up to the array (found in a Latin-1 reading of the first bytes), the opening text
 * (refused otherwise); callers pass ASCII lines only when the pieces are to be read as Latin-1.
 */
import { isWhitespace } from './json.ts'
import { splitTransactions, transactionsOpen, valueEnd } from './split.ts'

/** how far from the start the transactions array's `[` is looked for */
export const PREFIX_BYTES = 64 * 1024

/** The transactions array's `[`, its first element's `{`, and that element's opening text. */
export interface ArrayStart {
  open: number
  first: number
  /** `{"transaction":`: the bytes from the first element's `{` to its first key's `:` */
  opening: Buffer
}

/**
 * Where the transactions array of `b` (reached through the members in `path`, as
 * `splitTransactions`) starts, with its first element's opening text; null when there is no such
 * array within the first PREFIX_BYTES, it is empty or does not begin with an object, or the opening
 * text is not plain ASCII without a second `{` (two matches could then overlap: the rule steps over
 * them).
 */
export function arrayStart(b: Buffer, path: readonly string[]): ArrayStart | null {
  // latin1: one character per byte (indices are byte offsets); the names looked for are ASCII
  const open = transactionsOpen(b.toString('latin1', 0, Math.min(b.length, PREFIX_BYTES)), path)
  if (open < 0) return null
  let first = open + 1
  while (isWhitespace(b[first])) first++
  // the opening text: `{`, whitespace, a key without escapes, whitespace, `:` (as split.ts)
  if (b[first] !== 123) return null
  let k = first + 1
  while (isWhitespace(b[k])) k++
  if (b[k] !== 34) return null
  const q = b.indexOf(34, k + 1)
  if (q < 0) return null
  k = q + 1
  while (isWhitespace(b[k])) k++
  if (b[k] !== 58) return null
  const opening = b.subarray(first, k + 1)
  for (let i = 1; i < opening.length; i++) if (opening[i] > 126 || opening[i] === 92 || opening[i] === 123) return null
  return { open, first, opening }
}

/**
 * the first place at or after `from` where an element starts by the rule, or -1 (found by the
 * opening's first 4 bytes, then compared: `indexOf` of a 4-byte needle measured ~4x faster than of
 * the whole opening)
 */
export function nextElement(b: Buffer, opening: Buffer, from: number): number {
  const head = opening.subarray(0, 4)
  for (let at = b.indexOf(head, from); at >= 0; at = b.indexOf(head, at + 1)) {
    if (startsWith(b, at, opening) && isCut(b, at)) return at
  }
  return -1
}

function startsWith(b: Buffer, at: number, opening: Buffer): boolean {
  if (at + opening.length > b.length) return false
  for (let i = 4; i < opening.length; i++) if (b[at + i] !== opening[i]) return false
  return true
}

/** the opening text at `at` is preceded by `}`, `,` and whitespace only */
export function isCut(b: Buffer, at: number): boolean {
  let j = at - 1
  while (isWhitespace(b[j])) j--
  if (b[j] !== 44) return false
  j--
  while (isWhitespace(b[j])) j--
  return b[j] === 125
}

/** the end of the element before the one that starts at `at` (a cut): after its `}` */
export function endBefore(b: Buffer, at: number): number {
  let j = at - 1
  while (isWhitespace(b[j])) j--
  j-- // the `,` (`isCut`)
  while (isWhitespace(b[j])) j--
  return j + 1
}

/** A block's bytes split by the guessed cut: the block's text without its transactions, and each one's extent. */
export interface ByteSplit {
  /** the text with the transactions array emptied (`"transactions": []`), Latin-1 */
  skeleton: string
  /** [start0, end0, start1, end1, ...]: each element's bytes */
  spans: number[]
  /** the last element's text (read already, to find where it ends) */
  last: string
}

/**
 * The transactions of an ASCII block text (`b`; `path` as `splitTransactions`), cut by the rule
 * above: right only if every piece parses (the caller parses each, and on any failure reads the
 * text another way). The last element is measured exactly; the text around the array is checked
 * exactly. Null when the text does not have that shape.
 */
export function splitTransactionBytes(b: Buffer, path: readonly string[]): ByteSplit | null {
  const start = arrayStart(b, path)
  if (start === null) return null
  const { open, first, opening } = start
  const spans: number[] = []
  let from = first
  for (let at = nextElement(b, opening, first + 1); at >= 0; at = nextElement(b, opening, at + 1)) {
    spans.push(from, endBefore(b, at))
    from = at
  }
  // the last element, measured, then the array's `]` and the text after it
  const tail = b.toString('latin1', from, b.length)
  const end = valueEnd(tail, 0)
  if (end < 0) return null
  let close = end
  while (isWhitespace(tail.charCodeAt(close))) close++
  if (tail.charCodeAt(close) !== 93) return null
  spans.push(from, from + end)
  const prefix = b.toString('latin1', 0, open + 1)
  const skeleton = prefix + tail.slice(close)
  // the text around the array, exactly: the transactions array is the one at the junction
  const around = splitTransactions(skeleton, path)
  if (around === null || around.spans.length !== 0 || around.open !== open) return null
  return { skeleton, spans, last: tail.slice(0, end) }
}
