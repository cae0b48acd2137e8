/**
 * Splitting the JSON text of a block into its transactions without parsing them.
 *
 * Parsing a whole block with `JSON.parse` builds every transaction's object tree at once: the
 * tree (tens of MB for a mainnet block) outlives several young-generation collections while the
 * block is normalized, so the collector copies and promotes all of it. Parsing one transaction at
 * a time keeps each tree short-lived (it dies young, where collecting it costs nothing), which
 * measured ~30 % less CPU for parse + normalize of whole mainnet blocks.
 *
 * `splitTransactions` reads only the structure of the outer objects (keys and the extent of each
 * value: strings are skipped with `indexOf`, nested containers by counting brackets outside
 * strings). It checks the separators it walks over and gives up (null) on anything unexpected,
 * so the caller falls back to parsing the whole text; validity of the pieces themselves is left to
 * the parser of each piece.
 */

/** The pieces of a block text: the text without the transactions, and each transaction's span. */
export interface SplitBlock {
  /** the text with the transactions array emptied (`"transactions": []`) */
  skeleton: string
  /** [start0, end0, start1, end1, ...]: each element of the transactions array */
  spans: number[]
  /**
   * per element: the big-integer tokens in it ([start, end, ...], see `bigIntegerAt`), or null
   * when the element is not an object or array (then parse it with `parseJsonExact`); when
   * `guessed`, the tokens that look like big integers, some maybe inside strings
   */
  bigInts: (number[] | null)[]
  /**
   * true when the elements were cut by `splitTransactions(text, path, true)`'s guess: the spans
   * are the elements only if every one of them parses (see there)
   */
  guessed: boolean
  /** the index of the transactions array's `[` in the text */
  open: number
}

/** The value of one element of a split block, exact integers (`parseJsonExact` of its text). */
export function parseElement(text: string, split: SplitBlock, i: number): unknown {
  const start = split.spans[2 * i]
  const end = split.spans[2 * i + 1]
  const big = split.bigInts[i]
  if (big === null) return parseJsonExact(text.slice(start, end))
  if (!split.guessed || big.length === 0) return parseJsonQuoting(text, start, end, big)
  // guessed: big-integer-looking tokens, maybe inside strings (as in `parseJsonExact`)
  try {
    return parseJsonQuoting(text, start, end, big)
  } catch {
    return parseJsonQuoting(text, start, end, outsideStrings(text, big, start))
  }
}

/**
 * Finds the `transactions` array of the object reached from the top-level object through the
 * members named in `path` (`['block']` for an archive line, `[]` for a bare getBlock result,
 * `['result']` for a JSON-RPC response) and returns the text of every element. Null when the text
 * does not have that shape (no such array, a key met twice on the way, anything the scan does not
 * expect): the caller then parses the whole text, which also reports any syntax error.
 *
 * `guess`: the elements are cut without reading them (`guessElements`), which is several times
 * cheaper than counting brackets through them, but right only when every element then parses:
 * for callers that parse every element and, when one fails, split again without `guess`
 * (`guessed` is set on such a split).
 */
export function splitTransactions(text: string, path: readonly string[], guess = false): SplitBlock | null {
  const s = new Scanner(text, guess)
  try {
    return s.top(path)
  } catch (e) {
    if (e === GIVE_UP) return null
    throw e
  }
}

/**
 * The index of the `[` of the `transactions` array that `splitTransactions(text, path)` would
 * find, read from the start of the text up to that `[` only (the keys and values before it are
 * walked as there; the text may end anywhere after it), or -1. What follows the `[` is not
 * looked at: a repeated key after it, or a text that is not JSON after it, is for the caller to
 * find (src/ingest/block-cut.ts checks the text around the array with `splitTransactions`).
 */
export function transactionsOpen(text: string, path: readonly string[]): number {
  const s = new Scanner(text, false, true)
  try {
    s.top(path)
  } catch (e) {
    if (e instanceof Opened) return e.open
    if (e === GIVE_UP) return -1
    throw e
  }
  return -1
}

/**
 * The elements of a text that begins with elements of an array of objects cut by the guess of
 * `splitTransactions(text, path, true)` (`guessElements`: the cut is right only if every element
 * parses), from index 0: their spans and big-integer-looking tokens, and the index after the last
 * one (measured exactly); null when the text does not begin with such an object.
 */
export function guessCut(text: string): { spans: number[]; bigInts: (number[] | null)[]; end: number } | null {
  const spans: number[] = []
  const bigInts: (number[] | null)[] = []
  const end = guessElements(text, 0, spans, bigInts)
  return end < 0 ? null : { spans, bigInts, end }
}

/** the index after the object or array that opens at `start` (strings skipped), or -1 */
export function valueEnd(text: string, start: number): number {
  return containerEnd(text, start, null)
}

import { bigIntegerAt, findCandidates, isWhitespace, outsideStrings, parseJsonExact, parseJsonQuoting } from './json.ts'

class Opened {
  constructor(readonly open: number) {}
}

