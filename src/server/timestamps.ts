/**
 * `/timestamps/{t}/block`: the first block at or after a time, found by a binary search over block
 * numbers instead of a scan. Block timestamps are non-decreasing along a chain, so each probe opens
 * the one chunk holding the first produced block at or above the probed number and either answers
 * from it or halves the range: O(log(range)) chunk opens whatever the dataset's size.
 */
import type { Chunk } from '../store/chunk.ts'
import type { BlockStore } from '../store/types.ts'
import { lowerBound } from '../util/search.ts'

/** the chunk holding the first produced block in [from, to], or null when there is none */
async function firstChunk(store: BlockStore, from: number, to: number): Promise<Chunk | null> {
  for await (const c of store.chunks(from, to, false)) return c
  return null
}

/** Number of the first block in [from, to] whose timestamp is >= `ts`, or null. */
export async function firstBlockAtOrAfter(
  store: BlockStore,
  from: number,
  to: number,
  ts: number,
): Promise<number | null> {
  let lo = from
  let hi = to
  let best: number | null = null
  while (lo <= hi) {
    const mid = lo + Math.floor((hi - lo) / 2)
    const c = await firstChunk(store, mid, hi)
    if (!c) {
      hi = mid - 1 // no produced block in [mid, hi]
      continue
    }
    const nums = c.header('number')
    const times = c.header('timestamp')
    // the chunk's blocks inside [lo, hi]: positions [p, q)
    const p = lowerBound(nums, lo)
    const q = lowerBound(nums, hi + 1)
    if (p >= q) {
      hi = mid - 1
      continue
    }
    if (times[q - 1] < ts) {
      lo = nums[q - 1] + 1 // everything up to the chunk's last block is earlier
      continue
    }
    if (times[p] >= ts) {
      best = nums[p] // the answer is this block or an earlier one below the chunk
      hi = nums[p] - 1
      continue
    }
    // the answer is inside the chunk: times[p] < ts <= times[q - 1]
    let a = p + 1
    let b = q - 1
    while (a < b) {
      const m = (a + b) >>> 1
      if (times[m] >= ts) b = m
      else a = m + 1
    }
    return nums[a]
  }
  return best
}
