/**
 * The log walk (docs/query.md §1 "Logs and the log walk" and "Failed transactions"): places every
 * instruction of one transaction in the call tree, attributes `meta.logMessages` lines to the
 * instructions that produced them, and extracts per-instruction `error` and `computeUnitsConsumed`.
 */
import type { Instruction, Log, LogKind } from '../model.ts'
import type { RpcInstruction } from '../rpc/types.ts'

// ---------------------------------------------------------------------------------------------
// Line classes

export const LINE_INVOKE = 1
export const LINE_SUCCESS = 2
export const LINE_FAILED = 3
export const LINE_CONSUMED = 4
export const LINE_LOG = 5
export const LINE_DATA = 6
export const LINE_TRUNCATED = 7
export const LINE_OTHER = 8

export type LineKind = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8

/** A classified log line. Fields not meaningful for the kind are '' / 0. */
export interface ParsedLine {
  kind: LineKind
  /** invoke, success, failed, consumed */
  programId: string
  /** invoke: N of `invoke [N]` */
  depth: number
  /**
   * failed: the error text; consumed: the decimal digits of the consumed units;
   * log/data: the text after the prefix; other: the whole line
   */
  text: string
}

/**
 * Does s contain, from index `from`, a character that `.` in a JS regex does not match? Four
 * `indexOf` (a fast search each; on a one-byte string the last two return at once).
 */
function hasLineTerminator(s: string, from: number): boolean {
  return (
    s.indexOf('\n', from) >= 0 ||
    s.indexOf('\r', from) >= 0 ||
    s.indexOf('\u2028', from) >= 0 ||
    s.indexOf('\u2029', from) >= 0
  )
}

/** Index after the run of ASCII digits starting at `i`. */
function digitsEnd(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) break
    i++
  }
  return i
}

/**
 * Classifies one line of `logMessages`. Equivalent to trying, in order, the anchored patterns
 * `^Program (b58+) invoke \[(\d+)]$`, `^Program (b58+) success$`, `^Program (b58+) failed: (.*)$`,
 * `^Program log: (.*)$`, `^Program data: (.*)$`,
 * `^Program (b58+) consumed (\d+) of (\d+) compute units$`, exactly `Log truncated`, else other
 * (`.` does not match line terminators, so a line with a line break inside is `other`).
 *
 * Written with character codes and `slice(...) ===` rather than `startsWith` and regular
 * expressions (measured: `startsWith` ~25 ns a call, the base58 run's expression ~50 ns). The
 * program id: `b58+` followed by a space is the text from index 8 up to the first space, when it is
 * non-empty and base58 (a space is not base58). `known`: program ids the line probably names (the
 * transaction's programs), each a non-empty base58 string, trusted: an id equal to one of them
 * needs no base58 check, and the list's string is returned (the walker's comparisons with it are
 * then identity checks).
 */