const GIVE_UP = new Error('not the expected shape')
const NO_BIG_INTS: number[] = []

interface Found {
  /** positions of the array's `[` and `]` */
  open: number
  close: number
  spans: number[]
  bigInts: (number[] | null)[]
}

class Scanner {
  private i = 0

  constructor(
    private readonly text: string,
    private readonly guess: boolean,
    /** stop at the array's `[` (throwing `Opened`): the text may end anywhere after it */
    private readonly stop = false,
  ) {}

  private guessedSplit = false

  private fail(): never {
    throw GIVE_UP
  }

  private ws(): void {
    const t = this.text
    let i = this.i
    for (;;) {
      const c = t.charCodeAt(i)
      if (isWhitespace(c)) i++
      else break
    }
    this.i = i
  }

  /** at a `"`: moves past the string; returns its end (the closing quote's index + 1) */
  private skipString(): number {
    const t = this.text
    let q = this.i
    for (;;) {
      q = t.indexOf('"', q + 1)
      if (q < 0) this.fail()
      let b = q - 1
      while (t.charCodeAt(b) === 92 /* \ */) b--
      if ((q - 1 - b) % 2 === 0) break // not escaped
    }
    this.i = q + 1
    return this.i
  }

  /** a key at `"`: its value as JSON.parse would give it */
  private key(): string {
    const start = this.i
    const end = this.skipString()
    const raw = this.text.slice(start + 1, end - 1)
    if (raw.indexOf('\\') < 0) return raw
    try {
      return JSON.parse(this.text.slice(start, end)) as string
    } catch {
      // not a valid string: the whole parse reports it (with its position in the whole text)
      this.fail()
    }
  }

  /** moves past one value (any JSON value; not validated beyond its extent) */
  private skipValue(): void {
    const t = this.text
    const c = t.charCodeAt(this.i)
    if (c === 34) {
      this.skipString()
      return
    }
    if (c === 123 || c === 91) {
      const end = containerEnd(t, this.i, null)
      if (end < 0) this.fail()
      this.i = end
      return
    }
    // a number or a literal: up to the next delimiter
    let i = this.i
    const n = t.length
    while (i < n) {
      const d = t.charCodeAt(i)
      if (d === 44 || d === 93 || d === 125 || d === 32 || d === 10 || d === 13 || d === 9) break
      i++
    }
    if (i === this.i) this.fail()
    this.i = i
  }

  top(path: readonly string[]): SplitBlock | null {
    this.ws()
    const found = this.object(path, 0)
    this.ws()
    if (found === null || this.i !== this.text.length) return null
    const t = this.text
    return {
      skeleton: t.slice(0, found.open + 1) + t.slice(found.close),
      spans: found.spans,
      bigInts: found.bigInts,
      guessed: this.guessedSplit,
      open: found.open,
    }
  }

  /**
   * Walks one object; follows `path[level]`, or at the end of the path, records the
   * `transactions` array. Returns the array's `[` and `]` positions and the element spans.
   */
  private object(path: readonly string[], level: number): Found | null {
    const t = this.text
    if (t.charCodeAt(this.i) !== 123) this.fail()
    this.i++
    const want = level < path.length ? path[level] : 'transactions'
    let found: Found | null = null
    let seen = false
    this.ws()
    if (t.charCodeAt(this.i) === 125) {
      this.i++
      return null
    }
    for (;;) {
      this.ws()
      if (t.charCodeAt(this.i) !== 34) this.fail()
      const k = this.key()
      this.ws()
      if (t.charCodeAt(this.i) !== 58) this.fail()
      this.i++
      this.ws()
      if (k === want) {
        if (seen) this.fail() // a repeated key: the last one wins in JSON.parse; not worth following
        seen = true
        const c = t.charCodeAt(this.i)
        if (level < path.length) {
          if (c === 123) found = this.object(path, level + 1)
          else this.skipValue()
        } else if (c === 91) found = this.array()
        else this.skipValue()
      } else this.skipValue()
      this.ws()
      const d = t.charCodeAt(this.i++)
      if (d === 44) continue
      if (d === 125) return found
      this.fail()
    }
  }

  private array(): Found {
    const t = this.text
    const open = this.i
    if (this.stop) throw new Opened(open)
    this.i++
    const spans: number[] = []
    const bigInts: (number[] | null)[] = []
    const big: number[] = []
    this.ws()
    if (t.charCodeAt(this.i) === 93) {
      this.i++
      return { open, close: this.i - 1, spans, bigInts }
    }
    if (this.guess) {
      const end = guessElements(t, this.i, spans, bigInts)
      if (end >= 0) {
        this.guessedSplit = true
        this.i = end
        this.ws()
        if (t.charCodeAt(this.i) !== 93) this.fail()
        this.i++
        return { open, close: this.i - 1, spans, bigInts }
      }
      spans.length = 0
      bigInts.length = 0
    }
    for (;;) {
      this.ws()
      const start = this.i
      const c = t.charCodeAt(start)
      if (c === 123 || c === 91) {
        big.length = 0
        const end = containerEnd(t, start, big)
        if (end < 0) this.fail()
        this.i = end
        bigInts.push(big.length === 0 ? NO_BIG_INTS : big.slice())
      } else {
        this.skipValue()
        bigInts.push(null)
      }
      spans.push(start, this.i)
      this.ws()
      const d = t.charCodeAt(this.i++)
      if (d === 44) continue
      if (d === 93) return { open, close: this.i - 1, spans, bigInts }
      this.fail()
    }
  }
}

