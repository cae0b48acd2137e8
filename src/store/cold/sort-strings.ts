/**
 * The order of a list of distinct strings (JS string order, UTF-16 code units, as
 * `Array.prototype.sort` without a comparator), computed with numeric sorts instead of string
 * comparisons: the writer sorts every dictionary of a chunk (value-ordered dictionaries, format 4),
 * ~120,000 accounts per 21-block chunk, and comparing strings is what costs there.
 *
 * Each string gets a key from its next few characters (7 bits each, a missing character as 0 so a
 * prefix sorts before the longer string) and its index in the low bits of the same float64 (exact:
 * the sum stays below 2^53); a Float64Array sort orders them, and each run of equal keys (a shared
 * prefix) is ordered the same way on its next characters. Strings with a character 0 or above
 * 127 fall back to the comparison sort.
 */

/** indexes of `values` (distinct strings) in value order */
export function sortOrder(values: readonly string[]): Uint32Array {
  const n = values.length
  const order = new Uint32Array(n)
  for (let i = 0; i < n; i++) order[i] = i
  if (n < 2) return order
  let bits = 1
  while (2 ** bits < n) bits++
  // characters per key: 7 bits each next to the index's bits, within float64's 53 exact bits
  const chars = Math.floor((53 - bits) / 7)
  if (chars < 1) return fallback(values, order)
  const keys = new Float64Array(n)
  const scale = 2 ** bits
  // ranges of `order` that share a prefix of `depth` characters, still to order
  const stack: number[] = [0, n, 0]
  while (stack.length) {
    const depth = stack.pop()!
    const hi = stack.pop()!
    const lo = stack.pop()!
    // some string goes on past depth (else they would all be equal: not distinct)
    let live = false
    for (let j = lo; j < hi; j++) {
      const i = order[j]
      const s = values[i]
      if (s.length > depth) live = true
      let k = 0
      for (let c = depth; c < depth + chars; c++) {
        // a character 0 would key like a missing one
        const code = c < s.length ? s.charCodeAt(c) : 0
        if (code > 127 || (code === 0 && c < s.length)) return fallback(values, order)
        k = k * 128 + code
      }
      keys[j] = k * scale + i
    }
    if (!live) continue
    keys.subarray(lo, hi).sort()
    let start = lo
    let prefix = -1
    for (let j = lo; j <= hi; j++) {
      let p = -2
      if (j < hi) {
        const v = keys[j]
        p = Math.floor(v / scale)
        order[j] = v - p * scale
      }
      if (p !== prefix) {
        // a run of equal keys (in index order): ordered next from the first character where
        // its strings are not all the same
        if (j - start > 1) stack.push(start, j, common(values, order, start, j, depth + chars))
        start = j
        prefix = p
      }
    }
  }
  return order
}

/** the length of the prefix all of values[order[lo..hi)] share, known to be at least `from` */
function common(values: readonly string[], order: Uint32Array, lo: number, hi: number, from: number): number {
  const a = values[order[lo]]
  let n = a.length
  for (let j = lo + 1; j < hi && n > from; j++) {
    const b = values[order[j]]
    const m = Math.min(n, b.length)
    let i = from
    while (i < m && a.charCodeAt(i) === b.charCodeAt(i)) i++
    n = i
  }
  return Math.max(n, from)
}

function fallback(values: readonly string[], order: Uint32Array): Uint32Array {
  // the default sort of strings is this order, without a call per comparison
  const sorted = values.slice().sort()
  const at = new Map<string, number>()
  for (let i = 0; i < values.length; i++) at.set(values[i], i)
  for (let r = 0; r < sorted.length; r++) order[r] = at.get(sorted[r])!
  return order
}
