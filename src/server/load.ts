/**
 * Loading block lines into an in-memory store (sample and `--archive` serving).
 */
import type { ArchiveLine } from '../ingest/archive.ts'
import type { Block } from '../model.ts'
import { normalizeBlock } from '../normalize/normalize.ts'
import { StaticStore } from '../store/static.ts'

export interface LoadResult {
  store: StaticStore
  blocks: number
  warnings: number
}

export async function loadStaticStore(
  lines: AsyncIterable<ArchiveLine>,
  opts: { includeVotes?: boolean; onWarning?: (msg: string) => void } = {},
): Promise<LoadResult> {
  const blocks: Block[] = []
  const seen = new Set<number>()
  let warnings = 0
  for await (const line of lines) {
    if (seen.has(line.slot)) {
      opts.onWarning?.(`slot ${line.slot} appears more than once; keeping the first`)
      continue
    }
    seen.add(line.slot)
    const r = normalizeBlock(line, { includeVotes: opts.includeVotes })
    for (const w of r.warnings) {
      warnings++
      opts.onWarning?.(`slot ${w.slot}${w.signature ? ` tx ${w.signature}` : ''}: ${w.message}`)
    }
    blocks.push(r.block)
  }
  return { store: new StaticStore(blocks), blocks: blocks.length, warnings }
}
