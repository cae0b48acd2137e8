/**
 * What `solportal normalize FILE...` (normalize.ts) runs: the normalized blocks of archive files
 * (.jsonl/.jsonl.gz, or directories of them) or of bare `getBlock` results as JSON lines (u64
 * values as decimal strings, full records including the internal `dataPrefix`); warnings apart.
 */
import { readFile, stat } from 'node:fs/promises'
import { gunzipSync } from 'node:zlib'
import { isArchiveFileName, readArchiveTexts, toArchiveLine } from '../../ingest/archive.ts'
import type { Block, NormalizationWarning } from '../../model.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import { normalizeBlock } from '../../normalize/normalize.ts'
import { normalizeArchiveText } from '../../normalize/text.ts'
import type { ArchiveLine, RpcBlock } from '../../rpc/types.ts'
import { errorMessage } from '../../util/errors.ts'

export interface NormalizeCliOptions {
  slot?: string
  includeVotes?: boolean
}

/** JSON text of a normalized block; bigints become decimal strings. */
export function blockToJson(block: Block): string {
  return JSON.stringify(block, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
}

function formatWarning(w: NormalizationWarning): string {
  let s = `warning: slot ${w.slot}`
  if (w.transactionIndex !== undefined) s += ` tx ${w.transactionIndex}`
  if (w.signature !== undefined) s += ` ${w.signature}`
  return s + `: ${w.message}`
}

/**
 * The archive lines of one FILE argument: an archive (by name, or a directory), else a JSON file
 * holding either one archive line object or a bare getBlock result.
 */
async function* linesOf(
  file: string,
  opts: NormalizeCliOptions,
  warn: (m: string) => void,
): AsyncIterable<ArchiveLine | { text: string; where: string }> {
  const st = await stat(file)
  if (st.isDirectory() || isArchiveFileName(file)) {
    // archive lines are normalized from their text (one transaction parsed at a time)
    yield* readArchiveTexts(file)
    return
  }
  let buf = await readFile(file)
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) buf = gunzipSync(buf)
  let value: unknown
  try {
    value = parseJsonExact(buf.toString('utf8'))
  } catch (e) {
    throw new Error(`${file}: ${errorMessage(e)}`)
  }
  if (typeof value !== 'object' || value === null) throw new Error(`${file}: expected a JSON object`)
  const v = value as Record<string, unknown>
  if ('block' in v && 'slot' in v) {
    try {
      yield toArchiveLine(v)
    } catch (e) {
      throw new Error(`${file}: ${errorMessage(e)}`)
    }
    return
  }
  // a bare getBlock result: it does not carry its slot
  const block = v as unknown as RpcBlock
  if (typeof block.blockhash !== 'string') {
    throw new Error(`${file}: neither a getBlock result (no "blockhash") nor an archive line (no "slot"/"block")`)
  }
  let slot: number
  if (opts.slot !== undefined) {
    slot = Number(opts.slot)
    if (!Number.isSafeInteger(slot) || slot < 0)
      throw new Error(`--slot must be a non-negative integer, got '${opts.slot}'`)
  } else if (typeof block.parentSlot === 'number') {
    slot = block.parentSlot + 1
    warn(`${file}: no slot in a bare getBlock result; assuming parentSlot+1 = ${slot} (use --slot)`)
  } else {
    throw new Error(`${file}: a bare getBlock result without parentSlot needs --slot`)
  }
  yield { slot, hash: block.blockhash, height: block.blockHeight ?? null, block }
}

export async function runNormalize(
  files: string[],
  opts: NormalizeCliOptions,
  write: (text: string) => Promise<void> | void,
  warn: (text: string) => void,
): Promise<{ blocks: number; warnings: number }> {
  let blocks = 0
  let warnings = 0
  for (const file of files) {
    for await (const line of linesOf(file, opts, warn)) {
      const nopts = { includeVotes: opts.includeVotes === true }
      let r
      if ('text' in line) {
        try {
          r = normalizeArchiveText(line.text, nopts)
        } catch (e) {
          throw new Error(`${line.where}: ${errorMessage(e)}`)
        }
      } else r = normalizeBlock(line, nopts)
      for (const w of r.warnings) warn(formatWarning(w))
      warnings += r.warnings.length
      await write(blockToJson(r.block) + '\n')
      blocks++
    }
  }
  return { blocks, warnings }
}
