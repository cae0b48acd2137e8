/**
 * How far the stored chain is behind the node it follows.
 *
 * The source reports every head slot it reads from the node (`getSlot` at its commitment). The lag
 * in slots is the node's last reported head minus the stored head; the lag in seconds is how long
 * ago the node first reported a slot above the stored head (0 when nothing the node has reported
 * is missing). Both are measured on this machine's clock only: no block timestamps, so a node with
 * a skewed clock or a chain with skipped slots does not distort them.
 */
export class NodeHeadTracker {
  /** the node's last reported head slot, null before the first report */
  slot: number | null = null
  /** when it was reported (ms since the epoch) */
  at = 0
  /** increasing head slots with the time each was first reported */
  private readonly seen: { slot: number; at: number }[] = []
  private readonly cap: number

  constructor(cap = 10_000) {
    this.cap = cap
  }

  observe(slot: number, now = Date.now()): void {
    this.slot = slot
    this.at = now
    const last = this.seen[this.seen.length - 1]
    if (last && slot <= last.slot) return
    this.seen.push({ slot, at: now })
    if (this.seen.length > this.cap) this.seen.splice(0, this.seen.length - this.cap)
  }

  /** the lag of a stored head behind the node; null before the node's first report */
  lag(storedHead: number | null, now = Date.now()): { slots: number; seconds: number } | null {
    if (this.slot === null) return null
    const stored = storedHead ?? -1
    // reports at or below the stored head are answered; they are never needed again
    let i = 0
    while (i < this.seen.length && this.seen[i].slot <= stored) i++
    const oldest = this.seen[i]
    // keep the last report, so a head that goes back (a fork) is measured from it
    if (i > 0) this.seen.splice(0, Math.min(i, this.seen.length - 1))
    return {
      slots: Math.max(0, this.slot - stored),
      seconds: oldest ? Math.max(0, (now - oldest.at) / 1000) : 0,
    }
  }
}
