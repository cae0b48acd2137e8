/**
 * What `solportal dump` (dump.ts) runs: the node's blocks of a slot range as archive lines
 * (`{"slot","hash","height","block"}`, docs/query.md §1), one per produced slot, in slot order. The
 * block is the node's `getBlock` result text as it came (its integers exact whatever their size);
 * each answer is parsed once to check its shape and read its hash and height, and a damaged one is
 * asked for again. Skipped slots are left out (counted). Progress and the node's errors by kind go
 * to the log.
 */
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { checkBlockShape } from '../../ingest/rpc/shape.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import type { RpcBlock } from '../../rpc/types.ts'
import { errorMessage } from '../../util/errors.ts'
import { archiveLinePieces, openRange, rangeProgress, type RangeFlags } from './rpc-range.ts'

export interface DumpResult {
  blocks: number
  skipped: number
  first: number | null
  last: number | null
  from: number
  to: number
}

/** the hash and height of a fetched block, or the problem that makes it damaged */
function readHeader(result: Buffer): { hash: string; height: number | null } | { problem: string } {
  let block: RpcBlock
  try {
    block = parseJsonExact(result.toString('utf8')) as RpcBlock
  } catch (e) {
    return { problem: `not JSON: ${errorMessage(e)}` }
  }
  const problem = checkBlockShape(block)
  if (problem !== null) return { problem }
  const h = block.blockHeight
  if (h != null && (typeof h !== 'number' || !Number.isSafeInteger(h)))
    return { problem: 'blockHeight is not an integer' }
  return { hash: block.blockhash, height: h ?? null }
}

export async function runDump(
  url: string,
  o: RangeFlags & { damagedAttempts?: number },
  out: Writable,
  log: (line: string) => void,
  signal?: AbortSignal,
  everyMs = 10_000,
): Promise<DumpResult> {
  const r = await openRange(url, o, log)
  const res: DumpResult = { blocks: 0, skipped: 0, first: null, last: null, from: r.from, to: r.to }
  const t0 = Date.now()
  let shown = t0
  const attempts = o.damagedAttempts ?? 5
  try {
    if (r.from <= r.to) await r.fetcher.checkAvailable(r.from, signal)
    for await (let item of r.fetcher.slots(r.from, r.to, signal)) {
      let header = item.kind === 'block' ? readHeader(item.result) : null
      for (let n = 1; header && 'problem' in header; n++) {
        if (n >= attempts) throw new Error(`slot ${item.slot}: damaged answer ${n} times: ${header.problem}`)
        log(`slot ${item.slot}: damaged answer (${header.problem}); asking again`)
        // (the answer replaced is released by the fetcher; this one is left to the collector)
        item = await r.fetcher.fetchSlot(item.slot, signal)
        header = item.kind === 'block' ? readHeader(item.result) : null
      }
      if (item.kind === 'skipped') {
        res.skipped++
        continue
      }
      const { hash, height } = header as { hash: string; height: number | null }
      for (const piece of archiveLinePieces(item.slot, item.result, hash, height)) {
        if (!out.write(piece)) await once(out, 'drain')
      }
      if (!out.write('\n')) await once(out, 'drain')
      res.blocks++
      res.first ??= item.slot
      res.last = item.slot
      if (Date.now() - shown >= everyMs) {
        shown = Date.now()
        log(rangeProgress(r, r.from, item.slot, (shown - t0) / 1000))
      }
    }
  } finally {
    r.close()
  }
  const errors = r.fetcher.errorSummary()
  log(
    `dumped ${res.blocks} blocks of slots ${r.from}..${r.to} from ${r.node}` +
      (res.skipped ? ` (${res.skipped} listed slots answered skipped)` : '') +
      (errors ? `; the node: ${errors}` : '') +
      ` in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  )
  return res
}
