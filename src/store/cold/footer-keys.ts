/**
 * The chunk footer's column entries as stored: the footer JSON keeps its short keys (`e`, `o`, `l`,
 * `p`, ...; chunk-file.ts `ColumnBlob` says what each holds), the code reads readable names. Only
 * the footer reader (chunk-read.ts) and writer (chunk-writer.ts) convert, key by key in the
 * entry's own order, so a footer written today is byte for byte the footer written before.
 */
import type { ColumnBlob, Footer } from './chunk-file.ts'

/** each readable name of a column entry and its key in the footer JSON */
const ON_DISK = {
  encoding: 'e',
  offset: 'o',
  storedLength: 'l',
  partLengths: 'p',
  crc: 'c',
  deflated: 'z',
  width: 'w',
  validity: 'v',
  indexParts: 'x',
  valueOrdered: 's',
  fences: 'fx',
  pageCrcs: 'pc',
  type: 't',
  frames: 'fr',
  frameCrcs: 'fc',
  codecs: 'zc',
} as const satisfies { [K in keyof ColumnBlob]-?: string }

const FROM_DISK: { readonly [key: string]: string } = Object.fromEntries(
  Object.entries(ON_DISK).map(([name, key]) => [key, name]),
)

/** a column entry as the footer JSON holds it */
export type DiskColumnBlob = { [K in keyof ColumnBlob as (typeof ON_DISK)[K]]: ColumnBlob[K] }

/** a table's entry in the footer, its column entries of type C */
interface Table<C> {
  rows: number
  off?: C
  cols: Record<string, C>
}
type DiskTableMeta = Table<DiskColumnBlob>

/** the footer JSON as stored */
export type DiskFooter = Omit<Footer, 'header' | 'kinds'> & {
  header: DiskTableMeta
  kinds: Record<string, DiskTableMeta>
}

/** an object's keys renamed by `names` (keys it lacks kept), in the object's own key order */
function renameKeys(o: object, names: { readonly [key: string]: string }): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) out[names[k] ?? k] = v
  return out
}

/** a table's entry with each column entry converted by `col`, in the table's own key order */
function mapTable<A, B>(t: Table<A>, col: (c: A) => B): Table<B> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(t)) {
    if (k === 'off') out[k] = col(v as A)
    else if (k === 'cols')
      out[k] = Object.fromEntries(Object.entries(v as Record<string, A>).map(([f, c]) => [f, col(c)]))
    else out[k] = v
  }
  return out as unknown as Table<B>
}

/** the header's and each kind's table converted by `col` */
function mapTables<A, B>(f: { header: Table<A>; kinds: Record<string, Table<A>> }, col: (c: A) => B) {
  const kinds = Object.fromEntries(Object.entries(f.kinds).map(([k, t]) => [k, mapTable(t, col)]))
  return { header: mapTable(f.header, col), kinds }
}

/** the footer as read from disk, its column entries under readable names */
export function footerFromDisk(raw: DiskFooter): Footer {
  return { ...raw, ...mapTables(raw, (c) => renameKeys(c, FROM_DISK) as unknown as ColumnBlob) }
}

/** the footer as written to disk, its column entries under their stored keys */
export function footerToDisk(footer: Footer): DiskFooter {
  return { ...footer, ...mapTables(footer, (c) => renameKeys(c, ON_DISK) as unknown as DiskColumnBlob) }
}
