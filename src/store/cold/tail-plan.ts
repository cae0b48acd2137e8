/**
 * Planning an append's new chunks and the LSM compaction of the unsealed tail (`DiskColdStore`):
 * blocks are split into chunks of at most `targetBlocks` and about `targetBytes` (by an estimate of
 * their encoded size), `fanout` unsealed chunks of one level merge into one of the next level, and
 * a tail that reaches a chunk's worth is rewritten as sealed chunks. A `Plan` collects the entries
 * of the new catalogue state and the files written for it.
 */
import type { Block } from '../../model.ts'
import type { ChunkColumns } from './chunk-file.ts'
import type { ChunkEntry } from './chunk-index/chunk-index.ts'

/**
 * Rough encoded size of a block, to split appends into chunks of about `targetBytes`.
 * Calibrated on generated mainnet-shaped busy blocks (bench/cold.bench.ts prints the ratio of
 * real to estimated size): per-row costs of the columns, 4-byte dictionary codes for addresses.
 */
export function estimateBlockBytes(b: Block): number {
  let n = 200 + b.logs.length * 12 + b.balances.length * 50 + b.tokenBalances.length * 150 + b.rewards.length * 60
  for (const t of b.transactions) {
    n +=
      150 +
      t.signatures.length * 90 +
      t.accountKeys.length * 4 +
      (t.loadedAddresses.writable.length + t.loadedAddresses.readonly.length) * 47
  }
  for (const ix of b.instructions) n += 30 + ix.accounts.length * 4 + ix.data.length + Math.min(34, ix.data.length)
  for (const l of b.logs) n += l.message.length
  return n
}

export function estimateAll(blocks: readonly Block[]): number {
  let n = 0
  for (const b of blocks) n += estimateBlockBytes(b)
  return n
}

/** What a plan needs of its store: the size targets, and writing and reading chunks. */
export interface PlanStore {
  readonly targetBlocks: number
  readonly targetBytes: number
  readonly fanout: number
  /** write chunk file `i` of generation `gen` holding `blocks` (or blocks taken into columns): its catalogue entry */
  writeChunk(
    blocks: Block[] | ChunkColumns,
    gen: number,
    i: number,
    sealed: boolean,
    level: number,
  ): Promise<ChunkEntry>
  /** the blocks of listed chunks */
  readEntries(entries: readonly ChunkEntry[]): Promise<Block[]>
}

/** an entry of a planned unsealed tail: its estimated bytes, its blocks when at hand */
export interface TailItem {
  e: ChunkEntry
  est: number
  blocks: Block[] | null
}

/** whether `blocks` make a full chunk */
export function isFull(store: PlanStore, blocks: readonly Block[]): boolean {
  return blocks.length >= store.targetBlocks || estimateAll(blocks) >= store.targetBytes
}

/** split into groups of at most targetBlocks and about targetBytes */
export function splitBlocks(store: PlanStore, blocks: readonly Block[]): Block[][] {
  const out: Block[][] = []
  let cur: Block[] = []
  let bytes = 0
  for (const b of blocks) {
    const s = estimateBlockBytes(b)
    if (cur.length && (cur.length >= store.targetBlocks || bytes + s > store.targetBytes)) {
      out.push(cur)
      cur = []
      bytes = 0
    }
    cur.push(b)
    bytes += s
  }
  if (cur.length) out.push(cur)
  return out
}

/** A new catalogue state being prepared: entries that follow the kept ones, the files written. */
export class Plan {
  readonly sealed: ChunkEntry[] = []
  readonly tail: TailItem[] = []
  readonly files: string[] = []
  /** the index of the next chunk file of the plan's generation */
  next = 0

  constructor(
    readonly gen: number,
    private readonly store: PlanStore,
  ) {}

  entries(): ChunkEntry[] {
    return [...this.sealed, ...this.tail.map((t) => t.e)]
  }

  /** write a chunk of the plan */
  async chunk(blocks: Block[] | ChunkColumns, sealed: boolean, level: number): Promise<ChunkEntry> {
    const e = await this.store.writeChunk(blocks, this.gen, this.next++, sealed, level)
    this.files.push(e.file)
    return e
  }

  /**
   * `blocks` (the whole unsealed tail's and new ones: nothing unsealed before them) split into
   * chunks: every one sealed but the last, which is sealed when full, else joins the tail
   */
  async groups(blocks: Block[], level: number): Promise<void> {
    const groups = splitBlocks(this.store, blocks)
    for (let i = 0; i < groups.length; i++) {
      const full = i < groups.length - 1 || isFull(this.store, groups[i])
      const e = await this.chunk(groups[i], full, full ? 0 : level)
      if (full) this.sealed.push(e)
      else this.tail.push({ e, est: estimateAll(groups[i]), blocks: groups[i] })
    }
  }

  /**
   * `groups` of the whole unsealed tail's blocks and `blocks`, the tail's blocks given as columns
   * (`tail`, TailColumns; `est` their estimated bytes) instead of records: the same chunks. The
   * tail is below a chunk's size (the caller checks), so it falls whole in the first chunk, which
   * takes new blocks as `splitBlocks` would; the rest are split by `groups`.
   */
  async groupsAfter(tail: ChunkColumns, est: number, blocks: Block[], level: number): Promise<void> {
    const { targetBlocks, targetBytes } = this.store
    let n = tail.blockCount
    let bytes = est
    let k = 0
    for (; k < blocks.length; k++) {
      const s = estimateBlockBytes(blocks[k])
      if (n >= targetBlocks || bytes + s > targetBytes) break
      n++
      bytes += s
      tail.add(blocks[k])
    }
    const full = k < blocks.length || n >= targetBlocks || bytes >= targetBytes
    const e = await this.chunk(tail, full, full ? 0 : level)
    if (full) this.sealed.push(e)
    else this.tail.push({ e, est: bytes, blocks: null })
    if (k < blocks.length) await this.groups(blocks.slice(k), level)
  }

  /**
   * LSM compaction of the planned tail: `fanout` unsealed chunks of one level merge into one of
   * the next level. The tail is below a chunk's size by the estimate (else it was sealed), so a
   * merge of part of it is one unsealed chunk; should it not be, the whole tail is rewritten
   * (a sealed chunk may not follow unsealed ones).
   */
  async merges(): Promise<void> {
    const fanout = this.store.fanout
    for (;;) {
      const t = this.tail
      if (t.length < fanout) return
      const last = t.slice(-fanout)
      if (!last.every((x) => x.e.level === last[0].e.level)) return
      const level = last[0].e.level + 1
      const whole = splitBlocks(this.store, await this.blocksOf(last))
      if (whole.length === 1 && !isFull(this.store, whole[0])) {
        const e = await this.chunk(whole[0], false, level)
        t.splice(t.length - fanout, fanout, { e, est: estimateAll(whole[0]), blocks: whole[0] })
        continue
      }
      const all = await this.blocksOf(t)
      t.length = 0
      await this.groups(all, level)
    }
  }

  /** the blocks of planned tail entries, read from their files when not at hand */
  private async blocksOf(items: readonly TailItem[]): Promise<Block[]> {
    const out: Block[] = []
    for (const x of items) for (const b of x.blocks ?? (x.blocks = await this.store.readEntries([x.e]))) out.push(b)
    return out
  }
}
