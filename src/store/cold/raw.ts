/**
 * Filters and row reads on a column's encoded parts (format 2 index parts, see encode.ts), without
 * decoding the whole column:
 *
 * - a dictionary value's code is found by binary search over the codes sorted by value, parsing
 *   only the ~log2(size) tokens it visits;
 * - `in` / `at` / `any` filters become a flag per code, then one loop over the candidates' codes;
 * - `prefix` filters compare the bytes of a candidate's JSON token (`"0x…"`) with the prefixes;
 * - `rowView` builds a row's value when it is read (plain: one JSON.parse of its token).
 */
import type { MatchOp } from '../chunk.ts'
import { lazyRows, type Enc } from './encode.ts'

function view32(p: Uint8Array): Uint32Array {
  return new Uint32Array(p.buffer, p.byteOffset, p.byteLength >>> 2)
}

function codesOf(p: Uint8Array, w: number | undefined): Uint8Array | Uint16Array | Uint32Array {
  if (w === 1) return p
  if (w === 2) return new Uint16Array(p.buffer, p.byteOffset, p.byteLength >>> 1)
  return view32(p)
}

function buf(p: Uint8Array): Buffer {
  return Buffer.from(p.buffer, p.byteOffset, p.byteLength)
}

/** Prefix values usable as raw bytes: printable ASCII without `"` and `\` (JSON writes them as is). */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false
  }
  return true
}

type Groups = readonly { readonly length: number; readonly values: ReadonlySet<string> }[]

/** A compiled prefix test over JSON string tokens in a buffer. */
function prefixTest(groups: Groups): ((b: Buffer, a: number, e: number) => boolean) | null {
  for (const g of groups) for (const v of g.values) if (v.length !== g.length || !plainAscii(v)) return null
  const single = groups.map((g) =>
    g.values.size === 1 ? Buffer.from(g.values.values().next().value as string, 'latin1') : null,
  )
  const ng = groups.length
  return (b, a, e) => {
    // token a..e is `"…"` for a string (`null` otherwise: no match)
    if (b[a] !== 0x22) return false
    const start = a + 1
    const bytes = e - 1 - start
    for (let g = 0; g < ng; g++) {
      const len = groups[g].length
      // fewer bytes than characters wanted: fewer characters too (and later groups are longer)
      if (bytes < len) return false
      const one = single[g]
      if (one !== null) {
        if (b.compare(one, 0, len, start, start + len) === 0) return true
      } else if (groups[g].values.has(b.toString('latin1', start, start + len))) return true
    }
    return false
  }
}

export class RawColumn {
  private readonly text: Buffer | null = null
  /** dict / list: codes sorted by value, token offsets of the dictionary */
  private readonly sorted: Uint32Array | null = null
  private readonly toff: Uint32Array | null = null
  private readonly codes: Uint8Array | Uint16Array | Uint32Array | null = null
  /** list: row offsets into codes */
  private readonly off: Uint32Array | null = null
  private memo: unknown[] | null = null

  constructor(
    readonly e: Enc,
    readonly n: number,
    readonly parts: Uint8Array[],
    private readonly width: number | undefined,
    readonly x: boolean,
    readonly v: boolean,
  ) {
    const w = width
    if (!x) return
    if (e === 'dict') {
      this.text = buf(parts[0])
      this.codes = codesOf(parts[1], w)
      this.sorted = view32(parts[2])
      this.toff = view32(parts[3])
    } else if (e === 'list') {
      this.off = view32(parts[0])
      this.text = buf(parts[1])
      this.codes = codesOf(parts[2], w)
      this.sorted = view32(parts[3])
      this.toff = view32(parts[4])
    } else if (e === 'plain') {
      this.text = buf(parts[0])
      this.toff = view32(parts[1])
    }
  }

  get dictSize(): number {
    return this.sorted ? this.sorted.length : 0
  }

  /** the value of dictionary code c (dict, list) or of row c (plain) */
  private token(c: number): unknown {
    const t = this.toff!
    return JSON.parse(this.text!.toString('utf8', t[c], t[c + 1] - 1))
  }

  private dictValue(c: number): unknown {
    let m = this.memo
    if (!m) m = this.memo = new Array(this.dictSize)
    let v = m[c]
    if (v === undefined) v = m[c] = this.token(c)
    return v
  }

