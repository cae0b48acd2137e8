/**
 * A store over a fixed, sorted list of normalized blocks, all finalized (the bundled sample,
 * archive files). Chunks are built lazily and cached.
 */
import type { Block } from '../model.ts'
import type { Chunk, HeadInfo } from './chunk.ts'
import { MemoryChunk } from './memory.ts'
import { lowerBound } from '../util/search.ts'
import type { BlockStore } from './types.ts'

export class StaticStore implements BlockStore {
  private readonly blocks: Block[]
  private readonly numbers: number[]
  private readonly chunkCache = new Map<number, MemoryChunk>()

  constructor(
    blocks: Block[],
    private readonly chunkSize = 64,
  ) {
    this.blocks = [...blocks].sort((a, b) => a.header.number - b.header.number)
    for (let i = 1; i < this.blocks.length; i++) {
      if (this.blocks[i].header.number === this.blocks[i - 1].header.number) {
        throw new Error(`duplicate block ${this.blocks[i].header.number}`)
      }
    }
    this.numbers = this.blocks.map((b) => b.header.number)
  }

  get size(): number {
    return this.blocks.length
  }

  firstBlock(): number | null {
    return this.blocks.length ? this.numbers[0] : null
  }

  head(): HeadInfo | null {
    const b = this.blocks[this.blocks.length - 1]
    return b ? { number: b.header.number, hash: b.header.hash } : null
  }

  finalizedHead(): HeadInfo | null {
    return this.head()
  }

  private chunkAt(ci: number): MemoryChunk {
    let c = this.chunkCache.get(ci)
    if (!c) {
      c = new MemoryChunk(this.blocks.slice(ci * this.chunkSize, (ci + 1) * this.chunkSize))
      this.chunkCache.set(ci, c)
    }
    return c
  }

  async *chunks(from: number, to: number, _finalizedOnly = false): AsyncIterable<Chunk> {
    const start = lowerBound(this.numbers, from)
    const end = lowerBound(this.numbers, to + 1) // exclusive
    if (start >= end) return
    for (let ci = Math.floor(start / this.chunkSize); ci * this.chunkSize < end; ci++) {
      const c = this.chunkAt(ci)
      // never hand out a block above `to`
      if (c.lastBlock > to) {
        yield new MemoryChunk(this.blocks.slice(ci * this.chunkSize, end))
      } else {
        yield c
      }
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

  async waitFor(number: number, _finalizedOnly: boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const h = this.head()
    if (h && h.number >= number) return true
    // a static store never grows: wait out the timeout (the spec's 204 delay), unless aborted
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, timeoutMs)
      signal?.addEventListener('abort', () => {
        clearTimeout(t)
        resolve()
      })
    })
    return false
  }
}
