/** A duration in seconds as progress lines show it: `1h05m`, `3m07s`, `42s` (`?` when unknown). */
export function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return '?'
  s = Math.round(s)
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = s % 60
  return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`
}
