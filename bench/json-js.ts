/**
 * Two readers of JSON text written in JavaScript, measured against `JSON.parse` by the normalizer
 * benchmark (normalize.bench.ts, "JSON text read in JavaScript"): what a parser of our own could
 * gain on the text of a block's transactions before it does anything more.
 *
 * - `parseJsonJs`: a strict recursive-descent parser giving the values `parseJsonExact` gives
 *   (integers of more than 15 digits as decimal strings). String ends are found by a regular
 *   expression (one native search per string, which also finds escapes and control characters);
 *   a string with escapes is handed to `JSON.parse`. Throws on invalid JSON.
 * - `scanJson`: the least any reader of the text must do, the structure walked and every string
 *   skipped the same way, nothing built: it returns the number of values.
 */

const FAIL = new SyntaxError('not JSON')
/** the first quote, backslash or control character from `lastIndex` */
const STRING_STOP = /["\\\x00-\x1f]/g

let s = ''
let p = 0

function skipWhitespace(): void {
  let c = s.charCodeAt(p)
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++p)
}

/** the string whose opening quote is at p; p moves past its closing quote */
function readString(): string {
  const a = p + 1
  STRING_STOP.lastIndex = a
  if (!STRING_STOP.test(s)) throw FAIL
  const q = STRING_STOP.lastIndex - 1
  const c = s.charCodeAt(q)
  if (c === 34) {
    p = q + 1
    return s.slice(a, q)
  }
  if (c !== 92) throw FAIL // a control character
  // escapes: find the closing quote, then let JSON.parse decode the literal
  let i = q
  for (;;) {
    const d = s.charCodeAt(i)
    if (d === 34) break
    if (d === 92) i++
    else if (!(d >= 32)) throw FAIL // a control character or the end of the text
    i++
  }
  p = i + 1
  return JSON.parse(s.slice(a - 1, p)) as string
}

function readNumber(): number | string {
  const a = p
  let c = s.charCodeAt(p)
  if (c === 45) c = s.charCodeAt(++p)
  let v = 0
  if (c === 48) c = s.charCodeAt(++p)
  else if (c >= 49 && c <= 57) {
    do {
      v = v * 10 + (c - 48)
      c = s.charCodeAt(++p)
    } while (c >= 48 && c <= 57)
  } else throw FAIL
  if (c === 46 || c === 101 || c === 69) {
    if (c === 46) {
      c = s.charCodeAt(++p)
      if (!(c >= 48 && c <= 57)) throw FAIL
      while (c >= 48 && c <= 57) c = s.charCodeAt(++p)
    }
    if (c === 101 || c === 69) {
      c = s.charCodeAt(++p)
      if (c === 43 || c === 45) c = s.charCodeAt(++p)
      if (!(c >= 48 && c <= 57)) throw FAIL
      while (c >= 48 && c <= 57) c = s.charCodeAt(++p)
    }
    return Number(s.slice(a, p))
  }
  const negative = s.charCodeAt(a) === 45
  // as parseJsonExact: more than 15 digits may not be exact as a number
  if (p - a - (negative ? 1 : 0) > 15) return s.slice(a, p)
  return negative ? -v : v
}

function readValue(): unknown {
  skipWhitespace()
  const c = s.charCodeAt(p)
  if (c === 34) return readString()
  if (c === 123) {
    p++
    skipWhitespace()
    const o: Record<string, unknown> = {}
    if (s.charCodeAt(p) === 125) {
      p++
      return o
    }
    for (;;) {
      if (s.charCodeAt(p) !== 34) throw FAIL
      const k = readString()
      skipWhitespace()
      if (s.charCodeAt(p++) !== 58) throw FAIL
      const v = readValue()
      // a member named __proto__ is a member (JSON.parse), not the prototype
      if (k === '__proto__')
        Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true })
      else o[k] = v
      skipWhitespace()
      const d = s.charCodeAt(p++)
      if (d === 125) return o
      if (d !== 44) throw FAIL
      skipWhitespace()
    }
  }
  if (c === 91) {
    p++
    skipWhitespace()
    const a: unknown[] = []
    if (s.charCodeAt(p) === 93) {
      p++
      return a
    }
    for (;;) {
      a.push(readValue())
      skipWhitespace()
      const d = s.charCodeAt(p++)
      if (d === 93) return a
      if (d !== 44) throw FAIL
    }
  }
  if (c === 110 && s.startsWith('null', p)) {
    p += 4
    return null
  }
  if (c === 116 && s.startsWith('true', p)) {
    p += 4
    return true
  }
  if (c === 102 && s.startsWith('false', p)) {
    p += 5
    return false
  }
  return readNumber()
}

/** `parseJsonExact(text)`, read in JavaScript (see above) */
export function parseJsonJs(text: string): unknown {
  s = text
  p = 0
  try {
    const v = readValue()
    skipWhitespace()
    if (p !== s.length) throw FAIL
    return v
  } finally {
    s = ''
  }
}

/** the number of strings and other tokens in `text`, strings skipped as `parseJsonJs` skips them (nothing checked) */
export function scanJson(text: string): number {
  let n = 0
  let i = 0
  const end = text.length
  while (i < end) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      STRING_STOP.lastIndex = i + 1
      if (!STRING_STOP.test(text)) break
      i = STRING_STOP.lastIndex
      // an escape: on to the closing quote
      while (text.charCodeAt(i - 1) === 92) {
        STRING_STOP.lastIndex = i + 1
        if (!STRING_STOP.test(text)) return n
        i = STRING_STOP.lastIndex
      }
      n++
    } else {
      if (c === 44 || c === 58 || c === 91 || c === 123) n++
      i++
    }
  }
  return n
}
