/**
 * JSON writers as bytes, compiled once per selection and way of taking each column: values
 * written as the string writers (render.ts) render them, stored JSON tokens copied (the cold store),
 * integers as digits in place, all into a `LineBuf`.
 */
import { digits, type JsonTokens, type LineBuf } from '../util/json-bytes.ts'
import { lowerBound } from '../util/search.ts'
import type { SelectedField } from './parse.ts'
import { helpers, MAX_WRITERS, selectedDefs, selectionKey, valueExpr } from './render-values.ts'

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

/**
 * The code of a byte writer being generated: the bindings made once per chunk (`lines`), the
 * statements run per row (`body`), the constant text waiting to be stored, and the room for the
 * fixed bytes of a whole row (`fixed`: constants, numbers, null/true/false), made at the start and
 * again after every piece of variable length, so fixed pieces need no check.
 */
class ByteCode {
  readonly lines: string[] = []
  readonly body: string[] = []
  fixed = 16
  text = ''
  readonly NUL: string
  readonly TRUE: string
  readonly FALSE: string
  readonly LEGACY: string

  constructor() {
    this.NUL = this.store(Buffer.from('null'))
    this.TRUE = this.store(Buffer.from('true'))
    this.FALSE = this.store(Buffer.from('false'))
    this.LEGACY = this.store(Buffer.from('"legacy"'))
  }

  room(n: string): string {
    return `if (p + ${n} > d.length) { o.pos = p; o.ensure(${n}); d = o.buf; dv = o.dv }`
  }

  /** a call that writes through `o`: position handed over and taken back */
  viaO(stmt: string): string {
    return `o.pos = p; ${stmt} d = o.buf; dv = o.dv; p = o.pos; ${this.room('F')}`
  }

  /** constant bytes as immediate 4-byte and 1-byte stores */
  store(b: Uint8Array): string {
    const n = b.length
    const out: string[] = []
    let j = 0
    for (; j + 4 <= n; j += 4)
      out.push(`dv.setUint32(p + ${j}, ${(b[j] | (b[j + 1] << 8) | (b[j + 2] << 16) | (b[j + 3] << 24)) >>> 0}, true);`)
    for (; j < n; j++) out.push(`d[p + ${j}] = ${b[j]};`)
    out.push(`p += ${n};`)
    this.fixed += n
    return out.join(' ')
  }

  /** the constant text so far, stored */
  flush(): void {
    if (this.text === '') return
    this.body.push(this.store(Buffer.from(this.text, 'utf8')))
    this.text = ''
  }

  /**
   * tokens a..e of the text X<c> (DataView V<c>, length L<c>): 8 bytes per step, the last step
   * reading and writing up to 7 bytes past the token (overwritten next; the room made covers them)
   * unless the token ends the text (`roomMade`: the caller made room for the token and F bytes).
   * The 8 bytes go through a float64 load and store: one each, where two 32-bit ones cost about
   * half as much again (a wide query's lists of accounts are most of its rendering). An engine
   * may only alter the bits of a NaN on the way, and no 8 bytes of UTF-8 text are one: a NaN's
   * high byte (the last, little-endian) is 0x7f or 0xff and the byte before it 0xf0-0xff, while in
   * UTF-8 0xff never occurs and a byte 0xf0-0xf4 is followed by one of 0x80-0xbf. The stored
   * texts are JSON tokens (UTF-8) and the bytes between them ASCII.
   */
  copy(c: number, a: string, e: string, roomMade = false): string {
    return (
      `{ const a = ${a}; const e = ${e}; ${roomMade ? '' : this.room('(e - a) + F')} ` +
      `if (e - a >= ${SET_BYTES}) { d.set(X${c}.subarray(a, e), p); p += e - a } ` +
      `else if (e + 7 <= L${c}) { for (let k = a, q = p; k < e; k += 8, q += 8) { ` +
      `dv.setFloat64(q, V${c}.getFloat64(k, true), true) } p += e - a } ` +
      `else { for (let k = a; k < e; k++) d[p++] = X${c}[k] } }`
    )
  }
}

/** the bindings of column c, taken as `take` (once per chunk) */
function bindColumn(code: ByteCode, c: number, take: ColumnTake): void {
  const lines = code.lines
  const bind = `const c${c} = cols[${c}];`
  if (typeof take !== 'string') {
    lines.push(bind)
    return
  }
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
}