export function parseLogLine(line: string, out: ParsedLine, known?: readonly string[]): ParsedLine {
  out.programId = ''
  out.depth = 0
  const n = line.length
  if (n > 8 && isProgramPrefix(line)) {
    const c8 = line.charCodeAt(8)
    if (c8 === 108 /* l */ && line.slice(8, 13) === 'log: ') {
      if (!hasLineTerminator(line, 13)) {
        out.kind = LINE_LOG
        out.text = line.slice(13)
        return out
      }
    } else if (c8 === 100 /* d */ && line.slice(8, 14) === 'data: ') {
      if (!hasLineTerminator(line, 14)) {
        out.kind = LINE_DATA
        out.text = line.slice(14)
        return out
      }
    } else {
      const j = line.indexOf(' ', 8)
      const id = j > 8 ? programIdAt(line, j, known) : undefined
      if (id !== undefined) {
        const r = j + 1
        const cr = line.charCodeAt(r)
        if (cr === 105 /* i */) {
          if (line.slice(r, r + 8) === 'invoke [') {
            const d0 = r + 8
            const d1 = digitsEnd(line, d0)
            if (d1 > d0 && d1 === n - 1 && line.charCodeAt(d1) === 93 /* ] */) {
              out.kind = LINE_INVOKE
              out.programId = id
              out.depth = parseInt(line.slice(d0, d1), 10)
              out.text = ''
              return out
            }
          }
        } else if (cr === 115 /* s */) {
          if (n - r === 7 && line.slice(r) === 'success') {
            out.kind = LINE_SUCCESS
            out.programId = id
            out.text = ''
            return out
          }
        } else if (cr === 102 /* f */) {
          if (line.slice(r, r + 8) === 'failed: ' && !hasLineTerminator(line, r + 8)) {
            out.kind = LINE_FAILED
            out.programId = id
            out.text = line.slice(r + 8)
            return out
          }
        } else if (cr === 99 /* c */ && line.slice(r, r + 9) === 'consumed ') {
          const a0 = r + 9
          const a1 = digitsEnd(line, a0)
          if (a1 > a0 && line.slice(a1, a1 + 4) === ' of ') {
            const b0 = a1 + 4
            const b1 = digitsEnd(line, b0)
            if (b1 > b0 && n - b1 === 14 && line.slice(b1) === ' compute units') {
              out.kind = LINE_CONSUMED
              out.programId = id
              out.text = line.slice(a0, a1)
              return out
            }
          }
        }
      }
    }
  } else if (line === 'Log truncated') {
    out.kind = LINE_TRUNCATED
    out.text = ''
    return out
  }
  out.kind = LINE_OTHER
  out.text = line
  return out
}

/** line starts with `Program ` (line.length > 8) */
/** Does `line` start with `Program `? */
function isProgramPrefix(line: string): boolean {
  return (
    line.charCodeAt(0) === 80 &&
    line.charCodeAt(1) === 114 &&
    line.charCodeAt(2) === 111 &&
    line.charCodeAt(3) === 103 &&
    line.charCodeAt(4) === 114 &&
    line.charCodeAt(5) === 97 &&
    line.charCodeAt(6) === 109 &&
    line.charCodeAt(7) === 32
  )
}

const B58_ALL = /^[1-9A-HJ-NP-Za-km-z]+$/

/** line[8..j) when it is base58 (j > 8), from `known` when it is there; else undefined. */
function programIdAt(line: string, j: number, known: readonly string[] | undefined): string | undefined {
  const id = line.slice(8, j)
  if (known !== undefined) {
    const len = j - 8
    const c0 = line.charCodeAt(8)
    for (let q = 0; q < known.length; q++) {
      const k = known[q]
      if (k.length === len && k.charCodeAt(0) === c0 && k === id) return k
    }
  }
  return B58_ALL.test(id) ? id : undefined
}

// ---------------------------------------------------------------------------------------------
// The walk

/** Programs that never log an `invoke` line. */
export const NEVER_LOGGING_PROGRAMS: ReadonlySet<string> = new Set([
  'AddressLookupTab1e1111111111111111111111111',
  'ComputeBudget111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'NativeLoader1111111111111111111111111111111',
  'Ed25519SigVerify111111111111111111111111111',
  'KeccakSecp256k11111111111111111111111111111',
  'Secp256r1SigVerify1111111111111111111111111',
  'ZkTokenProof1111111111111111111111111111111',
])

/** InstructionError kinds under which the failing instruction may lack its invoke line. */
const FAIL_BEFORE_INVOKE_KINDS: ReadonlySet<string> = new Set([
  'AccountNotExecutable',
  'CallDepth',
  'MissingAccount',
  'NotEnoughAccountKeys',
  'ReentrancyNotAllowed',
  'UnsupportedProgramId',
  'MaxInstructionTraceLengthExceeded',
])

/** What the walk needs to know about one transaction. */
export interface WalkInput {
  transactionIndex: number
  /** top-level instructions (`message.instructions`) */
  instructions: readonly RpcInstruction[]
  /** inner instructions per top-level index (concatenated `meta.innerInstructions` entries) */
  inner: readonly (readonly RpcInstruction[] | undefined)[]
  logMessages: readonly string[] | null | undefined
  /** `meta.err` */
  err: unknown
  /** true when `meta.innerInstructions` has at least one entry */
  hasInnerInstructions: boolean
  /** programId of an instruction (resolved through the transaction's account list) */
  programIdOf(ins: RpcInstruction): string
  /**
   * Optional: distinct program ids of the transaction's instructions, each a non-empty base58
   * string (checked by the caller): `parseLogLine`'s `known`.
   */
  programIds?: readonly string[]
  /** builds the record of one instruction, with error/CU null and the flag false */
  makeInstruction(ins: RpcInstruction, instructionAddress: number[]): Instruction
}

