/** Index of the first element of the ascending `a[lo..hi)` that is >= v (hi when none). */
export function lowerBound(a: ArrayLike<number>, v: number, lo = 0, hi = a.length): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid] < v) lo = mid + 1
    else hi = mid
  }
  return lo
}
