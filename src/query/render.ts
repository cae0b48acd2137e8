/**
 * JSON writers compiled once per (kind, selection) from the catalogue: straight string building,
 * no intermediate objects (docs/query.md §3).
 */
import type { FieldDef } from '../catalogue.ts'
import { digits, type JsonTokens, type LineBuf } from '../util/json-bytes.ts'
import type { SelectedField } from './parse.ts'
import { lowerBound } from '../util/search.ts'
import type { TransactionConfig } from '../model.ts'

/** Writes one record (row `i` of the bound columns) as a JSON object. */
export type RowWriter = (i: number) => string
/** Binds a writer to the columns of one chunk, given in the order of `fields`. */
export type WriterFactory = (columns: readonly ArrayLike<unknown>[]) => RowWriter

function list(v: readonly string[]): string {
  return v.length === 0 ? '[]' : '["' + v.join('","') + '"]'
}

function isIntOrNull(v: unknown): boolean {
  return v === null || (typeof v === 'number' && Number.isSafeInteger(v))
}

/**
 * JSON text of objects rendered before: a stored json column's rows share the values its
 * dictionary parsed once (a transaction's `err`), so each is stringified once, not per row and
 * run. Values are never changed once built.
 */
const JSON_TEXT = new WeakMap<object, string>()