/** Results go to these lists (appended in execution / log order). */
export interface WalkOutput {
  instructions: Instruction[]
  logs: Log[]
  /** human-readable problems; the caller adds slot/signature */
  warnings: string[]
}

export interface WalkResult {
  /** the transaction's `hasDroppedLogMessages` */
  hasDroppedLogMessages: boolean
  /** set when the walk failed and the fallback was used */
  failure: string | null
}

class WalkFailure {
  constructor(readonly reason: string) {}
}

const LOG_KINDS: readonly (LogKind | undefined)[] = []
;(LOG_KINDS as (LogKind | undefined)[])[LINE_LOG] = 'log'
;(LOG_KINDS as (LogKind | undefined)[])[LINE_DATA] = 'data'
;(LOG_KINDS as (LogKind | undefined)[])[LINE_OTHER] = 'other'

function fmtAddr(a: readonly number[]): string {
  return '[' + a.join(',') + ']'
}

/**
 * Walks one transaction. Never throws for content problems: a failed walk is reported in
 * `failure` (and `warnings`), the transaction's rows are re-emitted by the fallback.
 */
export function walkTransaction(input: WalkInput, output: WalkOutput): WalkResult {
  return new Walker(input, output).run()
}

class Walker {
  private readonly lines: readonly string[]
  private readonly nLines: number
  private li = 0
  private readonly line: ParsedLine = { kind: LINE_OTHER, programId: '', depth: 0, text: '' }

  /** top-level instructions up to and including this index ran */
  private readonly lastRan: number
  private readonly failBeforeInvokeOk: boolean

  // current top-level instruction
  private topIndex = 0
  private top!: RpcInstruction
  private innerList: readonly RpcInstruction[] | undefined
  private listLen = 0
  private pos = 0
  private lastAddr: number[] = []
  private fallback = false

  private missingInvoke: string[] = []

  constructor(
    private readonly input: WalkInput,
    private readonly out: WalkOutput,
  ) {
    const lm = input.logMessages
    this.lines = Array.isArray(lm) ? lm : []
    this.nLines = this.lines.length
    if (this.nLines > 0) this.load()

    const n = input.instructions.length
    const err = input.err
    let lastRan = n - 1
    let failBeforeInvokeOk = false
    if (typeof err === 'object' && err !== null && 'InstructionError' in err) {
      const ie = (err as { InstructionError: unknown }).InstructionError
      const k = Array.isArray(ie) ? ie[0] : undefined
      const kind = Array.isArray(ie) ? ie[1] : undefined
      if (typeof k === 'number' && Number.isSafeInteger(k)) {
        lastRan = k
      } else {
        this.out.warnings.push(
          `InstructionError of unrecognized shape ${JSON.stringify(err)}: treating every instruction as ran`,
        )
      }
      failBeforeInvokeOk = typeof kind === 'string' && FAIL_BEFORE_INVOKE_KINDS.has(kind)
    } else if (err != null && this.nLines === 0 && !input.hasInnerInstructions) {
      lastRan = -1
    }
    this.lastRan = lastRan
    this.failBeforeInvokeOk = failBeforeInvokeOk
  }

  run(): WalkResult {
    const out = this.out
    const insCheckpoint = out.instructions.length
    const logCheckpoint = out.logs.length
    const n = this.input.instructions.length
    try {
      for (let i = 0; i < n; i++) this.walkTop(i)
      if (!this.ended()) {
        throw new WalkFailure(`log lines left over after the last instruction, from line ${this.li}`)
      }
      this.flushMissingInvoke()
      return { hasDroppedLogMessages: this.truncated(), failure: null }
    } catch (e) {
      if (!(e instanceof WalkFailure)) throw e
      out.instructions.length = insCheckpoint
      out.logs.length = logCheckpoint
      this.missingInvoke = []
      out.warnings.push(`log walk failed: ${e.reason}; instructions re-emitted without logs`)
      this.fallback = true
      for (let i = 0; i < n; i++) this.fallbackTop(i)
      return { hasDroppedLogMessages: true, failure: e.reason }
    }
  }

