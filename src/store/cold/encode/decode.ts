/**
 * Decoding a column from its parts (the whole column as JS values, `Table.column()`), and the
 * typed views of parts that readers of the stored form use (`RawColumn`).
 */
import type { Enc } from './encoded.ts'

/** a u32 view of a part (parts are 8-byte aligned) */
export function view32(p: Uint8Array): Uint32Array {
  return new Uint32Array(p.buffer, p.byteOffset, p.byteLength >>> 2)
}

/** dictionary codes of width 1, 2 or 4 bytes */
export function codesOf(p: Uint8Array, w: number | undefined): Uint8Array | Uint16Array | Uint32Array {
  if (w === 1) return p
  if (w === 2) return new Uint16Array(p.buffer, p.byteOffset, p.byteLength >>> 1)
  return view32(p)
}

function text(p: Uint8Array): string {
  return Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8')
}

function withNulls<T>(values: ArrayLike<T>, v: Uint8Array): (T | null)[] {
  const out = new Array<T | null>(values.length)
  for (let i = 0; i < values.length; i++) out[i] = v[i] ? values[i] : null
  return out
}

/**
 * An array of n rows, each built by `make(i)` when first read (then kept). A Proxy over a real
 * array: indexing, `length`, iteration, `Array.isArray` and `Array.from` behave as for an array.
 */
export function lazyRows<T>(n: number, make: (i: number) => T): T[] {
  const rows = new Array<T>(n)
  return new Proxy(rows, {
    get(target, key, receiver) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57) {
          const i = +key
          if (i < n) {
            let v = target[i]
            if (v === undefined) v = target[i] = make(i)
            return v
          }
        }
      }
      return Reflect.get(target, key, receiver)
    },
    // every row exists (slice, `in`, hasOwnProperty look before they get)
    has(target, key) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57 && +key < n) return true
      }
      return Reflect.has(target, key)
    },
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57 && +key < n) {
          const i = +key
          let v = target[i]
          if (v === undefined) v = target[i] = make(i)
          return { value: v, writable: true, enumerable: true, configurable: true }
        }
      }
      return Reflect.getOwnPropertyDescriptor(target, key)
    },
  })
}

export interface Decoded {
  values: ArrayLike<unknown>
  /** rough memory footprint, for the cache budget */
  bytes: number
}

/**
 * Decode a column from its parts (views on an 8-byte-aligned buffer). Non-nullable fixed-width
 * columns are returned as typed arrays (no copy); everything else as plain arrays holding the
 * model's values (null for absent, bigint for u64/i64, arrays for list fields).
 */
export function decodeColumn(e: Enc, n: number, parts: Uint8Array[], w?: number, v?: number): Decoded {
  switch (e) {
    case 'u32': {
      const a = view32(parts[0]).subarray(0, n)
      return v ? { values: withNulls(a, parts[1]), bytes: n * 16 } : { values: a, bytes: a.byteLength }
    }
    case 'u64':
    case 'i64': {
      const p = parts[0]
      const a =
        e === 'u64' ? new BigUint64Array(p.buffer, p.byteOffset, n) : new BigInt64Array(p.buffer, p.byteOffset, n)
      return v
        ? { values: withNulls(a as ArrayLike<bigint>, parts[1]), bytes: n * 40 }
        : { values: a, bytes: a.byteLength }
    }
    case 'bool': {
      const p = parts[0]
      const out = new Array<boolean | null>(n)
      for (let i = 0; i < n; i++) out[i] = p[i] === 2 ? null : p[i] === 1
      return { values: out, bytes: n * 8 }
    }
    case 'ver': {
      const p = parts[0]
      const a = new Int32Array(p.buffer, p.byteOffset, n)
      const out = new Array<'legacy' | number>(n)
      for (let i = 0; i < n; i++) out[i] = a[i] < 0 ? 'legacy' : a[i]
      return { values: out, bytes: n * 8 }
    }
    case 'plain':
    case 'jplain': {
      const s = text(parts[0])
      const out = JSON.parse(s) as unknown[]
      return { values: out, bytes: n * 8 + s.length * 2 + n * 24 }
    }
    case 'dict':
    case 'jdict': {
      const s = text(parts[0])
      const dict = JSON.parse(s) as unknown[]
      const codes = codesOf(parts[1], w)
      const out = new Array<unknown>(n)
      for (let i = 0; i < n; i++) {
        const c = codes[i]
        out[i] = c < dict.length ? dict[c] : null
      }
      return { values: out, bytes: n * 8 + s.length * 2 + dict.length * 24 }
    }
    case 'addr': {
      const off = view32(parts[0])
      const flat = codesOf(parts[1], w)
      const out = new Array<number[]>(n)
      for (let i = 0; i < n; i++) {
        const a = off[i]
        const b = off[i + 1]
        const x = new Array<number>(b - a)
        for (let j = a; j < b; j++) x[j - a] = flat[j]
        out[i] = x
      }
      return { values: out, bytes: n * 40 + off[n] * 8 }
    }
    case 'list': {
      const off = view32(parts[0])
      const s = text(parts[1])
      const dict = JSON.parse(s) as string[]
      const codes = codesOf(parts[2], w)
      // rows are built on first access: a query usually renders the lists of a few matched rows
      // only (a filter over the column touches each row once, which costs about the same as
      // building them all up front)
      const values = lazyRows(n, (i) => {
        const a = off[i]
        const b = off[i + 1]
        const x = new Array<string>(b - a)
        for (let j = a; j < b; j++) x[j - a] = dict[codes[j]]
        return x
      })
      return { values, bytes: n * 40 + off[n] * 8 + s.length * 2 + dict.length * 24 }
    }
  }
}