const helpers = {
  json(v: unknown): string {
    if (v === undefined || v === null) return 'null'
    if (typeof v !== 'object') return JSON.stringify(v)
    let t = JSON_TEXT.get(v)
    if (t === undefined) JSON_TEXT.set(v, (t = JSON.stringify(v)))
    return t
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
  /**
   * `transactionConfig` (model TransactionConfig: integers checked by the normalizer), key order
   * of src/model.ts; `priorityFee` (a u64 held as a decimal string) as the other amounts: quoted,
   * or bare with bigintsAsNumbers
   */
  transactionConfig(v: TransactionConfig, bigintsAsNumbers: boolean): string {
    const fee = v.priorityFee
    if (
      !isIntOrNull(v.computeUnitLimit) ||
      !isIntOrNull(v.heapSize) ||
      !isIntOrNull(v.loadedAccountsDataSizeLimit) ||
      (fee !== null && (typeof fee !== 'string' || !/^[0-9]+$/.test(fee)))
    ) {
      return JSON.stringify(v)
    }
    return (
      '{"computeUnitLimit":' +
      v.computeUnitLimit +
      ',"heapSize":' +
      v.heapSize +
      ',"loadedAccountsDataSizeLimit":' +
      v.loadedAccountsDataSizeLimit +
      ',"priorityFee":' +
      (fee === null ? 'null' : bigintsAsNumbers ? fee : '"' + fee + '"') +
      '}'
    )
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
  if (type === 'json' && def.name === 'transactionConfig') return `h.transactionConfig(${v}, ${bigintsAsNumbers})`
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

/**
 * How a compiled byte writer takes each column: `false` its values, `true` its JSON tokens through
 * `JsonTokens.write`, a string (`formTag` of `JsonTokens.form`) its stored form copied inline.
 */
export type ColumnTake = boolean | string

/**
 * Compile (once per selection and way of taking each column) a writer of records as bytes. The
 * generated code keeps the buffer and the position in locals: keys and punctuation are stored as
 * immediate 4-byte and 1-byte stores, stored tokens are copied 8 bytes at a time, integers are
 * written as digits in place; other values are rendered as the string writer does and encoded.
 * Same text as `compileWriter` for the same values.
 */
export function compileByteWriter(
  fields: readonly SelectedField[],
  bigintsAsNumbers: boolean,
  takes: readonly ColumnTake[],
): ByteWriterFactory {
  const key =
    selectionKey(fields, bigintsAsNumbers) +
    '\u0002' +
    takes.map((t) => (t === false ? '-' : t === true ? '+' : t)).join(',')
  let w = BYTE_WRITERS.get(key)
  if (w === undefined) {
    w = compileBytes(fields, bigintsAsNumbers, takes)
    if (BYTE_WRITERS.size >= MAX_WRITERS) BYTE_WRITERS.delete(BYTE_WRITERS.keys().next().value as string)
    BYTE_WRITERS.set(key, w)
  }
  return w
}

/** `listStep` by token offsets (a column's dictionary, bound once per chunk and query) */
const LIST_STEPS = new WeakMap<Uint32Array, number>()

/**
 * The most bytes a list element of a dictionary with token offsets `toff` takes, its comma
 * included: the longest token (token k is bytes [toff[k], toff[k + 1] - 1)) and one byte.
 */
export function listStep(toff: Uint32Array): number {
  let m = LIST_STEPS.get(toff)
  if (m === undefined) {
    m = 0
    for (let k = 0; k + 1 < toff.length; k++) if (toff[k + 1] - toff[k] > m) m = toff[k + 1] - toff[k]
    LIST_STEPS.set(toff, m)
  }
  return m
}

/** tokens of at least this many bytes are copied by `TypedArray.set` (a view costs about as much as copying them 8 bytes at a time) */
const SET_BYTES = 160

function compileBytes(
  fields: readonly SelectedField[],
  bigintsAsNumbers: boolean,
  takes: readonly ColumnTake[],
): ByteWriterFactory {
  const defs = selectedDefs(fields)
  const lines: string[] = []
  const body: string[] = []
  // room for the fixed bytes of a whole row (constants, numbers, null/true/false) is made at the
  // start and again after every piece of variable length, so fixed pieces need no check
  let fixed = 16
  const room = (n: string) => `if (p + ${n} > d.length) { o.pos = p; o.ensure(${n}); d = o.buf; dv = o.dv }`
  // a call that writes through `o`: position handed over and taken back
  const viaO = (stmt: string) => `o.pos = p; ${stmt} d = o.buf; dv = o.dv; p = o.pos; ${room('F')}`
  const store = (b: Uint8Array) => {
    const n = b.length
    const out: string[] = []
    let j = 0
    for (; j + 4 <= n; j += 4)
      out.push(`dv.setUint32(p + ${j}, ${(b[j] | (b[j + 1] << 8) | (b[j + 2] << 16) | (b[j + 3] << 24)) >>> 0}, true);`)
    for (; j < n; j++) out.push(`d[p + ${j}] = ${b[j]};`)
    out.push(`p += ${n};`)
    fixed += n
    return out.join(' ')
  }
  let text = ''
  const flush = () => {
    if (text === '') return
    body.push(store(Buffer.from(text, 'utf8')))
    text = ''
  }
  const NUL = store(Buffer.from('null'))
  const TRUE = store(Buffer.from('true'))
  const FALSE = store(Buffer.from('false'))
  const LEGACY = store(Buffer.from('"legacy"'))
  // tokens a..e of the text X<c> (DataView V<c>, length L<c>): 8 bytes per step, the last step
  // reading and writing up to 7 bytes past the token (overwritten next; the room made covers them)
  // unless the token ends the text (`roomMade`: the caller made room for the token and F bytes).
  // The 8 bytes go through a float64 load and store: one each, where two 32-bit ones cost about
  // half as much again (a wide query's lists of accounts are most of its rendering). An engine
  // may only alter the bits of a NaN on the way, and no 8 bytes of UTF-8 text are one: a NaN's
  // high byte (the last, little-endian) is 0x7f or 0xff and the byte before it 0xf0-0xff, while in
  // UTF-8 0xff never occurs and a byte 0xf0-0xf4 is followed by one of 0x80-0xbf. The stored
  // texts are JSON tokens (UTF-8) and the bytes between them ASCII.
  const copy = (c: number, a: string, e: string, roomMade = false) =>
    `{ const a = ${a}; const e = ${e}; ${roomMade ? '' : room('(e - a) + F')} ` +
    `if (e - a >= ${SET_BYTES}) { d.set(X${c}.subarray(a, e), p); p += e - a } ` +
    `else if (e + 7 <= L${c}) { for (let k = a, q = p; k < e; k += 8, q += 8) { ` +
    `dv.setFloat64(q, V${c}.getFloat64(k, true), true) } p += e - a } ` +
    `else { for (let k = a; k < e; k++) d[p++] = X${c}[k] } }`
  const used = new Set<number>()
  if (fields.length === 0) text = '{'
  for (let k = 0; k < fields.length; k++) {
    const f = fields[k]
    const c = defs.indexOf(f.def)
    text += (k === 0 ? '{' : ',') + JSON.stringify(f.key) + ':'
    fixed += 24
    const take = takes[c]
    if (!used.has(c)) {
      used.add(c)
      const bind = `const c${c} = cols[${c}];`
      if (typeof take === 'string') {
        lines.push(`${bind} const f${c} = c${c}.form;`)
        const kind = take[0]
        if (kind === 'p' || kind === 'd' || kind === 'l')
          lines.push(`const X${c} = f${c}.text, V${c} = f${c}.tv, T${c} = f${c}.toff, L${c} = X${c}.length;`)
        if (kind === 'd') lines.push(`const C${c} = f${c}.codes, S${c} = f${c}.size;`)
        if (kind === 'l') lines.push(`const C${c} = f${c}.codes, O${c} = f${c}.off, M${c} = listStep(T${c});`)
        if (kind === 'a') lines.push(`const E${c} = f${c}.el, O${c} = f${c}.off;`)
        if (kind === 'i') lines.push(`const W${c} = f${c}.w32, B${c} = f${c}.big, N${c} = f${c}.valid;`)
        if (kind === 'k')
          lines.push(
            `const R${c} = f${c}.rows, O${c} = f${c}.offs, X${c} = f${c}.bytes, V${c} = f${c}.view, ` +
              `B${c} = f${c}.big, L${c} = X${c}.length, RN${c} = R${c}.length; let K${c} = 0;`,
          )
      } else lines.push(bind)
    }
    if (typeof take === 'string') {
      flush()
      switch (take[0]) {
        case 'p':
          body.push(copy(c, `T${c}[i]`, `T${c}[i + 1] - 1`))
          break
        case 'd':
          body.push(
            `{ const x = C${c}[i]; if (x === S${c}) { ${NUL} } else ${copy(c, `T${c}[x]`, `T${c}[x + 1] - 1`)} }`,
          )
          break
        case 'l':
          body.push(
            // room for the whole list at once: its elements, each at most M<c> bytes and a comma
            `{ d[p++] = 91; const la = O${c}[i], le = O${c}[i + 1]; ${room(`(le - la) * M${c} + F`)} ` +
              `for (let j = la; j < le; j++) { ` +
              `if (j > la) d[p++] = 44; const x = C${c}[j]; ${copy(c, `T${c}[x]`, `T${c}[x + 1] - 1`, true)} } d[p++] = 93 }`,
          )
          break
        case 'a':
          body.push(
            `{ d[p++] = 91; const la = O${c}[i], le = O${c}[i + 1]; for (let j = la; j < le; j++) { ` +
              `if (j > la) d[p++] = 44; ${room('F')} p = digits(d, p, E${c}[j]) } d[p++] = 93 }`,
          )
          break
        case 'k':
          // the row found after the previous one (rows are mostly written in ascending order) or
          // by a binary search, copied inline; a row not kept yet through the column's `write`
          body.push(
            `{ let k = K${c}; if (k >= RN${c} || R${c}[k] !== i) { k = lowerBound(R${c}, i, 0, RN${c}); if (k < RN${c} && R${c}[k] !== i) k = RN${c} } ` +
              `if (k < RN${c}) { K${c} = k + 1; const a = O${c}[k], e = O${c}[k + 1], w = B${c}[k]; ${room('(e - a) + F')} ` +
              `if (w !== undefined) { d.set(w, p); p += e - a } ` +
              `else if (e + 7 <= L${c}) { for (let x = a, q = p; x < e; x += 8, q += 8) { ` +
              `dv.setFloat64(q, V${c}.getFloat64(x, true), true) } p += e - a } ` +
              `else { for (let x = a; x < e; x++) d[p++] = X${c}[x] } } ` +
              `else { ${viaO(`c${c}.write(i, o);`)} } }`,
          )
          break
        case 'i': {
          const nullable = take.includes('?')
          const q = take.includes('q') ? 'd[p++] = 34;' : ''
          const small = take.endsWith('s') ? 1 : 0x200000
          const val =
            `{ ${q} const hi = W${c}[2 * i + 1]; if (hi < ${small}) p = digits(d, p, hi * 4294967296 + W${c}[2 * i]); ` +
            `else { ${viaO(`o.str('' + B${c}[i]);`)} } ${q} }`
          body.push(nullable ? `if (N${c}[i] === 0) { ${NUL} } else ${val}` : val)
          break
        }
        default:
          throw new Error(`unknown token form ${take}`)
      }
      continue
    }
    if (take === true) {
      flush()
      body.push(viaO(`c${c}.write(i, o);`))
      continue
    }
    const v = `v${c}`
    if (!body.some((b) => b.startsWith(`const ${v} =`))) body.push(`const ${v} = c${c}[i];`)
    const type = f.def.type
    const nullable = f.def.nullable || type === 'json'
    // integers in place (as string conversion writes them); `version`'s 'legacy' as a constant
    const int = `${v} >= 0 && ${v} <= 9007199254740991 && ${v} === Math.floor(${v})`
    if (type === 'u32') {
      flush()
      const val = `if (${int}) p = digits(d, p, ${v}); else { ${viaO(`o.str('' + ${v});`)} }`
      body.push(nullable ? `if (${v} === null || ${v} === undefined) { ${NUL} } else ${val}` : val)
      continue
    }
    if (type === 'version') {
      flush()
      const val =
        `if (typeof ${v} === 'number' && ${int}) p = digits(d, p, ${v}); ` +
        `else if (${v} === 'legacy') { ${LEGACY} } else { ${viaO(`o.str(${valueExpr(f.def, v, bigintsAsNumbers)});`)} }`
      body.push(nullable ? `if (${v} === null || ${v} === undefined) { ${NUL} } else { ${val} }` : val)
      continue
    }
    if (type === 'bool') {
      flush()
      const val = `if (${v}) { ${TRUE} } else { ${FALSE} }`
      body.push(nullable ? `if (${v} === null || ${v} === undefined) { ${NUL} } else ${val}` : val)
      continue
    }
    if (!nullable && (type === 'safeAscii' || ((type === 'u64' || type === 'i64') && !bigintsAsNumbers))) {
      text += '"'
      flush()
      body.push(viaO(`o.str('' + ${v});`))
      text += '"'
      continue
    }
    flush()
    const val = valueExpr(f.def, v, bigintsAsNumbers)
    body.push(
      nullable
        ? `if (${v} === null || ${v} === undefined) { ${NUL} } else { ${viaO(`o.str(${val});`)} }`
        : viaO(`o.str(${val});`),
    )
  }
  text += '}'
  flush()
  const src =
    `${lines.join('\n')}\nconst F = ${fixed};\nreturn function (i, o) {\nlet d = o.buf, dv = o.dv, p = o.pos;\n${room('F')}\n` +
    `${body.join('\n')}\no.pos = p;\n}`
  const make = new Function('h', 'digits', 'lowerBound', 'listStep', 'cols', src) as (
    h: typeof helpers,
    dig: typeof digits,
    lb: typeof lowerBound,
    ls: typeof listStep,
    cols: readonly (ArrayLike<unknown> | JsonTokens)[],
  ) => ByteRowWriter
  return (cols) => make(helpers, digits, lowerBound, listStep, cols)
}
