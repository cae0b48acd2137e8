/**
 * The byte form of the JSON writer: a growable buffer a block's line is written into, and the
 * interface through which a store hands over values already in their JSON form (the cold store
 * keeps string and list values as escaped JSON tokens: they are copied as bytes, never decoded
 * into JS strings and encoded again).
 */

/**
 * A growable byte buffer holding the line of the block being rendered, after the lines taken
 * from it before (handed out as views: consecutive lines are consecutive bytes of one buffer, which
 * the response writer sends as one piece).
 */
export class LineBuf {
  buf: Buffer
  /** a view of `buf` for 4- and 8-byte stores (the compiled writers copy tokens 8 bytes at a time) */
  dv: DataView
  pos = 0
  /** where the line being written starts (`begin`): the bytes before it are lines taken */
  start = 0

  /** the lines taken from `buf` and those given back (see `recycleLine`) */
  private lent: Lent

  constructor(size = 1 << 16) {
    this.buf = spareBuffer(size) ?? Buffer.allocUnsafeSlow(size)
    this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length)
    this.lent = lend(this.buf)
  }

  /** room for `n` more bytes */
  ensure(n: number): void {
    const need = this.pos + n
    if (need <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < need) size *= 2
    const b = Buffer.allocUnsafeSlow(size)
    // the line being written keeps its positions (writers hold them); the lines taken before it
    // stay where their views are
    this.buf.copy(b, this.start, this.start, this.pos)
    leave(this.buf, this.lent)
    this.buf = b
    this.dv = new DataView(b.buffer, b.byteOffset, b.length)
    this.lent = lend(b)
  }

  /** constant bytes (pre-encoded keys and punctuation) */
  raw(k: Uint8Array): void {
    const n = k.length
    if (this.pos + n > this.buf.length) this.ensure(n)
    if (n < 32) {
      // short constants (keys): a loop costs less than the call into set()
      const d = this.buf
      let p = this.pos
      for (let i = 0; i < n; i++) d[p++] = k[i]
    } else this.buf.set(k, this.pos)
    this.pos += n
  }

  byte(c: number): void {
    if (this.pos >= this.buf.length) this.ensure(1)
    this.buf[this.pos++] = c
  }

  /** bytes [a, b) of `src` */
  copy(src: Uint8Array, a: number, b: number): void {
    const n = b - a
    this.ensure(n)
    // the whole of src: one set, no view to make (about as cheap as copying 8 bytes in a loop)
    if (a === 0 && b === src.length && n >= 8) this.buf.set(src, this.pos)
    else if (n < 48) {
      const d = this.buf
      let p = this.pos
      for (let i = a; i < b; i++) d[p++] = src[i]
    } else this.buf.set(src.subarray(a, b), this.pos)
    this.pos += n
  }

  /** a string as UTF-8 */
  str(s: string): void {
    this.ensure(s.length * 3)
    this.pos += this.buf.write(s, this.pos, 'utf8')
  }

  /** a non-negative integer up to 2^53 in decimal (anything else as JS converts it to a string) */
  uint(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && v === Math.floor(v))) return this.str('' + v)
    if (this.pos + 16 > this.buf.length) this.ensure(16)
    this.pos = digits(this.buf, this.pos, v)
  }

  /**
   * No more lines: the buffer is left to the views of the lines taken (given back with them, see
   * `recycleLine`). The LineBuf is not used after this.
   */
  close(): void {
    leave(this.buf, this.lent)
  }

  /** start a line (after the lines taken) */
  begin(): void {
    this.pos = this.start
  }

  /**
   * The line written since `begin` and its newline, as a view the buffer no longer writes to: the
   * next line follows it in the same buffer, or goes to a fresh one once this one holds SEGMENT
   * bytes or the line is HANDOVER bytes or more (the buffer is then left to the views).
   */
  takeLine(): Buffer {
    this.byte(0x0a)
    const n = this.pos - this.start
    const out = this.buf.subarray(this.start, this.pos)
    this.lent.taken += n
    if (n >= HANDOVER || this.pos >= SEGMENT) {
      // the buffer is left to its lines' views: it may come back (`recycleLine`) once they are
      // all written
      leave(this.buf, this.lent)
      const size = n >= HANDOVER ? n + (n >>> 2) : SEGMENT + HANDOVER
      this.buf = spareBuffer(size) ?? Buffer.allocUnsafeSlow(size)
      this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length)
      this.lent = lend(this.buf)
      this.pos = 0
    }
    this.start = this.pos
    return out
  }
}

