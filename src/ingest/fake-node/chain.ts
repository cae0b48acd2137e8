/**
 * The fake node's chain model: blocks produced one after another (slots skipped at `skipRate`),
 * finalization lagging the confirmed head by `finalityLag` slots, and forks that replace the
 * newest unfinalized blocks by another branch with its own skip pattern and hashes.
 */
import { createHash } from 'node:crypto'
import { base58Encode } from '../../util/base58.ts'
import type { Commitment, FakeBlockInfo, FakeNodeStats, ResolvedOptions } from './types.ts'

export class FakeChain {
  /** the current (canonical) chain, ascending */
  readonly blocks: FakeBlockInfo[] = []
  readonly bySlot = new Map<number, FakeBlockInfo>()
  /** every block that was ever part of the chain and then replaced by a fork */
  readonly orphans: FakeBlockInfo[] = []
  private nextSlot: number
  finalized = -1
  private variantCounter = 0
  private producedCount = 0

  constructor(
    private readonly opts: ResolvedOptions,
    private readonly templateCount: number,
    /** the production PRNG (skips) */
    private readonly rnd: () => number,
    private readonly stats: FakeNodeStats,
    /** called with each block appended (the node assembles its text with `prerender`) */
    private readonly onAppend: (b: FakeBlockInfo) => void,
  ) {
    this.nextSlot = opts.startSlot
  }

  /** the first block (never skipped, so that the chain starts at startSlot) */
  genesis(): void {
    this.appendBlock(this.nextSlot++, null)
  }

  hashOf(slot: number, variant: number): string {
    return base58Encode(createHash('sha256').update(`fake:${this.opts.seed}:${slot}:${variant}`).digest())
  }

  private appendBlock(slot: number, parent: FakeBlockInfo | null, variant = 0): FakeBlockInfo {
    const b: FakeBlockInfo = {
      slot,
      hash: this.hashOf(slot, variant),
      parentSlot: parent ? parent.slot : slot - 1,
      parentHash: parent ? parent.hash : this.hashOf(slot - 1, -1),
      height: parent ? parent.height + 1 : this.opts.startHeight,
      time: Math.floor(1_700_000_000 + (slot - this.opts.startSlot) * this.opts.slotSeconds),
      variant,
      template: (slot - this.opts.startSlot) % this.templateCount,
    }
    this.onAppend(b)
    this.blocks.push(b)
    this.bySlot.set(slot, b)
    this.updateFinalized()
    return b
  }

  updateFinalized(): void {
    const tip = this.blocks[this.blocks.length - 1]
    const limit = tip.slot - this.opts.finalityLag
    // highest block at or below the limit; never moves back
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const b = this.blocks[i]
      if (b.slot <= limit) {
        if (b.slot > this.finalized) this.finalized = b.slot
        break
      }
    }
  }

  /** produce the next block (skipping slots at skipRate); scripted forks happen here */
  produce(): FakeBlockInfo {
    while (this.rnd() < this.opts.skipRate) this.nextSlot++
    const parent = this.blocks[this.blocks.length - 1]
    const b = this.appendBlock(this.nextSlot++, parent)
    this.producedCount++
    if (this.opts.forkEvery > 0 && this.producedCount % this.opts.forkEvery === 0) {
      this.fork(this.opts.forkDepth)
    }
    return b
  }

  /** see `FakeSolanaNode.fork` */
  fork(depth: number, branchLength = depth): number {
    let k = 0
    while (k < depth && k < this.blocks.length - 1 && this.blocks[this.blocks.length - 1 - k].slot > this.finalized) k++
    if (k === 0) return 0
    const removed = this.blocks.splice(this.blocks.length - k, k)
    for (const b of removed) {
      this.bySlot.delete(b.slot)
      this.orphans.push(b)
    }
    this.stats.forks++
    this.stats.orphaned += removed.length
    const variant = ++this.variantCounter
    let slot = removed[0].slot
    let parent = this.blocks[this.blocks.length - 1]
    for (let i = 0; i < Math.max(1, branchLength); i++) {
      if (i > 0) while (this.rnd() < this.opts.skipRate) slot++
      parent = this.appendBlock(slot++, parent, variant)
    }
    this.nextSlot = Math.max(this.nextSlot, slot)
    return k
  }

  /** index of the first chain block with slot >= s */
  lowerBound(s: number): number {
    let lo = 0
    let hi = this.blocks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.blocks[mid].slot < s) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** the slots of the chain's blocks in [start, end], at most `limit` */
  slotsIn(start: number, end: number, limit = Infinity): number[] {
    const out: number[] = []
    for (
      let i = this.lowerBound(start);
      i < this.blocks.length && this.blocks[i].slot <= end && out.length < limit;
      i++
    ) {
      out.push(this.blocks[i].slot)
    }
    return out
  }

  get tip(): FakeBlockInfo {
    return this.blocks[this.blocks.length - 1]
  }

  headSlot(c: Commitment): number {
    return c === 'finalized' ? this.finalized : this.tip.slot
  }
}
