/**
 * Rows of a column built when read (`RawColumn.rowView`): a sparse view whose rows are made from
 * the stored parts on their first read (through transient pages: the built rows are kept with the
 * column, not the pages they came from).
 */
import type { RawColumn } from './column.ts'

/**
 * n rows read by index (`view[i]`, `length`), each built by `make(i)` on its first read and kept
 * in a Map (`memo`: this view's own, or one kept with the column): costs nothing up front (no
 * n-element backing array), for reading a few rows.
 */
export function sparseRows<T>(n: number, make: (i: number) => T, memo = new Map<number, T>()): ArrayLike<T> {
  return new Proxy([] as T[], {
    get(target, key, receiver) {
      if (typeof key === 'string') {
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57) {
          const i = +key
          if (i < n) {
            let v = memo.get(i)
            if (v === undefined && !memo.has(i)) memo.set(i, (v = make(i)))
            return v
          }
          return undefined
        }
        if (key === 'length') return n
      }
      return Reflect.get(target, key, receiver)
    },
  })
}

/**
 * rows built when read; null when the column has no cheaper form than its full decode (the parts
 * worth reading whole for about `reads` rows are read first: `RawColumn.prefetch`)
 */
export function rowView(col: RawColumn, reads: number): ArrayLike<unknown> | null {
  const n = col.n
  const P = col.parts
  col.prefetch(reads)
  switch (col.e) {
    case 'plain':
    case 'dict':
    case 'list':
    case 'addr': {
      const make = col.e === 'addr' || col.x ? keptRowMaker(col) : null
      return make === null ? null : sparseRows(n, col.keep(make), col.built)
    }
    case 'bool':
      return sparseRows(n, (i) => {
        const x = P.uw(0, i, 1)
        return x === 2 ? null : x === 1
      })
    case 'ver':
      return sparseRows(n, (i) => {
        const x = P.u32(0, i) | 0
        return x < 0 ? 'legacy' : x
      })
    case 'u32':
      // without nulls the decoded column is a view of the stored bytes: nothing cheaper
      if (!col.v) return null
      return sparseRows(n, (i) => (P.uw(1, i, 1) ? P.u32(0, i) : null))
    case 'u64':
    case 'i64': {
      if (!col.v) return null
      const signed = col.e === 'i64'
      return sparseRows(n, (i) => {
        if (!P.uw(1, i, 1)) return null
        const b = P.range(0, i * 8, i * 8 + 8)
        return signed ? b.readBigInt64LE(0) : b.readBigUInt64LE(0)
      })
    }
    default:
      return null
  }
}

/** the row builder of a column whose built rows are kept (plain, dict, list, addr) */
function keptRowMaker(col: RawColumn): ((i: number) => unknown) | null {
  const P = col.parts
  const w = col.w
  switch (col.e) {
    case 'plain':
      return (i) => col.token(i)
    case 'dict': {
      const size = col.dictSize
      return (i) => {
        const c = P.uw(col.pCodes, i, w)
        return c < size ? col.dictValue(c) : null
      }
    }
    case 'list':
      return (i) => {
        const [a, e] = col.listRange(i)
        const codes = col.listCodes(a, e)
        const out = new Array<string>(codes.length)
        for (let j = 0; j < codes.length; j++) out[j] = col.dictValue(codes[j]) as string
        return out
      }
    case 'addr': {
      const pair = col.pair
      return (i) => {
        P.u32Pair(0, i, pair)
        const a = pair[0]
        const b = pair[1]
        const out = new Array<number>(b - a)
        for (let j = a; j < b; j++) out[j - a] = P.uw(1, j, w)
        return out
      }
    }
    default:
      return null
  }
}