/**
 * The memory of lines (`takeLine`: a big line has a buffer of its own, smaller ones share one of
 * about SEGMENT bytes) that their consumer gave back once done with every byte (`recycleLine`),
 * for the lines rendered next: a wide query writes a buffer of ~1 MB per block, a selective one
 * a SEGMENT buffer every few dozen blocks, and fresh memory costs its allocation, the kernel's
 * page faults on first write and garbage collections for the external memory (V8 runs a
 * scavenge every few MB of it). At most SPARE_BYTES are kept.
 */
const spare: ArrayBuffer[] = []
let spareBytes = 0
const SPARE_BYTES = 16 << 20
/** counters for tests: line buffers given back, and reused for a later line */
export const lineStats = { recycled: 0, reused: 0 }

/** bytes of the lines taken from a line buffer, of those given back, and whether it was left */
interface Lent {
  taken: number
  back: number
  left: boolean
  /** where the memory goes once every line is back (default: this thread's spare buffers) */
  onBack?: (ab: ArrayBuffer) => void
}

/** line buffers whose lines may come back, by their memory */
const LENT = new WeakMap<ArrayBufferLike, Lent>()

/** a new line buffer (its own memory, from its start: as allocUnsafeSlow and spareBuffer make them) */
function lend(buf: Buffer): Lent {
  const l: Lent = { taken: 0, back: 0, left: false }
  LENT.set(buf.buffer, l)
  return l
}

/** the LineBuf writes no more into `buf`: it is spare once every line taken from it is back */
function leave(buf: Buffer, l: Lent): void {
  l.left = true
  if (l.back === l.taken) giveBack(buf.buffer, l)
}

function giveBack(ab: ArrayBufferLike, l: Lent): void {
  LENT.delete(ab)
  if (l.onBack) return l.onBack(ab as ArrayBuffer)
  if (l.taken !== 0) spareLines(ab as ArrayBuffer)
}

/**
 * Memory for later line buffers (and `spareBuffer` takers): a line buffer whose lines are all back,
 * or memory that held lines another thread was given (see `adoptLines`). Kept up to SPARE_BYTES in
 * all, the oldest dropped first.
 */
export function spareLines(ab: ArrayBuffer): void {
  if (ab.byteLength > SPARE_BYTES || ab.byteLength === 0) return
  while (spareBytes + ab.byteLength > SPARE_BYTES) spareBytes -= spare.shift()!.byteLength
  spare.push(ab as ArrayBuffer)
  spareBytes += ab.byteLength
  lineStats.recycled++
}

/**
 * Lines another thread rendered into `ab` (its first `taken` bytes), handed to a consumer that gives
 * them back with `recycleLine` as the engine's own: once all are back, `onBack` gets the memory
 * (to return it to the thread that rendered them). The caller holds no other view of `ab`.
 */
export function adoptLines(ab: ArrayBuffer, taken: number, onBack: (ab: ArrayBuffer) => void): void {
  if (taken > 0) LENT.set(ab, { taken, back: 0, left: true, onBack })
}

/** a spare buffer of `size` bytes at least (a view of all of its memory), or null */
export function spareBuffer(size: number): Buffer | null {
  for (let k = spare.length - 1; k >= 0; k--) {
    const ab = spare[k]
    if (ab.byteLength < size) continue
    spare.splice(k, 1)
    spareBytes -= ab.byteLength
    lineStats.reused++
    return Buffer.from(ab)
  }
  return null
}

/**
 * A consumer done with lines `takeLine` returned: `lines` is one of them whole (with its newline),
 * or several adjacent ones as one view, each given back once. When every line of a buffer the
 * LineBuf has left is back, the buffer is reused for later lines. The caller must hold no other
 * view of the lines (nor hand them on); other memory is ignored.
 */
export function recycleLine(lines: Uint8Array): void {
  const ab = lines.buffer
  const l = LENT.get(ab)
  if (l === undefined) return
  l.back += lines.length
  if (l.left && l.back === l.taken) giveBack(ab, l)
}

/** lines from this many bytes get a buffer of their own (`LineBuf.takeLine`) */
const HANDOVER = 1 << 16
/** smaller lines share a buffer of about this many bytes */
const SEGMENT = 1 << 18

