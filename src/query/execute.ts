/**
 * Query execution over columnar chunks (docs/query.md §4), generic over the dataset of the parsed
 * query: plan.ts (what to select and how to render it), chunk-run.ts (filters evaluated column-wise
 * into candidate rows, filter.ts; relations run on their key columns, join.ts), emit.ts (rows bound
 * to compiled writers, lines as bytes or strings) and the render loop here.
 */
import type { Chunk } from '../store/chunk.ts'
import type { BlockStore } from '../store/types.ts'
import { lowerBound } from '../util/search.ts'
import { ChunkRun } from './chunk-run.ts'
import { bindChunk, ByteLine, drop, isTokens, StringLine, type BoundKind, type ChunkOutput, type Line } from './emit.ts'
import type { ParsedQuery } from './parse.ts'
import { makePlan, type Plan } from './plan.ts'
import { PAUSE_ROWS, Slicer } from './slicer.ts'

export interface ExecuteOptions {
  /** inclusive upper block bound decided by the server (min(toBlock, head)) */
  to: number
  /** passed to store.chunks */
  finalizedOnly: boolean
  /** render u64/i64 as bare exact integers instead of decimal strings */
  bigintsAsNumbers?: boolean
  /** checked after each produced block is processed; true → end early (at a block boundary) */
  shouldStop?: () => boolean
  /**
   * Called inside the work of a block (filtering a chunk, decoding its columns, rendering the rows
   * of a big block) each time about `sliceMs` of it ran without a yield, so that the caller can let
   * other work run (other streams, the event loop); resolving to false ends the iteration there,
   * without the block (the consumer is gone). Without it a block is one synchronous piece of work.
   */
  pause?: () => Promise<boolean>
  /** ms of work between pauses (default 8) */
  sliceMs?: number
  /**
   * Asked before the work of each chunk begins (the server's memory limit, src/server/memory-gate.ts):
   * resolves to the release called once the chunk's blocks are out (or the iteration ended), or
   * to null to end the iteration there (the consumer is gone)
   */
  enterChunk?: () => Promise<(() => void) | null>
}

export interface OutputBlock {
  number: number
  hash: string
  /** one JSON object, no newline */
  line: string
  /**
   * the same line as UTF-8 bytes, when the engine rendered it as bytes (then `line` is decoded from
   * them only when read): consumers that write bytes take these
   */
  bytes?: Buffer
  /**
   * true when the block holds no selected row and is output only as a boundary of the range (the
   * first or last produced block, or where `shouldStop` ended it); false with `includeAllBlocks`
   */
  empty: boolean
}

/** The memory limit's admission of one chunk's work at a time (`ExecuteOptions.enterChunk`). */
class ChunkGate {
  /** the release of the chunk being worked on */
  private leave: (() => void) | null = null

  constructor(private readonly enterChunk: () => Promise<(() => void) | null>) {}

  /** the previous chunk released, the next one admitted; false = stop (the consumer is gone) */
  async enter(): Promise<boolean> {
    this.release()
    return (this.leave = await this.enterChunk()) !== null
  }

  release(): void {
    const leave = this.leave
    this.leave = null
    leave?.()
  }
}

/** A chunk's blocks in range and their selected rows, bound for output. */
interface ChunkBlocks extends ChunkOutput {
  /** block positions [bLo, bHi) */
  bLo: number
  bHi: number
  numbers: ArrayLike<number>
  hashes: ArrayLike<string>
}

/**
 * The blocks of a chunk in [from, to] (plan), their selected rows (select) bound to their
 * writers (emit); undefined when the chunk holds no block in range, null = stop (a pause said so).
 */
async function selectChunk(
  chunk: Chunk,
  from: number,
  to: number,
  plan: Plan,
  lines: { bytes: ByteLine; text: StringLine },
  slicer: Slicer,
  bigints: boolean,
  /** asked once the chunk has blocks in range, before its work begins (the memory limit) */
  gate: ChunkGate | undefined,
): Promise<ChunkBlocks | null | undefined> {
  if (chunk.blockCount === 0 || chunk.lastBlock < from || chunk.firstBlock > to) return undefined
  const numbers = chunk.header('number')
  const bLo = lowerBound(numbers, from, 0, chunk.blockCount)
  const bHi = lowerBound(numbers, to + 1, bLo, chunk.blockCount)
  if (bLo >= bHi) return undefined
  const hashes = chunk.header('hash')
  if (gate !== undefined && !(await gate.enter())) return null
  const run = new ChunkRun(chunk, plan, bLo, bHi)
  if (!(await run.run(slicer))) return null
  const out = await bindChunk(run, plan, lines, slicer, bigints)
  return out === null ? null : { ...out, bLo, bHi, numbers, hashes }
}