  /** code of a dictionary value, -1 when absent */
  lookup(value: string): number {
    const sorted = this.sorted!
    let lo = 0
    let hi = sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const c = sorted[mid]
      const s = this.dictValue(c) as string
      if (s === value) return c
      if (s < value) lo = mid + 1
      else hi = mid
    }
    return -1
  }

  /** a flag per code (index dictSize = null) for the values of a set; null when none is present */
  private flags(values: ReadonlySet<string | null>): Uint8Array | null {
    const size = this.dictSize
    const f = new Uint8Array(size + 1)
    let any = false
    for (const v of values) {
      const c = v === null ? size : typeof v === 'string' ? this.lookup(v) : -1
      if (c >= 0) {
        f[c] = 1
        any = true
      }
    }
    return any ? f : null
  }

  match(op: MatchOp, rows: Int32Array, n: number): number {
    if (!this.x) return -1
    let k = 0
    if ('in' in op) {
      if (this.e === 'dict') {
        const f = this.flags(op.in)
        if (!f) return 0
        const codes = this.codes!
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          if (f[codes[r]] === 1) rows[k++] = r
        }
        return k
      }
      if (this.e === 'plain') {
        const targets = new Map<number, Buffer[]>()
        for (const v of op.in) {
          const t = Buffer.from(JSON.stringify(v), 'utf8')
          const l = targets.get(t.length)
          if (l) l.push(t)
          else targets.set(t.length, [t])
        }
        const b = this.text!
        const off = this.toff!
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const a = off[r]
          const e = off[r + 1] - 1
          const l = targets.get(e - a)
          if (l === undefined) continue
          for (let i = 0; i < l.length; i++) {
            if (b.compare(l[i], 0, e - a, a, e) === 0) {
              rows[k++] = r
              break
            }
          }
        }
        return k
      }
      return -1
    }
    if ('prefix' in op) {
      const test = prefixTest(op.prefix)
      if (!test) return -1
      const b = this.text!
      const off = this.toff!
      if (this.e === 'plain') {
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          if (test(b, off[r], off[r + 1] - 1)) rows[k++] = r
        }
        return k
      }
      if (this.e === 'dict') {
        // 0 = not yet tested, 1 = match, 2 = no match (null code: no match)
        const size = this.dictSize
        const memo = new Uint8Array(size + 1)
        memo[size] = 2
        const codes = this.codes!
        for (let j = 0; j < n; j++) {
          const r = rows[j]
          const c = codes[r]
          let m = memo[c]
          if (m === 0) m = memo[c] = test(b, off[c], off[c + 1] - 1) ? 1 : 2
          if (m === 1) rows[k++] = r
        }
        return k
      }
      return -1
    }
    if (this.e !== 'list') return -1
    const off = this.off!
    const codes = this.codes!
    if ('at' in op) {
      const f = this.flags(op.values)
      if (!f) return 0
      const idx = op.at
      for (let j = 0; j < n; j++) {
        const r = rows[j]
        const p = off[r] + idx
        if (p < off[r + 1] && f[codes[p]] === 1) rows[k++] = r
      }
      return k
    }
    const f = this.flags(op.any)
    if (!f) return 0
    for (let j = 0; j < n; j++) {
      const r = rows[j]
      const end = off[r + 1]
      for (let p = off[r]; p < end; p++) {
        if (f[codes[p]] === 1) {
          rows[k++] = r
          break
        }
      }
    }
    return k
  }

  /** rows built when read; null when the column has no cheaper form than its full decode */
  rowView(): ArrayLike<unknown> | null {
    const n = this.n
    const p = this.parts
    switch (this.e) {
      case 'plain':
        if (!this.x) return null
        return lazyRows(n, (i) => this.token(i))
      case 'dict': {
        if (!this.x) return null
        const codes = this.codes!
        const size = this.dictSize
        return lazyRows(n, (i) => (codes[i] < size ? this.dictValue(codes[i]) : null))
      }
      case 'list': {
        if (!this.x) return null
        const off = this.off!
        const codes = this.codes!
        return lazyRows(n, (i) => {
          const a = off[i]
          const b = off[i + 1]
          const out = new Array<string>(b - a)
          for (let j = a; j < b; j++) out[j - a] = this.dictValue(codes[j]) as string
          return out
        })
      }
      case 'addr': {
        const off = view32(p[0])
        const flat = codesOf(p[1], this.width)
        return lazyRows(n, (i) => {
          const a = off[i]
          const b = off[i + 1]
          const out = new Array<number>(b - a)
          for (let j = a; j < b; j++) out[j - a] = flat[j]
          return out
        })
      }
      case 'bool': {
        const a = p[0]
        return lazyRows(n, (i) => (a[i] === 2 ? null : a[i] === 1))
      }
      case 'ver': {
        const a = new Int32Array(p[0].buffer, p[0].byteOffset, n)
        return lazyRows(n, (i) => (a[i] < 0 ? 'legacy' : a[i]))
      }
      case 'u32': {
        if (!this.v) return null
        const a = view32(p[0])
        const valid = p[1]
        return lazyRows(n, (i) => (valid[i] ? a[i] : null))
      }
      case 'u64':
      case 'i64': {
        if (!this.v) return null
        const a =
          this.e === 'u64'
            ? new BigUint64Array(p[0].buffer, p[0].byteOffset, n)
            : new BigInt64Array(p[0].buffer, p[0].byteOffset, n)
        const valid = p[1]
        return lazyRows(n, (i) => (valid[i] ? a[i] : null))
      }
      default:
        return null
    }
  }
}
