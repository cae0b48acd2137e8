/**
 * `fn` over `items`, one item per turn of the event loop: for work that takes milliseconds an item
 * (copying megabytes into new memory) on a thread that also serves streams, which then wait for
 * one item at most instead of for all of them.
 */
export async function mapAcrossTurns<T, R>(items: readonly T[], fn: (item: T) => R): Promise<R[]> {
  const out: R[] = []
  for (const item of items) {
    if (out.length > 0) await new Promise<void>((resolve) => setImmediate(resolve))
    out.push(fn(item))
  }
  return out
}
