/**
 * Exact JSON parsing for RPC and archive input.
 *
 * `JSON.parse` turns every number into a double, so u64 values above 2^53 silently lose digits.
 * `parseJsonExact` first scans the text (honouring string literals and their escapes) for integer
 * tokens with more than 15 significant digits, quotes them, and then lets the native `JSON.parse`
 * do the work. Such integers therefore come out as decimal strings ("18446744073709551615"); every
 * other value is exactly what `JSON.parse` gives. Consumers convert u64 fields with `BigInt(x)`,
 * which accepts both numbers and decimal strings.
 */

/** Integers with more digits than this may not be exact as a JS number. */
const MAX_EXACT_DIGITS = 15

/**
 * Like `JSON.parse`, but integer literals that have more than 15 significant digits become decimal
 * strings (sign kept, leading zeros — which JSON does not allow anyway — dropped from the count).
 * Throws a `SyntaxError` on invalid JSON, as `JSON.parse` does.
 */
export function parseJsonExact(text: string): unknown {
  const positions = findBigIntegers(text)
  if (positions === null) return JSON.parse(text)
  // Rebuild the text with the big integer tokens quoted.
  let out = ''
  let last = 0
  for (let k = 0; k < positions.length; k += 2) {
    const start = positions[k]
    const end = positions[k + 1]
    out += text.slice(last, start) + '"' + text.slice(start, end) + '"'
    last = end
  }
  out += text.slice(last)
  return JSON.parse(out)
}

/**
 * A big integer token outside strings always follows `:`, `[` or `,` (plus optional whitespace).
 * The native regex engine finds such candidates; only then is the string state at each candidate
 * established, by hopping from quote to quote with indexOf. Typical blocks have no candidate at
 * all, or a few (inside log messages), so the cost over JSON.parse stays small.
 */
const CANDIDATE = /[:[,][ \t\n\r]*-?\d{16,}/g

/**
 * Flat list [start0, end0, start1, end1, ...] of big integer tokens outside string literals,
 * or null when there are none. Malformed text is left for JSON.parse to reject.
 */
function findBigIntegers(text: string): number[] | null {
  const n = text.length
  // a bare top-level number has no delimiter before it
  let first = 0
  while (first < n && isWhitespace(text.charCodeAt(first))) first++
  if (first < n && (text.charCodeAt(first) === 45 || (text.charCodeAt(first) >= 48 && text.charCodeAt(first) <= 57))) {
    const end = numberEnd(text, first)
    const digits = text.charCodeAt(first) === 45 ? end.intEnd - first - 1 : end.intEnd - first
    return end.isInteger && digits > MAX_EXACT_DIGITS ? [first, end.end] : null
  }
  const re = CANDIDATE
  re.lastIndex = 0
  let m = re.exec(text)
  if (m === null) return null
  let found: number[] | null = null
  let pos = 0 // string state known up to here
  let inString = false
  while (m !== null) {
    const delimiter = m.index
    // advance the string state to the delimiter
    for (;;) {
      const q = text.indexOf('"', pos)
      if (q < 0 || q >= delimiter) break
      if (inString) {
        let b = q - 1
        while (text.charCodeAt(b) === 92 /* \ */) b--
        if ((q - 1 - b) % 2 === 1) {
          pos = q + 1 // escaped quote
          continue
        }
      }
      inString = !inString
      pos = q + 1
    }
    if (!inString) {
      let start = delimiter + 1
      while (isWhitespace(text.charCodeAt(start))) start++
      const end = re.lastIndex // \d{16,} is greedy: the digit run ends here
      const c = end < n ? text.charCodeAt(end) : 0
      if (c !== 46 /* . */ && c !== 101 /* e */ && c !== 69 /* E */) {
        if (found === null) found = []
        found.push(start, end)
      }
    }
    m = re.exec(text)
  }
  return found
}

function isWhitespace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13
}

/** End of the number token at i: where its integer digits end, where the token ends. */
function numberEnd(text: string, i: number): { intEnd: number; end: number; isInteger: boolean } {
  const n = text.length
  if (text.charCodeAt(i) === 45) i++
  while (i < n && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++
  const intEnd = i
  let isInteger = true
  while (i < n) {
    const d = text.charCodeAt(i)
    if (d === 46 || d === 101 || d === 69 || d === 43 || d === 45 || (d >= 48 && d <= 57)) {
      isInteger = false
      i++
    } else break
  }
  return { intEnd, end: i, isInteger }
}

/**
 * Like `JSON.stringify` for plain data, but `bigint` values are written as bare exact integers.
 * `undefined` members are left out, as JSON.stringify does; non-finite numbers become null.
 */
export function stringifyExact(value: unknown): string {
  const parts: string[] = []
  writeValue(value, parts)
  return parts.join('')
}

function writeValue(v: unknown, out: string[]): void {
  switch (typeof v) {
    case 'string':
      out.push(JSON.stringify(v))
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
          else writeValue(x, out)
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
          writeValue(x, out)
        }
        out.push('}')
      }
      return
    default:
      out.push('null')
  }
}