/**
 * `v`, a non-negative integer below 2^53, in decimal at `d[p]`; returns the position after it (the
 * caller made room for 16 bytes)
 */
export function digits(d: Uint8Array, p: number, v: number): number {
  if (v < 10) {
    d[p] = 48 + v
    return p + 1
  }
  let n = 2
  for (let t = 100; t <= v && n < 16; t *= 10) n++
  const end = p + n
  let q = end
  if (v < 4294967296) {
    while (q > p) {
      const x = (v / 10) >>> 0
      d[--q] = 48 + v - x * 10
      v = x
    }
  } else {
    while (q > p) {
      const x = Math.floor(v / 10)
      d[--q] = 48 + (v - x * 10)
      v = x
    }
  }
  return end
}

/**
 * A column's values in JSON form: writes row `i`'s JSON rendering (null included) into `out`, as
 * the compiled writers render the column's values (u64 quoted unless bigints render as numbers).
 */
export interface JsonTokens {
  write(i: number, out: LineBuf): void
  /** optional: the rows of this use are written (what was read only to build them may be dropped) */
  done?(): void
  /**
   * optional: the stored form `write` reads, for writers compiled to copy it inline (no call per
   * value); `write` stays the reference of what is written
   */
  form?: TokenForm
}

/** dictionary codes or list elements: 1, 2 or 4 bytes wide */
export type Codes = Uint8Array | Uint16Array | Uint32Array

/**
 * A column's stored JSON form. Tokens: token k is bytes [toff[k], toff[k + 1] - 1) of `text`
 * (`tv`: a DataView of `text`).
 * - plain: row i is token i
 * - dict: row i is token codes[i], or null when codes[i] === size
 * - list: row i is the array of tokens codes[k] for k in [off[i], off[i + 1])
 * - addr: row i is the array of the integers el[k] for k in [off[i], off[i + 1])
 * - kept: rows built earlier and kept packed (a few rows' JSON, `Table.rowTokens`): row rows[k]
 *   (ascending) is bytes [offs[k], offs[k + 1]) of `bytes` (`view`: a DataView of it), `big[k]`
 *   the same bytes as a view of their own when long; other rows are written by `write` only
 * - int: row i is the 64-bit integer (w32[2i], w32[2i + 1]) (little-endian halves, `big[i]`
 *   whole), null where valid[i] === 0; written as exact digits, quoted when `quoted`; the high
 *   half is below `small` when the value is a non-negative integer below 2^53
 */
export type TokenForm =
  | { readonly kind: 'plain'; readonly text: Uint8Array; readonly tv: DataView; readonly toff: Uint32Array }
  | {
      readonly kind: 'dict'
      readonly text: Uint8Array
      readonly tv: DataView
      readonly toff: Uint32Array
      readonly codes: Codes
      readonly size: number
    }
  | {
      readonly kind: 'list'
      readonly text: Uint8Array
      readonly tv: DataView
      readonly toff: Uint32Array
      readonly codes: Codes
      readonly off: Uint32Array
    }
  | { readonly kind: 'addr'; readonly el: Codes; readonly off: Uint32Array }
  | {
      readonly kind: 'kept'
      readonly rows: Int32Array
      readonly offs: Uint32Array
      readonly bytes: Uint8Array
      readonly view: DataView
      readonly big: readonly (Uint8Array | undefined)[]
    }
  | {
      readonly kind: 'int'
      readonly w32: Uint32Array
      readonly big: BigUint64Array | BigInt64Array
      readonly small: number
      readonly valid: Uint8Array | null
      readonly quoted: boolean
    }

/** what a compiled writer specialises on in a form: its kind, element widths and null flags */
export function formTag(f: TokenForm): string {
  switch (f.kind) {
    case 'plain':
      return 'p'
    case 'dict':
      return 'd' + f.codes.BYTES_PER_ELEMENT
    case 'list':
      return 'l' + f.codes.BYTES_PER_ELEMENT
    case 'addr':
      return 'a' + f.el.BYTES_PER_ELEMENT
    case 'kept':
      return 'k'
    case 'int':
      return 'i' + (f.valid === null ? '' : '?') + (f.quoted ? 'q' : '') + (f.small === 1 ? 's' : 'u')
  }
}
