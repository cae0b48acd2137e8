/**
 * JSON writers compiled once per (kind, selection) from the catalogue: straight string building,
 * no intermediate objects (semantics.md §3).
 */
import type { FieldDef, FieldType } from '../catalogue.ts'
import type { SelectedField } from './parse.ts'

/** Writes one record (row `i` of the bound columns) as a JSON object. */
export type RowWriter = (i: number) => string
/** Binds a writer to the columns of one chunk, given in the order of `fields`. */
export type WriterFactory = (columns: readonly ArrayLike<unknown>[]) => RowWriter

const helpers = {
  json(v: unknown): string {
    return v === undefined || v === null ? 'null' : JSON.stringify(v)
  },
  str(v: unknown): string {
    return JSON.stringify(v)
  },
  list(v: readonly string[]): string {
    return v.length === 0 ? '[]' : '["' + v.join('","') + '"]'
  },
  addr(v: readonly number[]): string {
    return '[' + v.join(',') + ']'
  },
}

/** expression rendering the non-null value `v` of a field */
function valueExpr(type: FieldType, v: string, bigintsAsNumbers: boolean): string {
  switch (type) {
    case 'u32':
      return `('' + ${v})`
    case 'u64':
    case 'i64':
      return bigintsAsNumbers ? `('' + ${v})` : `('"' + ${v} + '"')`
    case 'base58':
      return `('"' + ${v} + '"')`
    case 'string':
      return `h.str(${v})`
    case 'bool':
      return `(${v} ? 'true' : 'false')`
    case 'json':
      return `h.json(${v})`
    case 'address':
      return `h.addr(${v})`
    case 'base58List':
      return `h.list(${v})`
    case 'version':
      return `(typeof ${v} === 'number' ? '' + ${v} : '"' + ${v} + '"')`
  }
}

/** The distinct catalogue fields of a selection, in order (a field selected under two spellings once). */
export function selectedDefs(fields: readonly SelectedField[]): FieldDef[] {
  const out: FieldDef[] = []
  for (const f of fields) if (!out.includes(f.def)) out.push(f.def)
  return out
}

/**
 * Compile a writer factory for a selection. Columns passed to the factory follow
 * `selectedDefs(fields)`.
 */
export function compileWriter(fields: readonly SelectedField[], bigintsAsNumbers: boolean): WriterFactory {
  if (fields.length === 0) return () => () => '{}'
  const defs = selectedDefs(fields)
  const lines: string[] = []
  for (let c = 0; c < defs.length; c++) lines.push(`const c${c} = cols[${c}];`)
  const body: string[] = []
  const used = new Set<number>()
  let expr = ''
  for (let k = 0; k < fields.length; k++) {
    const f = fields[k]
    const c = defs.indexOf(f.def)
    if (!used.has(c)) {
      body.push(`const v${c} = c${c}[i];`)
      used.add(c)
    }
    const val = valueExpr(f.def.type, `v${c}`, bigintsAsNumbers)
    const rendered = f.def.nullable || f.def.type === 'json' ? `(v${c} === null || v${c} === undefined ? 'null' : ${val})` : val
    const keyText = JSON.stringify((k === 0 ? '{' : ',') + JSON.stringify(f.key) + ':')
    expr += (k === 0 ? '' : ' + ') + keyText + ' + ' + rendered
  }
  const src = `${lines.join('\n')}\nreturn function (i) {\n${body.join('\n')}\nreturn ${expr} + '}';\n}`
  const make = new Function('h', 'cols', src) as (h: typeof helpers, cols: readonly ArrayLike<unknown>[]) => RowWriter
  return (cols) => make(helpers, cols)
}