/** the row's value of column c copied from its stored form (`formTag`) */
function storedValue(code: ByteCode, c: number, take: string): string {
  const { NUL } = code
  switch (take[0]) {
    case 'p':
      return code.copy(c, `T${c}[i]`, `T${c}[i + 1] - 1`)
    case 'd':
      return `{ const x = C${c}[i]; if (x === S${c}) { ${NUL} } else ${code.copy(c, `T${c}[x]`, `T${c}[x + 1] - 1`)} }`
    case 'l':
      // room for the whole list at once: its elements, each at most M<c> bytes and a comma
      return (
        `{ d[p++] = 91; const la = O${c}[i], le = O${c}[i + 1]; ${code.room(`(le - la) * M${c} + F`)} ` +
        `for (let j = la; j < le; j++) { ` +
        `if (j > la) d[p++] = 44; const x = C${c}[j]; ${code.copy(c, `T${c}[x]`, `T${c}[x + 1] - 1`, true)} } d[p++] = 93 }`
      )
    case 'a':
      return (
        `{ d[p++] = 91; const la = O${c}[i], le = O${c}[i + 1]; for (let j = la; j < le; j++) { ` +
        `if (j > la) d[p++] = 44; ${code.room('F')} p = digits(d, p, E${c}[j]) } d[p++] = 93 }`
      )
    case 'k':
      // the row found after the previous one (rows are mostly written in ascending order) or
      // by a binary search, copied inline; a row not kept yet through the column's `write`
      return (
        `{ let k = K${c}; if (k >= RN${c} || R${c}[k] !== i) { k = lowerBound(R${c}, i, 0, RN${c}); if (k < RN${c} && R${c}[k] !== i) k = RN${c} } ` +
        `if (k < RN${c}) { K${c} = k + 1; const a = O${c}[k], e = O${c}[k + 1], w = B${c}[k]; ${code.room('(e - a) + F')} ` +
        `if (w !== undefined) { d.set(w, p); p += e - a } ` +
        `else if (e + 7 <= L${c}) { for (let x = a, q = p; x < e; x += 8, q += 8) { ` +
        `dv.setFloat64(q, V${c}.getFloat64(x, true), true) } p += e - a } ` +
        `else { for (let x = a; x < e; x++) d[p++] = X${c}[x] } } ` +
        `else { ${code.viaO(`c${c}.write(i, o);`)} } }`
      )
    case 'i': {
      const nullable = take.includes('?')
      const q = take.includes('q') ? 'd[p++] = 34;' : ''
      const small = take.endsWith('s') ? 1 : 0x200000
      const val =
        `{ ${q} const hi = W${c}[2 * i + 1]; if (hi < ${small}) p = digits(d, p, hi * 4294967296 + W${c}[2 * i]); ` +
        `else { ${code.viaO(`o.str('' + B${c}[i]);`)} } ${q} }`
      return nullable ? `if (N${c}[i] === 0) { ${NUL} } else ${val}` : val
    }
    default:
      throw new Error(`unknown token form ${take}`)
  }
}

/** the row's value `v<c>` of field `def` written from the column's values */
function valueOf(code: ByteCode, def: SelectedField['def'], c: number, bigintsAsNumbers: boolean): void {
  const { body, NUL } = code
  const v = `v${c}`
  if (!body.some((b) => b.startsWith(`const ${v} =`))) body.push(`const ${v} = c${c}[i];`)
  const type = def.type
  const nullable = def.nullable || type === 'json'
  const orNull = (val: string) => (nullable ? `if (${v} === null || ${v} === undefined) { ${NUL} } else ${val}` : val)
  // integers in place (as string conversion writes them); `version`'s 'legacy' as a constant
  const int = `${v} >= 0 && ${v} <= 9007199254740991 && ${v} === Math.floor(${v})`
  if (type === 'u32') {
    code.flush()
    body.push(orNull(`if (${int}) p = digits(d, p, ${v}); else { ${code.viaO(`o.str('' + ${v});`)} }`))
  } else if (type === 'version') {
    code.flush()
    const val =
      `if (typeof ${v} === 'number' && ${int}) p = digits(d, p, ${v}); ` +
      `else if (${v} === 'legacy') { ${code.LEGACY} } else { ${code.viaO(`o.str(${valueExpr(def, v, bigintsAsNumbers)});`)} }`
    body.push(nullable ? `if (${v} === null || ${v} === undefined) { ${NUL} } else { ${val} }` : val)
  } else if (type === 'bool') {
    code.flush()
    body.push(orNull(`if (${v}) { ${code.TRUE} } else { ${code.FALSE} }`))
  } else if (!nullable && (type === 'safeAscii' || ((type === 'u64' || type === 'i64') && !bigintsAsNumbers))) {
    code.text += '"'
    code.flush()
    body.push(code.viaO(`o.str('' + ${v});`))
    code.text += '"'
  } else {
    code.flush()
    const val = valueExpr(def, v, bigintsAsNumbers)
    body.push(
      nullable
        ? `if (${v} === null || ${v} === undefined) { ${NUL} } else { ${code.viaO(`o.str(${val});`)} }`
        : code.viaO(`o.str(${val});`),
    )
  }
}

function compileBytes(
  fields: readonly SelectedField[],
  bigintsAsNumbers: boolean,
  takes: readonly ColumnTake[],
): ByteWriterFactory {
  const defs = selectedDefs(fields)
  const code = new ByteCode()
  const used = new Set<number>()
  if (fields.length === 0) code.text = '{'
  for (let k = 0; k < fields.length; k++) {
    const f = fields[k]
    const c = defs.indexOf(f.def)
    code.text += (k === 0 ? '{' : ',') + JSON.stringify(f.key) + ':'
    code.fixed += 24
    const take = takes[c]
    if (!used.has(c)) {
      used.add(c)
      bindColumn(code, c, take)
    }
    if (typeof take === 'string') {
      code.flush()
      code.body.push(storedValue(code, c, take))
    } else if (take === true) {
      code.flush()
      code.body.push(code.viaO(`c${c}.write(i, o);`))
    } else valueOf(code, f.def, c, bigintsAsNumbers)
  }
  code.text += '}'
  code.flush()
  const src =
    `${code.lines.join('\n')}\nconst F = ${code.fixed};\nreturn function (i, o) {\nlet d = o.buf, dv = o.dv, p = o.pos;\n${code.room('F')}\n` +
    `${code.body.join('\n')}\no.pos = p;\n}`
  const make = new Function('h', 'digits', 'lowerBound', 'listStep', 'cols', src) as (
    h: typeof helpers,
    dig: typeof digits,
    lb: typeof lowerBound,
    ls: typeof listStep,
    cols: readonly (ArrayLike<unknown> | JsonTokens)[],
  ) => ByteRowWriter
  return (cols) => make(helpers, digits, lowerBound, listStep, cols)
}
