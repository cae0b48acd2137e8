/**
 * The real-time dataset's store: a finalized ColdStore below a fork-aware HotStore, seamlessly.
 * Every call works on one snapshot (cold last block + the hot window, taken together
 * synchronously), so a fork or a finalization during a stream never mixes chains. Heads are
 * answered from memory; `waitFor` is woken by the hot store's `change` events (no polling).
 * It is fed by the live ingester (src/ingest/realtime/).
 */
import { EventEmitter } from 'node:events'
import type { Chunk, HeadInfo } from './chunk.ts'
import { HotStore, type HotEntry } from './hot.ts'
import { MemoryChunk } from './memory.ts'
import type { BlockStore, ColdStore } from './types.ts'

export interface RealtimeStoreOptions {
  hot: HotStore
  cold: ColdStore
  /** hot blocks are served in chunks of blocks whose numbers share floor(number / hotChunkSlots) (default 16) */
  hotChunkSlots?: number
}

interface Snapshot {
  coldLast: HeadInfo | null
  hot: readonly HotEntry[]
}

export class RealtimeStore implements BlockStore {
  readonly hot: HotStore
  readonly cold: ColdStore
  private readonly hotChunkSlots: number
  private readonly chunkCache = new Map<number, { key: string; chunk: MemoryChunk }>()
  private readonly events = new EventEmitter()

  constructor(opts: RealtimeStoreOptions) {
    this.hot = opts.hot
    this.cold = opts.cold
    this.hotChunkSlots = Math.max(1, opts.hotChunkSlots ?? 16)
    this.events.setMaxListeners(0)
    this.hot.on('change', () => this.events.emit('change'))
  }

  private snapshot(): Snapshot {
    const coldLast = this.cold.lastBlock()
    let hot = this.hot.entries()
    // blocks already appended to the cold store but not yet deleted from the hot one
    if (coldLast && hot.length && hot[0].header.number <= coldLast.number) {
      hot = hot.filter((e) => e.header.number > coldLast.number)
    }
    return { coldLast, hot }
  }

  firstBlock(): number | null {
    const c = this.cold.firstBlock()
    if (c !== null) return c
    const s = this.snapshot()
    return s.hot.length ? s.hot[0].header.number : null
  }

  head(): HeadInfo | null {
    const s = this.snapshot()
    const t = s.hot[s.hot.length - 1]
    return t ? { number: t.header.number, hash: t.header.hash } : s.coldLast
  }

  finalizedHead(): HeadInfo | null {
    return this.cold.lastBlock()
  }

  async *chunks(from: number, to: number, finalizedOnly: boolean): AsyncIterable<Chunk> {
    const s = this.snapshot()
    if (s.coldLast && from <= s.coldLast.number) {
      yield* this.cold.chunks(from, Math.min(to, s.coldLast.number))
    }
    if (finalizedOnly) return
    // hot blocks of the snapshot in [from.., to]; a chunk may start below `from` (the engine clips)
    let i = 0
    const hot = s.hot
    while (i < hot.length && hot[i].header.number < from) i++
    // start at the beginning of from's group, so that groups stay aligned (and cached)
    const group = (n: number) => Math.floor(n / this.hotChunkSlots)
    if (i < hot.length) {
      const g = group(hot[i].header.number)
      while (i > 0 && group(hot[i - 1].header.number) === g) i--
    }
    while (i < hot.length && hot[i].header.number <= to) {
      const g = group(hot[i].header.number)
      let j = i
      while (j < hot.length && hot[j].header.number <= to && group(hot[j].header.number) === g) j++
      yield this.hotChunk(hot, i, j)
      i = j
    }
  }

  /**
   * The chunk of hot[i..j) (one group). One version per group is cached: the tail group is rebuilt
   * as blocks arrive, and groups that left the window are forgotten, so the cache never holds
   * more than the window's blocks.
   */
  private hotChunk(hot: readonly HotEntry[], i: number, j: number): MemoryChunk {
    const g = Math.floor(hot[i].header.number / this.hotChunkSlots)
    const key = `${hot[i].header.hash}:${hot[j - 1].header.hash}:${j - i}`
    const cached = this.chunkCache.get(g)
    if (cached && cached.key === key) return cached.chunk
    const chunk = new MemoryChunk(hot.slice(i, j).map((e) => e.block))
    // a chunk clipped at `to` below the group's end is not cached (the full one is the common case)
    const groupEnd = j === hot.length || Math.floor(hot[j].header.number / this.hotChunkSlots) !== g
    if (groupEnd) {
      this.chunkCache.set(g, { key, chunk })
      const first = this.hot.entries()[0]
      if (first) {
        const low = Math.floor(first.header.number / this.hotChunkSlots)
        for (const k of this.chunkCache.keys()) if (k < low) this.chunkCache.delete(k)
      }
    }
    return chunk
  }

  async chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    if (limit <= 0) return []
    const s = this.snapshot()
    const hot: HeadInfo[] = []
    let k = s.hot.length
    while (k > 0 && s.hot[k - 1].header.number >= n) k--
    for (let i = Math.max(0, k - limit); i < k; i++)
      hot.push({ number: s.hot[i].header.number, hash: s.hot[i].header.hash })
    if (hot.length >= limit || !s.coldLast) return hot
    const coldBelow = Math.min(n, s.coldLast.number + 1)
    const cold = await this.cold.chainBefore(coldBelow, limit - hot.length)
    return [...cold, ...hot]
  }

  waitFor(number: number, finalizedOnly: boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const ready = () => {
      const h = finalizedOnly ? this.finalizedHead() : this.head()
      return h !== null && h.number >= number
    }
    if (ready()) return Promise.resolve(true)
    if (signal?.aborted || timeoutMs <= 0) return Promise.resolve(false)
    return new Promise((resolve) => {
      const done = (v: boolean) => {
        clearTimeout(timer)
        this.events.off('change', onChange)
        signal?.removeEventListener('abort', onAbort)
        resolve(v)
      }
      const onChange = () => {
        if (ready()) done(true)
      }
      const onAbort = () => done(false)
      const timer = setTimeout(() => done(ready()), timeoutMs)
      this.events.on('change', onChange)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** subscribe to changes of the stored chain (new block, fork, finalization) */
  onChange(fn: () => void): () => void {
    this.events.on('change', fn)
    return () => this.events.off('change', fn)
  }
}