/**
 * The selected rows of block position `b` of every bound kind, written into `line` (a kind's list
 * opened at its first row, closed after its last); with a `slicer`, a pause is taken when one is
 * due (every PAUSE_ROWS rows). false = stop (a pause said so).
 */
async function writeRows(line: Line, bound: readonly BoundKind[], b: number, slicer: Slicer | null): Promise<boolean> {
  for (let k = 0; k < bound.length; k++) {
    const bk = bound[k]
    let open = false
    const rows = bk.rows
    if (rows !== null) {
      const endRow = bk.offsets[b + 1]
      let p = bk.p
      for (; p < rows.length && rows[p] < endRow; p++) {
        line.row(bk, rows[p], open)
        open = true
        if (slicer !== null && p % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return false
      }
      bk.p = p
    } else {
      const m = bk.mask
      const base = bk.base
      const end = bk.offsets[b + 1] - base
      for (let x = bk.offsets[b] - base; x < end; x++) {
        if (m[x] === 1) {
          line.row(bk, x + base, open)
          open = true
        }
        if (slicer !== null && x % PAUSE_ROWS === 0 && slicer.due && !(await slicer.take())) return false
      }
    }
    if (open) line.endList()
  }
  return true
}

/**
 * Stream the query's output blocks (docs/query.md §4): ascending, produced blocks only, the first
 * and the last produced block of the covered range always present. Per chunk: plan (clip to the
 * range), select (filters and relations, chunk-run.ts), emit (bind the rows to their writers,
 * emit.ts), then one render loop over the chunk's blocks.
 */
export async function* executeQuery(
  store: BlockStore,
  q: ParsedQuery,
  opts: ExecuteOptions,
): AsyncGenerator<OutputBlock> {
  const from = q.fromBlock
  const to = q.toBlock !== undefined && q.toBlock < opts.to ? q.toBlock : opts.to
  if (to < from) return
  const bigints = opts.bigintsAsNumbers === true
  const plan = makePlan(q, bigints)
  const lines = { bytes: new ByteLine(), text: new StringLine() }
  const shouldStop = opts.shouldStop
  const slicer = new Slicer(opts.pause, opts.sliceMs ?? 8)
  const pausing = opts.pause !== undefined
  let first = true
  let pending: OutputBlock | null = null
  const gate = opts.enterChunk === undefined ? undefined : new ChunkGate(opts.enterChunk)
  try {
    for await (const chunk of store.chunks(from, to, opts.finalizedOnly)) {
      const out = await selectChunk(chunk, from, to, plan, lines, slicer, bigints, gate)
      if (out === undefined) continue
      if (out === null) return
      const { bound, line, bLo, bHi, numbers, hashes } = out
      for (let b = bLo; b < bHi; b++) {
        if (pending !== null) pending = drop(pending) // a later block exists: the pending one was not the last
        line.begin(b)
        if (!(await writeRows(line, bound, b, pausing ? slicer : null))) return
        const number = numbers[b]
        const empty = line.end() && !q.includeAllBlocks
        // output, or else kept while possibly the last produced block of the range (until a later one shows up)
        const emitted = !empty || first || number === to
        if (emitted) {
          yield line.take(number, hashes[b], empty)
          slicer.reset()
        } else if (b === bHi - 1) pending = line.take(number, hashes[b], empty)
        first = false
        if (shouldStop !== undefined && shouldStop()) {
          if (!emitted) {
            const p = pending ?? line.take(number, hashes[b], empty)
            pending = null
            yield p
          }
          return
        }
      }
      for (const c of out.used) if (isTokens(c)) c.done?.()
    }
    if (pending !== null) {
      const p = pending
      pending = null
      yield p
    }
  } finally {
    gate?.release()
    // a line taken and never handed out (the iteration ended early) is back too
    if (pending !== null) drop(pending)
    lines.bytes.release()
  }
}
