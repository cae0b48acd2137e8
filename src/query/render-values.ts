/**
 * What the compiled writers (render.ts, render-bytes.ts) share: the helpers their generated code
 * calls, the expression rendering one field's value by its declared type (a shaped `json` field by
 * its dataset's writer), a selection's distinct fields and the key compiled writers are cached by.
 */
import type { FieldDef, ShapedJson } from '../dataset/types.ts'
import type { SelectedField } from './parse.ts'

/**
 * JSON text of objects rendered before: a stored json column's rows share the values its
 * dictionary parsed once (a record's structured value), so each is stringified once, not per row
 * and run. Values are never changed once built.
 */
const JSON_TEXT = new WeakMap<object, string>()

/** the structural writers of shaped `json` fields (`FieldDef.render`) met so far, by index */
const SHAPED: ShapedJson[] = []

function shapedIndex(f: ShapedJson): number {
  let i = SHAPED.indexOf(f)
  if (i < 0) {
    i = SHAPED.length
    SHAPED.push(f)
  }
  return i
}

export const helpers = {
  json(v: unknown): string {
    if (v === undefined || v === null) return 'null'
    if (typeof v !== 'object') return JSON.stringify(v)
    let t = JSON_TEXT.get(v)
    if (t === undefined) JSON_TEXT.set(v, (t = JSON.stringify(v)))
    return t
  },
  /** `json` fields whose structure the dataset fixes: their structural writers (`shapedIndex`) */
  shaped: SHAPED as unknown as readonly ((v: unknown, bigintsAsNumbers: boolean) => string)[],
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
export function valueExpr(def: FieldDef, v: string, bigintsAsNumbers: boolean): string {
  const type = def.type
  if (type === 'json' && def.render !== undefined)
    return `h.shaped[${shapedIndex(def.render)}](${v}, ${bigintsAsNumbers})`
  switch (type) {
    case 'u32':
      return `('' + ${v})`
    case 'u64':
    case 'i64':
      return bigintsAsNumbers ? `('' + ${v})` : `('"' + ${v} + '"')`
    case 'safeAscii':
      return `('"' + ${v} + '"')`
    case 'string':
      return `h.str(${v})`
    case 'bool':
      return `(${v} ? 'true' : 'false')`
    case 'json':
      return `h.json(${v})`
    case 'address':
      return `h.addr(${v})`
    case 'safeAsciiList':
      return `h.list(${v})`
    case 'version':
      // 'legacy' or a number; anything else is escaped
      return `(typeof ${v} === 'number' ? '' + ${v} : ${v} === 'legacy' ? '"legacy"' : h.str(${v}))`
  }
}

/** The distinct fields of a selection, in order (a field selected under two spellings once). */
export function selectedDefs(fields: readonly SelectedField[]): FieldDef[] {
  const out: FieldDef[] = []
  for (const f of fields) if (!out.includes(f.def)) out.push(f.def)
  return out
}

/** compiled writers kept at most (the oldest dropped past it) */
export const MAX_WRITERS = 1024

/**
 * what a compiled writer depends on: each field's output key, field (name, type, nullability, its
 * shaped writer) and column index
 */
export function selectionKey(fields: readonly SelectedField[], bigintsAsNumbers: boolean): string {
  const defs = selectedDefs(fields)
  let k = bigintsAsNumbers ? 'n' : 's'
  for (const f of fields) {
    const d = f.def
    k += '\u0001' + f.key + '\u0000' + d.name + '\u0000' + d.type + (d.nullable ? '?' : '') + defs.indexOf(d)
    if (d.render !== undefined) k += '#' + shapedIndex(d.render)
  }
  return k
}
