/**
 * Output of a chunk's selected rows: the columns to render them from (values, or stored JSON
 * tokens copied as bytes), the writers bound to them, and the line of each block written as bytes
 * (`ByteLine`, into a reused `LineBuf`) or as a string (`StringLine`) by the one render loop of
 * execute.ts.
 */
import type { FieldDef } from '../dataset/types.ts'
import type { Chunk, Table } from '../store/chunk.ts'
import { formTag, LineBuf, recycleLine, type JsonTokens } from '../util/json-bytes.ts'
import type { ChunkRun } from './chunk-run.ts'
import type { OutputBlock } from './execute.ts'
import { byteWriterOf, type Plan } from './plan.ts'
import type { ByteRowWriter, ColumnTake, RowWriter } from './render.ts'
import { SPARSE, type Selected } from './select.ts'
import type { Slicer } from './slicer.ts'

const HEADER_OPEN = Buffer.from('{"header":')
const noWriter: RowWriter = () => {
  throw new Error('string writer of a chunk rendered as bytes')
}

/** a kind's selected rows of one chunk, bound to their writers */
export interface BoundKind {
  open: string
  mask: Uint8Array
  base: number
  /** the selected rows ascending when few (then output visits them only), else null */
  rows: Int32Array | null
  /** next position in rows */
  p: number
  offsets: ArrayLike<number>
  write: RowWriter
  /** byte output: `open` as bytes and the byte writer (null in string output) */
  openBytes: Uint8Array | null
  writeBytes: ByteRowWriter | null
}

/** The line of a block being written: its header, then each bound kind's rows. */
export interface Line {
  /** start block position b's line */
  begin(b: number): void
  /** a row of `bk`; `open`: a row of it was written before in this block */
  row(bk: BoundKind, r: number, open: boolean): void
  /** end of the current kind's list (written only when it has a row) */
  endList(): void
  /** end of the line; true when it holds no row */
  end(): boolean
  /** the line ended last as an output block */
  take(number: number, hash: string, empty: boolean): OutputBlock
}

/** lines as bytes, written into one reused `LineBuf` */
export class ByteLine implements Line {
  private buf: LineBuf | null = null
  private header: ByteRowWriter = () => {}
  private headerEnd = 0

  /** bind to a chunk's header columns */
  bind(header: ByteRowWriter): this {
    this.header = header
    return this
  }

  begin(b: number): void {
    const o = (this.buf ??= new LineBuf())
    o.begin()
    o.raw(HEADER_OPEN)
    this.header(b, o)
    this.headerEnd = o.pos
  }

  row(bk: BoundKind, r: number, open: boolean): void {
    const o = this.buf!
    if (open) o.byte(0x2c)
    else o.raw(bk.openBytes!)
    bk.writeBytes!(r, o)
  }

  endList(): void {
    this.buf!.byte(0x5d)
  }

  end(): boolean {
    const o = this.buf!
    o.byte(0x7d)
    return o.pos === this.headerEnd + 1
  }

  take(number: number, hash: string, empty: boolean): OutputBlock {
    return new ByteBlock(number, hash, this.buf!.takeLine(), empty)
  }

  /** the lines' memory comes back once they are written (src/server/line-writer.ts) */
  release(): void {
    this.buf?.close()
  }
}

/** lines as strings: the rows' text concatenated */
export class StringLine implements Line {
  private header: RowWriter = noWriter
  private b = 0
  private body = ''

  /** bind to a chunk's header columns */
  bind(header: RowWriter): this {
    this.header = header
    return this
  }

  begin(b: number): void {
    this.b = b
    this.body = ''
  }

  row(bk: BoundKind, r: number, open: boolean): void {
    this.body += (open ? ',' : bk.open) + bk.write(r)
  }

  endList(): void {
    this.body += ']'
  }

  end(): boolean {
    return this.body === ''
  }

  take(number: number, hash: string, empty: boolean): OutputBlock {
    return { number, hash, line: '{"header":' + this.header(this.b) + this.body + '}', empty }
  }
}

/** A chunk's selected rows bound for output, and the line writer to use. */
export interface ChunkOutput {
  bound: BoundKind[]
  line: Line
  /** the columns of this chunk's render (`done` once its blocks are written) */
  used: (ArrayLike<unknown> | JsonTokens)[]
}

/**
 * Bind the selected rows of each kind to the columns they render from and their writers: as bytes
 * when every rendered table can hand over stored JSON tokens (the cold store; the in-memory
 * tables' values are then written as bytes too), else as strings. null = stop (a pause said so).
 */
