/**
 * Exact JSON parsing for RPC and archive input.
 *
 * `JSON.parse` turns every number into a double, so u64 values above 2^53 silently lose digits.
 * `parseJsonExact` quotes integer tokens with more than 15 significant digits (outside string
 * literals) and then lets the native `JSON.parse` do the work. Such integers therefore come out as decimal strings ("18446744073709551615"); every
 * other value is exactly what `JSON.parse` gives. Consumers convert u64 fields with `BigInt(x)`,
 * which accepts both numbers and decimal strings.
 */

/** Integers with more digits than this may not be exact as a JS number. */
const MAX_EXACT_DIGITS = 15

/**
 * Like `JSON.parse`, but integer literals that have more than 15 significant digits become decimal
 * strings (sign kept). Throws a `SyntaxError` on invalid JSON, as `JSON.parse` does.
 *
 * How: a big integer token outside strings always follows `:`, `[` or `,` (plus optional
 * whitespace) and is followed by optional whitespace and `,`, `]` or `}`. A sparse scan finds such
 * candidates (typical blocks have none or a few; some may sit inside log messages). They are
 * quoted speculatively and the result handed to JSON.parse. That parse can only succeed when every
 * candidate was outside strings: quoting a candidate inside a string literal ends the string right
 * before the digits, leaving a string token directly followed by a number token, which JSON.parse
 * always rejects (the text before it tokenizes as in the original). On failure, the string state
 * of each candidate is established exactly, by hopping from quote to quote, and the parse redone.
 */
export function parseJsonExact(text: string): unknown {
  const first = firstNonWhitespace(text, 0)
  if (first < text.length) {
    const c = text.charCodeAt(first)
    if (c === 45 || (c >= 48 && c <= 57)) return parseBareNumber(text, first)
  }
  const candidates = findCandidates(text)
  if (candidates === null) return JSON.parse(text)
  try {
    return JSON.parse(quoteTokens(text, candidates))
  } catch {
    // some candidate is inside a string (or the text is not JSON at all)
  }
  const outside = outsideStrings(text, candidates)
  return JSON.parse(outside.length > 0 ? quoteTokens(text, outside) : text)
}

function firstNonWhitespace(text: string, i: number): number {
  while (i < text.length && isWhitespace(text.charCodeAt(i))) i++
  return i
}

/** JSON whitespace (space, tab, line feed, carriage return); `undefined` (past the end of a buffer) is not */
export function isWhitespace(c: number | undefined): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13
}

/** A top-level bare number: the only number token that follows no delimiter. */
function parseBareNumber(text: string, i: number): unknown {
  let j = i
  if (text.charCodeAt(j) === 45) j++
  const d0 = j
  while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++
  if (j - d0 > MAX_EXACT_DIGITS && firstNonWhitespace(text, j) === text.length) {
    JSON.parse(text) // validates (leading zeros etc.)
    return text.slice(i, j)
  }
  return JSON.parse(text)
}

/**
 * [start0, end0, start1, end1, ...] of big-integer-looking tokens (maybe inside strings), or null:
 * maximal runs of 16 or more ASCII digits, with an optional `-` before them, preceded by optional
 * whitespace and `:`, `[` or `,`, and followed by optional whitespace and `,`, `]` or `}`.
 *
 * Every 16th character is looked at: a run of 16 digits always covers one of them, and most
 * characters are never read (a regular expression with the same meaning reads every one of them
 * and costs about a third of `JSON.parse` on block text; this about a tenth).
 */
export function findCandidates(text: string): number[] | null {
  const n = text.length
  let found: number[] | null = null
  let i = MAX_EXACT_DIGITS
  while (i < n) {
    // a run of 16 digits through i also holds i - 8 or i + 8 (it cannot end before both)
    if (
      !isDigit(text.charCodeAt(i)) ||
      (!(i >= 8 && isDigit(text.charCodeAt(i - 8))) && !(i + 8 < n && isDigit(text.charCodeAt(i + 8))))
    ) {
      i += MAX_EXACT_DIGITS + 1
      continue
    }
    let a = i
    while (a > 0 && isDigit(text.charCodeAt(a - 1))) a--
    let b = i + 1
    while (b < n && isDigit(text.charCodeAt(b))) b++
    // b is past the run: any later run of 16 digits starts at b + 1 or after, so it covers b + 16
    if (b - a > MAX_EXACT_DIGITS && isNumberToken(text, a, b)) {
      if (found === null) found = []
      found.push(a > 0 && text.charCodeAt(a - 1) === 45 /* - */ ? a - 1 : a, b)
    }
    i = b + MAX_EXACT_DIGITS + 1
  }
  return found
}

function isDigit(c: number): boolean {
  return (c - 48) >>> 0 <= 9 // callers stay inside the text (NaN would pass)
}

/**
 * `JSON.parse` of `text.slice(start, end)`, with quotes around the tokens at `positions`
 * (absolute [start0, end0, ...], inside the range, known to lie outside string literals: from
 * `bigIntegerAt`). The same value as `parseJsonExact` of that slice.
 */