/**
 * Cuts the elements of an array of objects that all begin with the same key, as the transactions
 * of a block do (`{"transaction":` or `{"meta":`, written alike by one producer), starting at the
 * first element (`start`, at its `{`): each further element is looked for with `indexOf` of the
 * first element's opening text up to its first `:`, preceded by `}`, `,` and whitespace only;
 * the last one is measured exactly (`containerEnd`). Pushes [start, end] per element to `spans`
 * and the big-integer-looking tokens in it to `bigInts` (`findCandidates` of the whole text, which
 * reads one character in 16); returns the index after the last element, or -1 (not such an
 * array).
 *
 * A cut found that way may lie inside a string or a nested value (a log message quoting that
 * text). Then the piece before it does not parse: read from the true start of an element, JSON
 * tokenizes the piece exactly as the whole text, so it ends inside a string or with an unclosed
 * bracket. Conversely, when every piece parses, each one ends where its element ends and the next
 * starts where the next element starts (by induction from the first): the spans are exact.
 */
function guessElements(t: string, start: number, spans: number[], bigInts: (number[] | null)[]): number {
  if (t.charCodeAt(start) !== 123) return -1
  let k = start + 1
  while (isWhitespace(t.charCodeAt(k))) k++
  if (t.charCodeAt(k) !== 34) return -1
  const q = t.indexOf('"', k + 1)
  if (q < 0 || t.slice(k, q).includes('\\')) return -1
  k = q + 1
  while (isWhitespace(t.charCodeAt(k))) k++
  if (t.charCodeAt(k) !== 58) return -1
  const opening = t.slice(start, k + 1)
  const cands = findCandidates(t) ?? NO_BIG_INTS
  let c = 0
  const bigIn = (a: number, b: number): number[] => {
    while (c < cands.length && cands[c] < a) c += 2
    if (c >= cands.length || cands[c] >= b) return NO_BIG_INTS
    const out: number[] = []
    for (; c < cands.length && cands[c] < b; c += 2) out.push(cands[c], cands[c + 1])
    return out
  }
  let from = start
  let at = t.indexOf(opening, start + opening.length)
  while (at >= 0) {
    // the previous element ends at the `}` before `,` (whitespace aside)
    let j = at - 1
    while (isWhitespace(t.charCodeAt(j))) j--
    if (t.charCodeAt(j) === 44) {
      j--
      while (isWhitespace(t.charCodeAt(j))) j--
      if (t.charCodeAt(j) === 125 && j > from) {
        spans.push(from, j + 1)
        bigInts.push(bigIn(from, j + 1))
        from = at
      }
    }
    at = t.indexOf(opening, at + opening.length)
  }
  const end = containerEnd(t, from, null)
  if (end < 0) return -1
  spans.push(from, end)
  bigInts.push(bigIn(from, end))
  return end
}

/** Character classes for containerEnd: 0 nothing to do, 1 opens, 2 closes, 3 a quote, 4 a digit. */
const CLASS = new Uint8Array(128)
CLASS[123] = CLASS[91] = 1
CLASS[125] = CLASS[93] = 2
CLASS[34] = 3
for (let c = 48; c <= 57; c++) CLASS[c] = 4

/**
 * The index after the container (object or array) that opens at `start`, counting brackets
 * outside strings; -1 when the text ends first. Strings are skipped from quote to quote. When
 * `big` is given, the big-integer tokens met (outside strings, so exactly those that
 * `parseJsonExact` quotes) are appended to it as [start, end] pairs.
 */
function containerEnd(t: string, start: number, big: number[] | null): number {
  const n = t.length
  let depth = 0
  let i = start
  while (i < n) {
    const c = t.charCodeAt(i++)
    const k = c < 128 ? CLASS[c] : 0
    if (k === 0) continue
    if (k === 1) depth++
    else if (k === 2) {
      if (--depth === 0) return i
    } else if (k === 4) {
      const a = i - 1
      while (i < n && CLASS[t.charCodeAt(i)] === 4) i++
      if (big !== null && i - a > 15) {
        const s = bigIntegerAt(t, a, i)
        if (s >= 0) big.push(s, i)
      }
    } else {
      // a string: to its closing quote (one not preceded by an odd number of backslashes)
      for (;;) {
        const q = t.indexOf('"', i)
        if (q < 0) return -1
        let b = q - 1
        while (t.charCodeAt(b) === 92) b--
        i = q + 1
        if ((q - 1 - b) % 2 === 0) break
      }
    }
  }
  return -1
}
