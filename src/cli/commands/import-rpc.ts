/**
 * `solportal import DIR --rpc URL --from SLOT [--to SLOT]`: the lines of the import read from a
 * node instead of archive files (src/ingest/import `ImportInput`). Produced slots are listed and fetched by
 * the range fetcher (src/ingest/rpc-fetch.ts, several `getBlock` calls in flight), and each
 * block's `getBlock` result text goes to the import's workers as the archive line
 * `{"slot":S,"block":RESULT}`, parsed there with exact integers like an archive's line: fetching
 * overlaps the parsing, normalizing and encoding of the blocks before.
 *
 * Resuming: the import continues after the dataset's last block (a kill at any point loses only
 * what was not durable, and no block is stored twice). Slots the node lists as produced but
 * answers as skipped (-32007, -32009) are recorded in `DIR/rpc-skipped-slots` as they are met, and
 * a later run does not ask for them again.
 */
import { appendFileSync, closeSync, fsyncSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ImportInput } from '../../ingest/import/index.ts'
import { archiveLinePieces, openRange, type RangeFetch, type RangeFlags } from './rpc-range.ts'

/** the file of a dataset directory that lists the slots a node answered as skipped */
export const SKIPPED_FILE = 'rpc-skipped-slots'

/** the slots recorded as skipped (a torn last line, from a kill while writing it, is ignored) */
export function readSkipped(dir: string): Set<number> {
  let text: string
  try {
    text = readFileSync(join(dir, SKIPPED_FILE), 'utf8')
  } catch {
    return new Set()
  }
  const out = new Set<number>()
  for (const line of text.split('\n')) {
    const m = /^(\d{1,15}) -320\d\d$/.exec(line)
    if (m) out.add(Number(m[1]))
  }
  return out
}

function recordSkipped(dir: string, slot: number, code: number): void {
  const path = join(dir, SKIPPED_FILE)
  appendFileSync(path, `${slot} ${code}\n`)
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export class RpcInput implements ImportInput {
  private start = 0
  private at = -1
  private readonly t0 = Date.now()
  /** listed slots answered as skipped in this run */
  skipped = 0

  private constructor(
    readonly range: RangeFetch,
    private readonly dir: string,
    private readonly log: (line: string) => void,
  ) {}

  /** the node and range of `--rpc URL --from A [--to B]`, for an import into `dir` */
  static async open(dir: string, url: string, o: RangeFlags, log: (line: string) => void): Promise<RpcInput> {
    return new RpcInput(await openRange(url, o, log, readSkipped(dir)), dir, log)
  }

  async *lines(resumeAfter: number, signal?: AbortSignal): AsyncIterable<{ pieces: Buffer[]; where: string }> {
    const { fetcher, from, to } = this.range
    this.start = Math.max(from, resumeAfter + 1)
    this.at = this.start - 1
    if (this.start > to) {
      this.log(`nothing to fetch: the dataset holds blocks up to ${resumeAfter}, at or above --to ${to}`)
      return
    }
    if (this.start > from)
      this.log(`fetching slots ${this.start}..${to} (the dataset holds blocks up to ${resumeAfter})`)
    await fetcher.checkAvailable(this.start, signal)
    for await (const item of fetcher.slots(this.start, to, signal)) {
      this.at = item.slot
      if (item.kind === 'skipped') {
        this.skipped++
        recordSkipped(this.dir, item.slot, item.code)
        continue
      }
      yield { pieces: archiveLinePieces(item.slot, item.result), where: `slot ${item.slot}` }
    }
    this.at = to
  }

  done(): number {
    return Math.max(0, this.at - this.start + 1)
  }

  total(): number {
    return Math.max(1, this.range.to - this.start + 1)
  }

  status(): string {
    const secs = (Date.now() - this.t0) / 1000
    const errors = this.range.fetcher.errorSummary()
    return `, ${(secs > 0 ? this.done() / secs : 0).toFixed(1)} slots/s (slot ${this.at} of ${this.range.to})${errors ? `; the node: ${errors}` : ''}`
  }

  close(): void {
    this.range.close()
  }
}
