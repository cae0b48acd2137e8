/**
 * A JSON reader compiled to WebAssembly (assembly/reader.ts, AssemblyScript; built by
 * scripts/build-wasm.mjs into reader.wasm), measured by `npm run bench -- normalize` against
 * `JSON.parse`: what reading a block's transactions would cost if the values never became
 * JavaScript values. It checks the text as strictly as `JSON.parse` does (and refuses nesting
 * deeper than 256 levels, which `JSON.parse` reads) and writes a tape of
 * integers (the entries are listed in the source); every string without escapes is interned, so
 * a string met again (an account key, a program's log line) is an id the reader already has, and
 * only strings never met before need to become JavaScript strings (`string`).
 *
 * Not used by solportal's ingest: it is the first part of a reader that would hand the normalizer
 * ids instead of strings (src/rpc/README.md, "A compiled reader").
 */
import { readFileSync } from 'node:fs'

export const OBJ = 1
export const ARR = 2
export const END = 3
export const STR = 4
export const ESC = 5
export const INT = 6
export const NUM = 7
export const TRUE = 8
export const FALSE = 9
export const NULL = 10

// (the project's TypeScript library settings have no WebAssembly types: the little used here)
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object, imports: object) => { exports: unknown }
}

interface Exports {
  memory: { buffer: ArrayBuffer }
  input(n: number): number
  parse(n: number): number
  tapePtr(): number
  arenaPtr(): number
  offsPtr(): number
  lensPtr(): number
  count(): number
  setInterning(on: number): void
  /** a: the bytes' offset in the input */
  internAt(a: number, len: number): number
}

const MODULE = new WebAssembly.Module(readFileSync(new URL('./reader.wasm', import.meta.url)))

export class TapeReader {
  private readonly w: Exports
  /** the interned strings made JavaScript strings so far, by id */
  private readonly names: string[] = []
  private inputAt = 0

  constructor() {
    this.w = new WebAssembly.Instance(MODULE, {
      env: {
        abort() {
          throw new Error('tape reader: aborted')
        },
      },
    }).exports as unknown as Exports
  }

  /** intern every string (the default) or none (every string an ESC entry) */
  set interning(on: boolean) {
    this.w.setInterning(on ? 1 : 0)
  }

  /**
   * Read one JSON text: its tape, valid until the next `read` or `idOf` (a view of the reader's
   * memory, and its ESC and NUM entries point into the input those overwrite).
   * Throws a SyntaxError, with the byte offset, where `JSON.parse` would throw.
   */
  read(bytes: Uint8Array): Int32Array {
    const w = this.w
    const at = w.input(bytes.length)
    new Uint8Array(w.memory.buffer, at, bytes.length).set(bytes)
    this.inputAt = at
    const n = w.parse(bytes.length)
    if (n < 0) throw new SyntaxError(`tape reader: invalid JSON at byte ${-1 - n}`)
    return new Int32Array(w.memory.buffer, w.tapePtr(), n)
  }

  /** strings interned so far */
  get count(): number {
    return this.w.count()
  }

  /** Make the strings interned since the last call JavaScript strings; how many there were. */
  materialize(): number {
    const w = this.w
    const n = w.count()
    const from = this.names.length
    if (n > from) {
      const mem = Buffer.from(w.memory.buffer)
      const offs = new Int32Array(w.memory.buffer, w.offsPtr(), n)
      const lens = new Int32Array(w.memory.buffer, w.lensPtr(), n)
      const base = w.arenaPtr()
      for (let id = from; id < n; id++)
        this.names.push(mem.toString('latin1', base + offs[id], base + offs[id] + lens[id]))
    }
    return n - from
  }

  /** the string of an id */
  string(id: number): string {
    if (id >= this.names.length) this.materialize()
    return this.names[id]
  }

  /** the id of an ASCII string, interned if new (a name to look for on tapes) */
  idOf(s: string): number {
    const w = this.w
    const at = w.input(s.length)
    Buffer.from(w.memory.buffer).write(s, at, 'latin1')
    return w.internAt(0, s.length)
  }

  /** the text of an ESC or NUM entry's bytes (valid until the next `read` or `idOf`) */
  private span(at: number, len: number): string {
    return Buffer.from(this.w.memory.buffer).toString('utf8', this.inputAt + at, this.inputAt + at + len)
  }

  /**
   * The value of the tape's entry at `i` and the index after it, as `JSON.parse` gives it (the
   * tests' check that the tape holds the text; not how a consumer would read it).
   */
  value(tape: Int32Array, i = 0): [unknown, number] {
    switch (tape[i]) {
      case OBJ: {
        const end = tape[i + 1]
        const o: Record<string, unknown> = {}
        let k = i + 2
        while (k < end) {
          const [key, next] = this.value(tape, k)
          const [v, after] = this.value(tape, next)
          // a member named __proto__ is a member, as JSON.parse makes it
          Object.defineProperty(o, key as string, { value: v, enumerable: true, writable: true, configurable: true })
          k = after
        }
        return [o, end + 1]
      }
      case ARR: {
        const end = tape[i + 1]
        const a: unknown[] = []
        let k = i + 2
        while (k < end) {
          const [v, next] = this.value(tape, k)
          a.push(v)
          k = next
        }
        return [a, end + 1]
      }
      case STR:
        return [this.string(tape[i + 1]), i + 2]
      case ESC:
        return [JSON.parse(`"${this.span(tape[i + 1], tape[i + 2])}"`), i + 3]
      case INT:
        return [tape[i + 1], i + 2]
      case NUM:
        return [JSON.parse(this.span(tape[i + 1], tape[i + 2])), i + 3]
      case TRUE:
        return [true, i + 1]
      case FALSE:
        return [false, i + 1]
      case NULL:
        return [null, i + 1]
      default:
        throw new Error(`tape reader: no entry ${tape[i]} at ${i}`)
    }
  }
}
