/**
 * The fake node's damaged `getBlock` answers (`injectBlockFault`): faults queued per slot, used in
 * order by the next full answers of that slot, and the damaged text of each kind. (The HTTP faults,
 * 429s and dropped connections, are drawn per request in http.ts.)
 */
import type { BlockFault, FakeNodeStats } from './types.ts'

export class BlockFaults {
  private readonly bySlot = new Map<number, { fault: BlockFault; left: number }[]>()

  constructor(private readonly stats: FakeNodeStats) {}

  /** damage the next `times` full getBlock answers for `slot` (Infinity: all of them) */
  inject(slot: number, fault: BlockFault, times = 1): void {
    const list = this.bySlot.get(slot) ?? []
    list.push({ fault, left: times })
    this.bySlot.set(slot, list)
  }

  /** forget the faults still pending for `slot` (all slots when omitted) */
  clear(slot?: number): void {
    if (slot === undefined) this.bySlot.clear()
    else this.bySlot.delete(slot)
  }

  /** the fault of the next full answer for `slot`, or null */
  take(slot: number): BlockFault | null {
    const list = this.bySlot.get(slot)
    if (!list?.length) return null
    const f = list[0]
    if (--f.left <= 0) list.shift()
    if (!list.length) this.bySlot.delete(slot)
    this.stats.blockFaults++
    return f.fault
  }
}

/** the faulty text of a full answer */
export function damaged(text: string, fault: BlockFault): string {
  if (fault.kind === 'oversize') {
    const pad = Math.max(0, fault.bytes - text.length)
    return text.slice(0, -1) + `,"padding":"${'x'.repeat(pad)}"}`
  }
  const block = JSON.parse(text) as Record<string, unknown>
  const txs = block.transactions as Record<string, unknown>[]
  if (fault.kind === 'junk-transactions') block.transactions = txs.map((_t, i) => ({ junk: i }))
  else if (fault.kind === 'transactions-not-list') block.transactions = { count: txs.length }
  else if (fault.kind === 'no-meta') for (const t of txs) delete t.meta
  else if (fault.kind === 'bad-hash') block[fault.member] = fault.text
  else if (fault.kind === 'null-instructions') {
    for (const t of txs) (t.transaction as { message: { instructions: unknown } }).message.instructions = [null]
  }
  return JSON.stringify(block)
}
