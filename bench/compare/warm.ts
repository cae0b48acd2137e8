/**
 * The compare bench's warm-up rule, for every system alike: after the first, checked run of a
 * query, untimed runs while they add up to under `warmMs` (at most `maxRuns`), unless the query
 * itself takes that long. The checked run's time also holds the client's check of every line
 * (parse and hash), which for a fast query with a large output is most of it; so when the checked
 * run took `warmMs` or more, one plain run (`runOnce`, its output only counted) decides.
 * Returns the number of untimed runs made after the checked one.
 */
export async function warmUp(
  checkedMs: number,
  runOnce: () => Promise<unknown>,
  warmMs: number,
  maxRuns = 30,
): Promise<number> {
  const timed = async () => {
    const t0 = performance.now()
    await runOnce()
    return performance.now() - t0
  }
  let runs = 0
  if (checkedMs >= warmMs) {
    runs++
    if ((await timed()) >= warmMs) return runs
  }
  for (let i = 0, warm = 0; i < maxRuns && warm < warmMs; i++) {
    warm += await timed()
    runs++
  }
  return runs
}
