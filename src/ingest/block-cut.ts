/**
 * Cutting a `getBlock` answer's bytes in two halves of its transactions, so that the two threads
 * decoding a large answer (block-workers.ts) each read only its own half: no thread turns the
 * whole text into a string or walks through all of it.
 *
 * Both threads compute the same cut from the bytes (`locateCut`, deterministic; the rule is
 * src/rpc/split-bytes.ts's): the `[` of the transactions array (the keys before it walked exactly,
 * as src/rpc/split.ts does), the first
 * element and its opening text up to its first `:` (`{"transaction":`), the last and the first
 * after the middle of [first, last] that follow the rule of split.ts's guessed cut (that opening
 * text preceded by `}` `,` and whitespace only). Part 0 decodes [first element, cut), part 1
 * [cut, end of text), each from its own bytes only, the elements cut by split.ts's guess.
 *
 * Why the parts are the block's elements when each part's own checks pass (`cutSide`):
 * - part 0 reads from the true first element (the walk to the `[` is exact); its pieces all parse,
 *   so by split.ts's induction they are the elements, and its last piece ends at the `}` before
 *   the `,` before the cut: the cut is where an element starts;
 * - part 1 then reads from a true element start, so the same induction holds for its pieces; its
 *   last one is measured exactly and followed by `]`: the array's end;
 * - the text around the array (its `[` and everything after its `]`) is checked with the exact
 *   scan of split.ts (`splitTransactions` must find the transactions array there, empty); part 0
 *   takes the text after the array from the same last element as part 1 (same bytes, same rule);
 * - part 1's first position is the number of elements before the cut: the count of the same rule's
 *   matches in [first, cut), which are part 0's pieces.
 * So a part whose own checks fail cannot tell whether the other part is right: it decodes the
 * whole answer the exact way instead (block-decode.ts), and the join takes that whole answer
 * (block-workers.ts `joinParts`, which also checks that the parts' positions follow each other).
 * When no cut is found (no such array, a single element, an opening text that could overlap
 * itself), both threads find that alike and decode their part the exact way (the whole text).
 */
import { arrayStart, endBefore, isCut, nextElement } from '../rpc/split-bytes.ts'

/** where both parts of an answer cut it (byte offsets) */
export interface Cut {
  /** the `[` of the transactions array */
  open: number
  /** the first element's `{` */
  first: number
  /** the `{` of the element that part 1 starts with */
  cut: number
  /** the `{` of the last element */
  last: number
  /** the elements' common opening text (`{"transaction":`) */
  opening: Buffer
}

/** the cut of an answer (`path`: the members leading to the block), or null: no cut, decode exactly */
export function locateCut(b: Buffer, path: readonly string[]): Cut | null {
  const start = arrayStart(b, path)
  if (start === null) return null
  const { open, first, opening } = start
  let last = b.lastIndexOf(opening)
  while (last > first && !isCut(b, last)) last = b.lastIndexOf(opening, last - 1)
  if (last <= first) return null
  const cut = nextElement(b, opening, first + Math.max(1, Math.floor((last - first) / 2)))
  if (cut < 0 || cut > last) return null
  return { open, first, cut, last, opening }
}

/** the number of elements before the cut: the first one and the rule's matches after it */
export function elementsBefore(b: Buffer, c: Cut): number {
  let n = 1
  for (let at = nextElement(b, c.opening, c.first + 1); at >= 0 && at < c.cut; at = nextElement(b, c.opening, at + 1))
    n++
  return n
}

/** the end of part 0's bytes: after the `}` that ends the element before the cut */
export function endBeforeCut(b: Buffer, c: Cut): number {
  return endBefore(b, c.cut)
}
