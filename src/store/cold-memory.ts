/**
 * An in-memory ColdStore (tests, the demo): finalized blocks in an append-only array, served as
 * cached MemoryChunks of `chunkSize` consecutive blocks. Not durable across processes.
 */
import type { Block } from '../model.ts'
import type { Chunk, HeadInfo } from './chunk.ts'
import { MemoryChunk } from './memory.ts'
import type { ColdStore } from './types.ts'
import { lowerBound } from '../util/search.ts'

export class MemoryColdStore implements ColdStore {
  private readonly blocks: Block[] = []
  private readonly numbers: number[] = []
  private readonly chunkCache = new Map<number, MemoryChunk>()
  /** every append call, for tests (block numbers) */
  readonly appends: number[][] = []

  constructor(
    initial: Block[] = [],
    private readonly chunkSize = 64,
  ) {
    if (initial.length) this.appendSync(initial)
  }

  get size(): number {
    return this.blocks.length
  }

  /** all stored blocks (ascending); the array is live, do not modify */
  all(): readonly Block[] {
    return this.blocks
  }

  firstBlock(): number | null {
    return this.blocks.length ? this.numbers[0] : null
  }

  lastBlock(): HeadInfo | null {
    const b = this.blocks[this.blocks.length - 1]
    return b ? { number: b.header.number, hash: b.header.hash } : null
  }

  private appendSync(blocks: Block[]): void {
    let prev = this.blocks[this.blocks.length - 1]?.header
    for (const b of blocks) {
      if (prev && b.header.number <= prev.number) {
        throw new Error(`cold append: block ${b.header.number} is not above ${prev.number}`)
      }
      if (prev && (b.header.parentNumber !== prev.number || b.header.parentHash !== prev.hash)) {
        throw new Error(`cold append: block ${b.header.number} does not link to ${prev.number}`)
      }
      prev = b.header
    }
    for (const b of blocks) {
      this.blocks.push(b)
      this.numbers.push(b.header.number)
    }
    this.appends.push(blocks.map((b) => b.header.number))
  }

  async append(blocks: Block[]): Promise<void> {
    if (blocks.length) this.appendSync(blocks)
  }

  private chunkAt(ci: number, end: number): MemoryChunk {
    const hi = Math.min(end, (ci + 1) * this.chunkSize)
    const full = hi === (ci + 1) * this.chunkSize
    let c = full ? this.chunkCache.get(ci) : undefined
    if (!c) {
      c = new MemoryChunk(this.blocks.slice(ci * this.chunkSize, hi))
      if (full) this.chunkCache.set(ci, c)
    }
    return c
  }

  async *chunks(from: number, to: number): AsyncIterable<Chunk> {
    const start = lowerBound(this.numbers, from)
    const end = lowerBound(this.numbers, to + 1) // exclusive, fixed at call time
    for (let ci = Math.floor(start / this.chunkSize); ci * this.chunkSize < end; ci++) {
      yield this.chunkAt(ci, end)
    }
  }

  async chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    const end = lowerBound(this.numbers, n)
    const out: HeadInfo[] = []
    for (let i = Math.max(0, end - limit); i < end; i++) {
      out.push({ number: this.blocks[i].header.number, hash: this.blocks[i].header.hash })
    }
    return out
  }
}
