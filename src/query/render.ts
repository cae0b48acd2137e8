/**
 * JSON writers as strings, compiled once per (kind, selection) from the dataset's field
 * declarations: straight string building, no intermediate objects (docs/query.md §3). The byte
 * writers (render-bytes.ts) write the same text into a line buffer.
 */
import { helpers, MAX_WRITERS, selectedDefs, selectionKey, valueExpr } from './render-values.ts'
import type { SelectedField } from './parse.ts'

export { selectedDefs } from './render-values.ts'
export { compileByteWriter, listStep } from './render-bytes.ts'
export type { ByteRowWriter, ByteWriterFactory, ColumnTake } from './render-bytes.ts'

/** Writes one record (row `i` of the bound columns) as a JSON object. */
export type RowWriter = (i: number) => string
/** Binds a writer to the columns of one chunk, given in the order of `fields`. */
export type WriterFactory = (columns: readonly ArrayLike<unknown>[]) => RowWriter

/**
 * Compile a writer factory for a selection. Columns passed to the factory follow
 * `selectedDefs(fields)`.
 */
export function compileWriter(fields: readonly SelectedField[], bigintsAsNumbers: boolean): WriterFactory {
  const byFlag = bigintsAsNumbers ? BY_LIST_BIG : BY_LIST
  let w = byFlag.get(fields)
  if (w !== undefined) return w
  const key = selectionKey(fields, bigintsAsNumbers)
  w = WRITERS.get(key)
  if (w === undefined) {
    w = compile(fields, bigintsAsNumbers)
    if (WRITERS.size >= MAX_WRITERS) WRITERS.delete(WRITERS.keys().next().value as string)
    WRITERS.set(key, w)
  }
  byFlag.set(fields, w)
  return w
}

/**
 * Compiled writers by selection: a query's writers are compiled once, not on every execution (a
 * stream following the head runs the engine once per new block). Selections are few in practice;
 * the oldest is dropped past MAX_WRITERS.
 */
const WRITERS = new Map<string, WriterFactory>()
/** the same, by the parsed selection's own list (no key to build for a query run again) */
const BY_LIST = new WeakMap<readonly SelectedField[], WriterFactory>()
const BY_LIST_BIG = new WeakMap<readonly SelectedField[], WriterFactory>()

function compile(fields: readonly SelectedField[], bigintsAsNumbers: boolean): WriterFactory {
  if (fields.length === 0) return () => () => '{}'
  const defs = selectedDefs(fields)
  const lines: string[] = []
  for (let c = 0; c < defs.length; c++) lines.push(`const c${c} = cols[${c}];`)
  const body: string[] = []
  const used = new Set<number>()
  // the row as constant text and expressions; adjacent constants are merged into one literal, so
  // the quotes of a string value join the keys around it (fewer pieces to concatenate and flatten)
  const parts: { text?: string; expr?: string }[] = []
  const text = (t: string) => {
    const last = parts[parts.length - 1]
    if (last?.text !== undefined) last.text += t
    else parts.push({ text: t })
  }
  for (let k = 0; k < fields.length; k++) {
    const f = fields[k]
    const c = defs.indexOf(f.def)
    if (!used.has(c)) {
      body.push(`const v${c} = c${c}[i];`)
      used.add(c)
    }
    text((k === 0 ? '{' : ',') + JSON.stringify(f.key) + ':')
    const v = `v${c}`
    const type = f.def.type
    const nullable = f.def.nullable || type === 'json'
    // non-null values that render as `"<value>"` or `<value>` (string conversion of the value itself)
    if (!nullable && (type === 'safeAscii' || ((type === 'u64' || type === 'i64') && !bigintsAsNumbers))) {
      text('"')
      parts.push({ expr: v })
      text('"')
    } else if (!nullable && (type === 'u32' || type === 'u64' || type === 'i64')) {
      parts.push({ expr: v })
    } else {
      const val = valueExpr(f.def, v, bigintsAsNumbers)
      parts.push({ expr: nullable ? `(${v} === null || ${v} === undefined ? 'null' : ${val})` : val })
    }
  }
  text('}')
  // the first part is text: every expression is converted to a string by the concatenation
  const expr = parts.map((p) => (p.text !== undefined ? JSON.stringify(p.text) : p.expr)).join(' + ')
  const src = `${lines.join('\n')}\nreturn function (i) {\n${body.join('\n')}\nreturn ${expr};\n}`
  const make = new Function('h', 'cols', src) as (h: typeof helpers, cols: readonly ArrayLike<unknown>[]) => RowWriter
  return (cols) => make(helpers, cols)
}