  private flushMissingInvoke(): void {
    if (this.missingInvoke.length > 0) {
      this.out.warnings.push(`missing invoke line for instruction(s) ${this.missingInvoke.join(' ')}`)
    }
  }

  // --- log lines -----------------------------------------------------------------------------

  private load(): void {
    const raw = this.lines[this.li]
    parseLogLine(typeof raw === 'string' ? raw : String(raw), this.line, this.input.programIds)
  }

  /** at the end of the lines or at `Log truncated` */
  private ended(): boolean {
    return this.li >= this.nLines || this.line.kind === LINE_TRUNCATED
  }

  private truncated(): boolean {
    return this.li < this.nLines && this.line.kind === LINE_TRUNCATED
  }

  private advance(): void {
    if (this.li >= this.nLines || this.line.kind === LINE_TRUNCATED) return
    this.li++
    if (this.li < this.nLines) this.load()
  }

  // --- instruction list of the current top-level ---------------------------------------------

  private setTop(i: number): void {
    this.topIndex = i
    this.top = this.input.instructions[i]
    this.innerList = this.input.inner[i]
    this.listLen = 1 + (this.innerList ? this.innerList.length : 0)
    this.pos = 0
    this.lastAddr = [i - 1]
  }

  private insAt(pos: number): RpcInstruction {
    return pos === 0 ? this.top : this.innerList![pos - 1]
  }

  /** The depth an instruction declares: 1 for the top-level, else its stackHeight (or null). */
  private declaredDepth(pos: number): number | null {
    if (pos === 0) return 1
    const sh = this.innerList![pos - 1].stackHeight
    return typeof sh === 'number' ? sh : null
  }

  /** Emits the instruction at `pos` at depth `depth` and moves to the next one. */
  private emit(depth: number, dropped: boolean): Instruction {
    const last = this.lastAddr
    const L = last.length
    const minDepth = this.pos === 0 ? 1 : 2
    if (depth < minDepth || depth > L + 1 || (this.pos === 0 && depth !== 1)) {
      if (!this.fallback) {
        throw new WalkFailure(
          `instruction ${fmtAddr(last)}+1 (position ${this.pos} of top-level ${this.topIndex}) cannot be placed at depth ${depth}`,
        )
      }
      depth = this.pos === 0 ? 1 : Math.min(Math.max(depth, 2), L + 1)
    }
    const addr = new Array<number>(depth)
    const m = depth <= L ? depth : L
    for (let k = 0; k < m; k++) addr[k] = last[k]
    if (depth <= L) addr[depth - 1]++
    else addr[depth - 1] = 0
    const rec = this.input.makeInstruction(this.insAt(this.pos), addr)
    rec.hasDroppedLogMessages = dropped
    this.out.instructions.push(rec)
    this.lastAddr = addr
    this.pos++
    return rec
  }

  // --- walking ---------------------------------------------------------------------------------

  private walkTop(i: number): void {
    this.setTop(i)
    if (i <= this.lastRan) {
      this.call(1)
      // whatever was not visited (truncation, or a top-level without invoke line)
      while (this.pos < this.listLen) this.emit(this.declaredDepth(this.pos) ?? 2, true)
    } else {
      if (this.listLen > 1) {
        throw new WalkFailure(`top-level instruction ${i} never ran but has inner instructions`)
      }
      this.emit(1, false)
    }
  }

  private fallbackTop(i: number): void {
    this.setTop(i)
    const ran = i <= this.lastRan
    while (this.pos < this.listLen) this.emit(this.declaredDepth(this.pos) ?? 2, ran)
  }