export function parseJsonQuoting(text: string, start: number, end: number, positions: readonly number[]): unknown {
  if (positions.length === 0) return JSON.parse(text.slice(start, end))
  const parts: string[] = []
  let last = start
  for (let k = 0; k < positions.length; k += 2) {
    parts.push(text.slice(last, positions[k]), '"', text.slice(positions[k], positions[k + 1]), '"')
    last = positions[k + 1]
  }
  parts.push(text.slice(last, end))
  return JSON.parse(parts.join(''))
}

/**
 * For a run of digits [a, b) outside string literals: when it is a big-integer token that
 * `parseJsonExact` turns into a string (more than 15 digits, delimiters around it), the token's
 * start (its `-` included); else -1.
 */
export function bigIntegerAt(text: string, a: number, b: number): number {
  if (b - a <= MAX_EXACT_DIGITS || !isNumberToken(text, a, b)) return -1
  return a > 0 && text.charCodeAt(a - 1) === 45 /* - */ ? a - 1 : a
}

/** Is the digit run [a, b) (maybe after a `-`) between a `:[,` and a `,]}`, whitespace aside? */
function isNumberToken(text: string, a: number, b: number): boolean {
  let j = a - 1
  if (j >= 0 && text.charCodeAt(j) === 45 /* - */) j--
  while (j >= 0 && isWhitespace(text.charCodeAt(j))) j--
  if (j < 0) return false
  const before = text.charCodeAt(j)
  if (before !== 58 /* : */ && before !== 91 /* [ */ && before !== 44 /* , */) return false
  const k = firstNonWhitespace(text, b)
  if (k >= text.length) return false
  const after = text.charCodeAt(k)
  return after === 44 /* , */ || after === 93 /* ] */ || after === 125 /* } */
}

/**
 * The candidates that lie outside string literals (exact: quote hopping from `from`, a position
 * outside strings, to the candidates, which lie after it).
 */
export function outsideStrings(text: string, candidates: readonly number[], from = 0): number[] {
  const out: number[] = []
  let pos = from // the string state is known up to here
  let inString = false
  for (let k = 0; k < candidates.length; k += 2) {
    const at = candidates[k]
    for (;;) {
      const q = text.indexOf('"', pos)
      if (q < 0 || q >= at) break
      if (inString) {
        let b = q - 1
        while (text.charCodeAt(b) === 92 /* \ */) b--
        if ((q - 1 - b) % 2 === 1) {
          pos = q + 1 // an escaped quote
          continue
        }
      }
      inString = !inString
      pos = q + 1
    }
    if (!inString) out.push(at, candidates[k + 1])
  }
  return out
}

/** The text with quotes around the tokens at `positions`, as one flat string. */
function quoteTokens(text: string, positions: number[]): string {
  // joined, not concatenated: JSON.parse reads a flat string markedly faster than a rope of slices
  const parts: string[] = []
  let last = 0
  for (let k = 0; k < positions.length; k += 2) {
    parts.push(text.slice(last, positions[k]), '"', text.slice(positions[k], positions[k + 1]), '"')
    last = positions[k + 1]
  }
  parts.push(text.slice(last))
  return parts.join('')
}

/**
 * Like `JSON.stringify` for plain data, but `bigint` values are written as bare exact integers.
 * `undefined` members are left out, as JSON.stringify does; non-finite numbers become null.
 * Under a member named in `numericKeys` (at any depth, arrays included), decimal strings are
 * written as bare integers too (u64 values that `parseJsonExact` turned into strings).
 */
export function stringifyExact(value: unknown, numericKeys?: ReadonlySet<string>): string {
  const parts: string[] = []
  writeValue(value, parts, false, numericKeys)
  return parts.join('')
}

const DECIMAL = /^-?\d+$/

function writeValue(v: unknown, out: string[], numeric: boolean, keys: ReadonlySet<string> | undefined): void {
  switch (typeof v) {
    case 'string':
      out.push(numeric && DECIMAL.test(v) ? v : JSON.stringify(v))
      return
    case 'number':
      out.push(Number.isFinite(v) ? String(v) : 'null')
      return
    case 'bigint':
      out.push(v.toString())
      return
    case 'boolean':
      out.push(v ? 'true' : 'false')
      return
    case 'object':
      if (v === null) {
        out.push('null')
        return
      }
      if (Array.isArray(v)) {
        out.push('[')
        for (let i = 0; i < v.length; i++) {
          if (i > 0) out.push(',')
          const x = v[i]
          if (x === undefined || typeof x === 'function' || typeof x === 'symbol') out.push('null')
          else writeValue(x, out, numeric, keys)
        }
        out.push(']')
        return
      }
      {
        out.push('{')
        let first = true
        for (const k in v) {
          if (!Object.prototype.hasOwnProperty.call(v, k)) continue
          const x = (v as Record<string, unknown>)[k]
          if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue
          if (!first) out.push(',')
          first = false
          out.push(JSON.stringify(k), ':')
          writeValue(x, out, keys?.has(k) ?? false, keys)
        }
        out.push('}')
      }
      return
    default:
      out.push('null')
  }
}
