/**
 * The Portal streaming protocol around a stream response (docs/query.md §4): when a response
 * starts (waiting for a block above the head, 204 when none arrives), the fork check of
 * `parentBlockHash` (409 with the chain's previous blocks, so the client rolls back), and
 * following the head once the blocks up to it are out. What a response writes in between is
 * src/server/stream-blocks.ts.
 */
import type http from 'node:http'
import type { ParsedQuery } from '../query/index.ts'
import type { HeadInfo } from '../store/chunk.ts'
import type { Dataset } from './datasets.ts'
import type { LineWriter } from './line-writer.ts'

/** the head a stream reads up to: the finalized one for /finalized-stream */
export function headOf(ds: Dataset, finalizedOnly: boolean): HeadInfo | null {
  return finalizedOnly ? ds.store.finalizedHead() : ds.store.head()
}

/** the X-Sqd-* head headers of a stream answer (200 and 204) */
export function headHeaders(ds: Dataset, finalizedOnly: boolean): Record<string, string> {
  const h: Record<string, string> = {}
  const head = headOf(ds, finalizedOnly)
  if (head) h['X-Sqd-Head-Number'] = String(head.number)
  const fin = ds.store.finalizedHead()
  if (fin) {
    h['X-Sqd-Finalized-Head-Number'] = String(fin.number)
    h['X-Sqd-Finalized-Head-Hash'] = fin.hash
  }
  return h
}

/** 409: the client's parent block is not on the chain; it gets the blocks before `fromBlock` */
async function conflict(res: http.ServerResponse, ds: Dataset, fromBlock: number): Promise<void> {
  const previousBlocks = await ds.store.chainBefore(fromBlock, 100)
  res.writeHead(409, { 'Content-Type': 'application/json' })
  res.end(JSON.stringify({ previousBlocks }))
}

/**
 * Before a response starts: a `fromBlock` above the head waits up to `headWaitMs` for it (204
 * when it does not come), and a `parentBlockHash` that is not the parent on the chain is a 409.
 * Returns the head to read up to, or null when the request was answered (or its client is gone).
 */
export async function startingHead(
  res: http.ServerResponse,
  ds: Dataset,
  q: ParsedQuery,
  finalizedOnly: boolean,
  headWaitMs: number,
  gone: AbortSignal,
  stop: AbortSignal,
): Promise<HeadInfo | null> {
  const store = ds.store
  let head = headOf(ds, finalizedOnly)
  if (!head || q.fromBlock > head.number) {
    // fromBlock = head + 1 on another chain: the client must roll back now, not in 5 s
    if (head && q.fromBlock === head.number + 1 && q.parentBlockHash != null && q.parentBlockHash !== head.hash) {
      await conflict(res, ds, q.fromBlock)
      return null
    }
    const arrived = await store.waitFor(q.fromBlock, finalizedOnly, headWaitMs, stop)
    if (gone.aborted) {
      res.destroy()
      return null
    }
    head = headOf(ds, finalizedOnly)
    if (!arrived || !head || q.fromBlock > head.number) {
      res.writeHead(204, { 'Content-Type': 'text/plain; charset=utf-8', ...headHeaders(ds, finalizedOnly) })
      res.end()
      return null
    }
  }
  if (q.parentBlockHash != null) {
    const chain = await store.chainBefore(q.fromBlock, 1)
    const parent = chain[chain.length - 1]
    if (parent && parent.hash !== q.parentBlockHash) {
      await conflict(res, ds, q.fromBlock)
      return null
    }
  }
  return head
}

/**
 * After the blocks up to `to` are out (the last one being `last`): whether the response goes on,
 * and the new head if it does. It ends at `toBlock`, at the head of a dataset without a live
 * source, at the deadline, when no block comes, and when a fork replaced `last` (the client
 * resumes with parentBlockHash and learns about the fork through a 409). What was written is
 * flushed before waiting.
 */
export async function followHead(
  ds: Dataset,
  q: ParsedQuery,
  last: HeadInfo,
  to: number,
  finalizedOnly: boolean,
  out: LineWriter,
  deadline: number,
  stop: AbortSignal,
): Promise<HeadInfo | null> {
  // the range is finished once a segment reached toBlock (blocks up to it may be skipped slots)
  if (q.toBlock != null && (last.number >= q.toBlock || to >= q.toBlock)) return null
  // a dataset without a live source never grows: end at the head
  if (!ds.realTime) return null
  // Follow the head: wait for the next block (flushing what we have first).
  await out.flush()
  const remaining = deadline - Date.now()
  if (remaining <= 0) return null
  const store = ds.store
  const arrived = await store.waitFor(last.number + 1, finalizedOnly, remaining, stop)
  if (!arrived || stop.aborted) return null
  // A fork replaced the block we ended on: end here.
  const parent = (await store.chainBefore(last.number + 1, 1))[0]
  if (!parent || parent.number !== last.number || parent.hash !== last.hash) return null
  const head = headOf(ds, finalizedOnly)
  if (!head || head.number <= last.number) return null
  return head
}