  /** Visit the instruction at `pos`, expected at depth `depth`. */
  private call(depth: number): void {
    const pos = this.pos
    const declared = this.declaredDepth(pos)
    if (declared !== null && declared !== depth) {
      throw new WalkFailure(
        `stackHeight ${declared} of instruction at position ${pos} of top-level ${this.topIndex} disagrees with the log depth ${depth}`,
      )
    }
    const ins = this.insAt(pos)
    const programId = this.input.programIdOf(ins)
    const line = this.line
    if (this.li < this.nLines && line.kind === LINE_INVOKE && line.programId === programId) {
      if (line.depth !== depth) {
        throw new WalkFailure(
          `line ${this.li}: invoke [${line.depth}] of ${programId} where depth ${depth} was expected`,
        )
      }
      this.advance()
      this.invoke(depth)
      return
    }
    if (this.truncated()) return
    const rec = this.emit(depth, true)
    if (!NEVER_LOGGING_PROGRAMS.has(programId) && !this.mayLackInvoke(pos)) {
      this.missingInvoke.push(fmtAddr(rec.instructionAddress) + ' ' + programId)
    }
    // skip what this instruction may have logged, up to the next structural line
    while (!this.ended()) {
      const k = this.line.kind
      if (k === LINE_INVOKE || k === LINE_SUCCESS || k === LINE_FAILED) break
      this.advance()
    }
  }

  /** The failed-transaction exception: the failing instruction may lack its invoke line. */
  private mayLackInvoke(pos: number): boolean {
    return this.failBeforeInvokeOk && this.topIndex === this.lastRan && pos === this.listLen - 1
  }

  /** The invoke line of the instruction at `pos` was just consumed: read its frame. */
  private invoke(depth: number): void {
    const rec = this.emit(depth, false)
    const line = this.line
    const tx = this.input.transactionIndex
    const addr = rec.instructionAddress
    const programId = rec.programId
    const logs = this.out.logs
    for (;;) {
      if (this.li >= this.nLines) {
        throw new WalkFailure(`the log ends inside the frame of ${fmtAddr(addr)} ${programId}`)
      }
      const k = line.kind
      if (k === LINE_TRUNCATED) {
        // stop attributing: the open instruction gets the flag, no error, no CU
        rec.hasDroppedLogMessages = true
        rec.computeUnitsConsumed = null
        return
      }
      if (k === LINE_LOG || k === LINE_DATA || k === LINE_OTHER) {
        logs.push({
          transactionIndex: tx,
          logIndex: this.li,
          instructionAddress: addr,
          programId,
          kind: LOG_KINDS[k]!,
          message: line.text,
        })
        this.advance()
      } else if (k === LINE_CONSUMED) {
        if (line.programId !== programId) {
          throw new WalkFailure(
            `line ${this.li}: consumed line of ${line.programId} inside the frame of ${fmtAddr(addr)} ${programId}`,
          )
        }
        rec.computeUnitsConsumed = BigInt(line.text)
        this.advance()
      } else if (k === LINE_INVOKE) {
        if (this.pos >= this.listLen) {
          throw new WalkFailure(`line ${this.li}: invoke of ${line.programId} but no instruction is left to visit`)
        }
        this.call(depth + 1)
      } else {
        // success / failed: closes this frame
        if (line.programId !== programId) {
          throw new WalkFailure(
            `line ${this.li}: result line of ${line.programId} closes the frame of ${fmtAddr(addr)} ${programId}`,
          )
        }
        rec.error = k === LINE_FAILED ? line.text : null
        this.advance()
        this.placeUnvisitedChildren(rec, depth)
        return
      }
    }
  }

  /** After a frame closed: its inner instructions still unvisited are emitted without logs. */
  private placeUnvisitedChildren(parent: Instruction, parentDepth: number): void {
    while (this.pos < this.listLen) {
      const pos = this.pos
      const declared = this.declaredDepth(pos)
      const depth = declared ?? (parent.error !== null ? parentDepth + 1 : 2)
      if (depth <= parentDepth) return
      const programId = this.input.programIdOf(this.insAt(pos))
      const rec = this.emit(depth, true)
      if (!NEVER_LOGGING_PROGRAMS.has(programId) && !this.mayLackInvoke(pos)) {
        this.missingInvoke.push(fmtAddr(rec.instructionAddress) + ' ' + programId)
      }
    }
  }
}
