/**
 * JSON writers compiled once per (kind, selection) from the catalogue: straight string building,
 * no intermediate objects (docs/query.md §3).
 */
import type { FieldDef } from '../catalogue.ts'
import type { JsonTokens, LineBuf } from './bytes.ts'
import type { SelectedField } from './parse.ts'

/** Writes one record (row `i` of the bound columns) as a JSON object. */
export type RowWriter = (i: number) => string
/** Binds a writer to the columns of one chunk, given in the order of `fields`. */
export type WriterFactory = (columns: readonly ArrayLike<unknown>[]) => RowWriter

function list(v: readonly string[]): string {
  return v.length === 0 ? '[]' : '["' + v.join('","') + '"]'
}

const helpers = {
  json(v: unknown): string {
    return v === undefined || v === null ? 'null' : JSON.stringify(v)
  },
  /** `loadedAddresses` (model LoadedAddresses: checked address lists), key order of src/model.ts */
  loadedAddresses(v: { writable: readonly string[]; readonly: readonly string[] }): string {
    if (!Array.isArray(v.writable) || !Array.isArray(v.readonly)) return JSON.stringify(v)
    return '{"writable":' + list(v.writable) + ',"readonly":' + list(v.readonly) + '}'
  },
  /** `addressTableLookups` (model AddressTableLookup[]), key order of src/model.ts */
  addressTableLookups(
    v: readonly { accountKey: string; writableIndexes: readonly number[]; readonlyIndexes: readonly number[] }[],
  ): string {
    if (!Array.isArray(v)) return JSON.stringify(v)
    if (v.length === 0) return '[]'
    let s = '['
    for (let i = 0; i < v.length; i++) {
      const x = v[i]
      if (typeof x.accountKey !== 'string' || !Array.isArray(x.writableIndexes) || !Array.isArray(x.readonlyIndexes)) {
        return JSON.stringify(v)
      }
      s +=
        (i === 0 ? '{"accountKey":"' : ',{"accountKey":"') +
        x.accountKey +
        '","writableIndexes":[' +
        x.writableIndexes.join(',') +
        '],"readonlyIndexes":[' +
        x.readonlyIndexes.join(',') +
        ']}'
    }
    return s + ']'
  },
  str(v: unknown): string {
    return JSON.stringify(v)
  },
  list,
  addr(v: readonly number[]): string {
    return '[' + v.join(',') + ']'
  },
}

/**
 * `json` fields whose structure the model fixes (src/model.ts) get a structural writer (addresses
 * and integers checked by the normalizer: no escaping, no JSON.stringify); other values fall back to it.
 */
const SHAPED_JSON = new Set(['loadedAddresses', 'addressTableLookups'])