export async function bindChunk(
  run: ChunkRun,
  plan: Plan,
  lines: { bytes: ByteLine; text: StringLine },
  slicer: Slicer,
  bigints: boolean,
): Promise<ChunkOutput | null> {
  const { bLo, bHi, chunk } = run
  let bytes = true
  for (const kp of plan.kinds) {
    const s = run.selected.get(kp.kind)
    if (s && s.any && run.table(kp.kind).tokens === undefined) bytes = false
  }
  const bound: BoundKind[] = []
  const used: (ArrayLike<unknown> | JsonTokens)[] = []
  for (const kp of plan.kinds) {
    const s = run.selected.get(kp.kind)
    if (!s || !s.any) continue
    const t = run.table(kp.kind)
    const lo = t.blockOffsets[bLo]
    const cols = await renderColumns(t, kp.defs, s, lo, t.blockOffsets[bHi], slicer, bytes, bigints)
    if (cols === null) return null
    used.push(...cols)
    bound.push({
      open: kp.open,
      mask: s.mask,
      base: s.base,
      rows: s.sorted(),
      p: 0,
      offsets: t.blockOffsets,
      write: bytes ? noWriter : kp.writer(cols as ArrayLike<unknown>[]),
      openBytes: bytes ? kp.openBytes : null,
      writeBytes: bytes ? byteWriterOf(kp, bigints, cols.map(takeOf))(cols) : null,
    })
  }
  const headerCols = headerColumns(chunk, plan.headerDefs)
  const line = bytes ? lines.bytes.bind(plan.headerBytes(headerCols)) : lines.text.bind(plan.headerWriter(headerCols))
  return { bound, line, used }
}

function headerColumns(chunk: Chunk, defs: readonly FieldDef[]): ArrayLike<unknown>[] {
  return defs.map((d) => chunk.header(d.name as 'number'))
}

/**
 * the columns for rendering the selected rows of `t` in [lo, hi) (decoding a column is a piece of
 * work of its own: a pause may come between columns); null = stop
 */
async function renderColumns(
  t: Table,
  defs: readonly FieldDef[],
  s: Selected,
  lo: number,
  hi: number,
  slicer: Slicer,
  /** take a column's stored JSON tokens where the table has them (byte output) */
  tokens: boolean,
  bigintsAsNumbers: boolean,
): Promise<(ArrayLike<unknown> | JsonTokens)[] | null> {
  let few = false
  let count = 0
  if (t.rowView !== undefined && s.list !== null) {
    count = s.count
    few = count < (hi - lo) / SPARSE
  } else if (t.rowView !== undefined) {
    const m = s.mask
    const limit = (hi - lo) / SPARSE
    for (let x = lo - s.base, end = hi - s.base; x < end && count < limit; x++) count += m[x]
    few = count < limit
  }
  const out: (ArrayLike<unknown> | JsonTokens)[] = []
  for (const d of defs) {
    if (slicer.due && !(await slicer.take())) return null
    out.push(
      (few
        ? ((tokens ? (t.rowTokens?.(d.name, count, bigintsAsNumbers) ?? null) : null) ?? t.rowView!(d.name, count))
        : tokens
          ? t.tokens!(d.name, bigintsAsNumbers)
          : null) ?? t.column(d.name),
    )
  }
  return out
}

export function isTokens(c: ArrayLike<unknown> | JsonTokens): c is JsonTokens {
  return typeof (c as JsonTokens).write === 'function'
}

/** how the byte writer takes a column: its values, its tokens' `write`, or their stored form inline */
function takeOf(c: ArrayLike<unknown> | JsonTokens): ColumnTake {
  if (!isTokens(c)) return false
  return c.form === undefined ? true : formTag(c.form)
}

/**
 * A block rendered as bytes (the cold store's tokens copied): `data` is its line and newline (as a
 * render worker's block carries them: the response writer takes them as they are), `bytes` the
 * line; `line`, the same as a string, is decoded only when read. Setting `line` or `data` drops
 * the bytes (a consumer done with them).
 */
class ByteBlock implements OutputBlock {
  private text: string | null = null
  /** the line without its newline, once asked for (`bytes`), or dropped (undefined) */
  private view: Buffer | null | undefined = null
  private full: Buffer

  constructor(
    readonly number: number,
    readonly hash: string,
    /** the line and its newline */
    data: Buffer,
    readonly empty: boolean,
  ) {
    this.full = data
  }

  /** the line (a view of `data` made when first read: the server writes `data` only) */
  get bytes(): Buffer | undefined {
    if (this.view === null) this.view = this.full.subarray(0, this.full.length - 1)
    return this.view
  }

  set bytes(v: Buffer | undefined) {
    this.view = v
  }

  get data(): Buffer {
    return this.full
  }

  set data(v: Buffer) {
    this.full = v
    this.view = undefined
    this.text = null
  }

  get line(): string {
    if (this.text === null) {
      const b = this.bytes
      this.text = b === undefined ? '' : b.toString('utf8')
    }
    return this.text
  }

  set line(v: string) {
    this.text = v
    this.view = undefined
    this.full = NO_BYTES
  }
}

const NO_BYTES = Buffer.alloc(0)

/**
 * A block held back and not handed out after all: its line's bytes go back to their line buffer
 * (`recycleLine`), which is reused once its other lines are back too; null.
 */
export function drop(b: OutputBlock): null {
  if (b instanceof ByteBlock) recycleLine(b.data)
  return null
}
