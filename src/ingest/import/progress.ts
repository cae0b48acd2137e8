/**
 * The import's progress line on stderr: blocks, blocks/s, percentage and ETA from what the input
 * says it has read of its total (types.ts `ImportInput`), redrawn in place on a TTY, else a line
 * every 10 s.
 */
import { fmtDuration } from '../../util/duration.ts'
import type { ImportInput } from './types.ts'

export type ProgressMode = 'tty' | 'lines' | 'none'

export class Progress {
  private last = 0
  private readonly start = Date.now()
  constructor(
    private readonly mode: ProgressMode,
    private readonly input: ImportInput,
    private readonly write: (s: string) => void,
  ) {}

  update(imported: number, skipped: number, force = false): void {
    if (this.mode === 'none') return
    const now = Date.now()
    if (!force && now - this.last < (this.mode === 'tty' ? 200 : 10_000)) return
    this.last = now
    const secs = (now - this.start) / 1000
    const rate = secs > 0 ? imported / secs : 0
    const total = this.input.total()
    const frac = total > 0 ? Math.min(1, this.input.done() / total) : 0
    const eta = frac > 0 && frac < 1 ? (secs * (1 - frac)) / frac : frac >= 1 ? 0 : NaN
    const width = 24
    const fill = Math.round(frac * width)
    const bar = `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}]`
    const text =
      `${bar} ${(frac * 100).toFixed(1).padStart(5)}% ${imported.toLocaleString('en-US')} blocks` +
      `${skipped ? ` (${skipped.toLocaleString('en-US')} skipped)` : ''}, ${rate.toFixed(0)} blocks/s, ETA ${fmtDuration(eta)}` +
      (this.input.status?.() ?? '')
    this.write(this.mode === 'tty' ? `\r${text}\x1b[K` : `${text}\n`)
  }

  done(): void {
    if (this.mode === 'tty') this.write('\n')
  }
}
