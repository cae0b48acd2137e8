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
 * Flat list [start0, end0, start1, end1, ...] of big integer tokens outside string literals,
 * or null when there are none. Malformed text is left for JSON.parse to reject.
 */
function findBigIntegers(text: string): number[] | null {
  let found: number[] | null = null
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      // Skip the string literal: find the closing quote not preceded by an odd run of backslashes.
      let j = i + 1
      for (;;) {
        const q = text.indexOf('"', j)
        if (q < 0) return found // unterminated: JSON.parse will throw
        let b = q - 1
        while (b > i && text.charCodeAt(b) === 92 /* \ */) b--
        if ((q - 1 - b) % 2 === 0) {
          i = q + 1
          break
        }
        j = q + 1
      }
      continue
    }
    if ((c >= 48 && c <= 57) || c === 45 /* - */) {
      const start = i
      if (c === 45) i++
      // skip leading zeros (not significant)
      while (i < n && text.charCodeAt(i) === 48) i++
      const sig = i
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d < 48 || d > 57) break
        i++
      }
      const digits = i - sig
      let isInteger = true
      // fraction / exponent: this is not an integer token; consume the rest of it
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d === 46 /* . */ || d === 101 /* e */ || d === 69 /* E */ || d === 43 /* + */ || d === 45 /* - */ || (d >= 48 && d <= 57)) {
          isInteger = false
          i++
        } else break
      }
      if (isInteger && digits > MAX_EXACT_DIGITS) {
        if (found === null) found = []
        found.push(start, i)
      }
      continue
    }
    i++
  }
  return found
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