/** expression rendering the non-null value `v` of a field */
function valueExpr(def: FieldDef, v: string, bigintsAsNumbers: boolean): string {
  const type = def.type
  if (type === 'json' && SHAPED_JSON.has(def.name)) return `h.${def.name}(${v})`
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
const MAX_WRITERS = 1024
/** the same, by the parsed selection's own list (no key to build for a query run again) */
const BY_LIST = new WeakMap<readonly SelectedField[], WriterFactory>()
const BY_LIST_BIG = new WeakMap<readonly SelectedField[], WriterFactory>()

/** what a compiled writer depends on: each field's output key, catalogue field and column index */
function selectionKey(fields: readonly SelectedField[], bigintsAsNumbers: boolean): string {
  const defs = selectedDefs(fields)
  let k = bigintsAsNumbers ? 'n' : 's'
  for (const f of fields) {
    const d = f.def
    k += '\u0001' + f.key + '\u0000' + d.name + '\u0000' + d.type + (d.nullable ? '?' : '') + defs.indexOf(d)
  }
  return k
}

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

/** Writes one record (row `i` of the bound columns) as a JSON object into `out`. */
export type ByteRowWriter = (i: number, out: LineBuf) => void
/**
 * Binds a byte writer to the columns of one chunk, in the order of `selectedDefs(fields)`: each
 * either the column's values or its stored JSON tokens (as the writer was compiled for).
 */
export type ByteWriterFactory = (columns: readonly (ArrayLike<unknown> | JsonTokens)[]) => ByteRowWriter

const BYTE_WRITERS = new Map<string, ByteWriterFactory>()
const NULL_BYTES = Buffer.from('null')
const TRUE_BYTES = Buffer.from('true')
const FALSE_BYTES = Buffer.from('false')

/**
 * Compile (once per selection and set of token columns) a writer of records as bytes: keys and
 * punctuation are pre-encoded constants, token columns (`tokens[c]` true) are copied as bytes,
 * u32 values written as digits, other values rendered as the string writer does and encoded.
 * Same text as `compileWriter` for the same values.
 */
export function compileByteWriter(
  fields: readonly SelectedField[],
  bigintsAsNumbers: boolean,
  tokens: readonly boolean[],
): ByteWriterFactory {
  const key = selectionKey(fields, bigintsAsNumbers) + '\u0002' + tokens.map((t) => (t ? 1 : 0)).join('')
  let w = BYTE_WRITERS.get(key)
  if (w === undefined) {
    w = compileBytes(fields, bigintsAsNumbers, tokens)
    if (BYTE_WRITERS.size >= MAX_WRITERS) BYTE_WRITERS.delete(BYTE_WRITERS.keys().next().value as string)
    BYTE_WRITERS.set(key, w)
  }
  return w
}

function compileBytes(
  fields: readonly SelectedField[],
  bigintsAsNumbers: boolean,
  tokens: readonly boolean[],
): ByteWriterFactory {
  const defs = selectedDefs(fields)
  const consts: Uint8Array[] = []
  const lines: string[] = []
  for (let c = 0; c < defs.length; c++) lines.push(`const c${c} = cols[${c}];`)
  const body: string[] = []
  let text = ''
  const flush = () => {
    if (text === '') return
    const b = Buffer.from(text, 'utf8')
    body.push(b.length === 1 ? `o.byte(${b[0]});` : `o.raw(K[${consts.length}]);`)
    if (b.length !== 1) consts.push(b)
    text = ''
  }
  const used = new Set<number>()
  if (fields.length === 0) text = '{'
  for (let k = 0; k < fields.length; k++) {
    const f = fields[k]
    const c = defs.indexOf(f.def)
    text += (k === 0 ? '{' : ',') + JSON.stringify(f.key) + ':'
    if (tokens[c]) {
      flush()
      body.push(`c${c}.write(i, o);`)
      continue
    }
    if (!used.has(c)) {
      body.push(`const v${c} = c${c}[i];`)
      used.add(c)
    }
    const v = `v${c}`
    const type = f.def.type
    const nullable = f.def.nullable || type === 'json'
    if (!nullable && type === 'u32') {
      flush()
      body.push(`o.uint(${v});`)
      continue
    }
    if (type === 'bool') {
      flush()
      const val = `o.raw(${v} ? TRUE : FALSE);`
      body.push(nullable ? `if (${v} === null || ${v} === undefined) o.raw(NUL); else ${val}` : val)
      continue
    }
    if (!nullable && (type === 'safeAscii' || ((type === 'u64' || type === 'i64') && !bigintsAsNumbers))) {
      text += '"'
      flush()
      body.push(`o.str('' + ${v});`)
      text += '"'
      continue
    }
    flush()
    const val = valueExpr(f.def, v, bigintsAsNumbers)
    body.push(nullable ? `if (${v} === null || ${v} === undefined) o.raw(NUL); else o.str(${val});` : `o.str(${val});`)
  }
  text += '}'
  flush()
  const src = `${lines.join('\n')}\nreturn function (i, o) {\n${body.join('\n')}\n}`
  const make = new Function('h', 'K', 'NUL', 'TRUE', 'FALSE', 'cols', src) as (
    h: typeof helpers,
    K: readonly Uint8Array[],
    nul: Uint8Array,
    yes: Uint8Array,
    no: Uint8Array,
    cols: readonly (ArrayLike<unknown> | JsonTokens)[],
  ) => ByteRowWriter
  return (cols) => make(helpers, consts, NULL_BYTES, TRUE_BYTES, FALSE_BYTES, cols)
}
