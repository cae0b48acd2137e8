/**
 * A byte-bounded LRU cache (Map insertion order = recency). The cold store keeps everything it
 * holds per chunk in one such cache (decoded columns, encoded parts and pages read, built rows,
 * filters, and the chunk objects with their footers), so a query touching many chunks never holds
 * more than `maxBytes` of them (beyond what running queries still reference).
 *
 * Least recently used out first finds nothing when a query is repeated over data a little larger
 * than the cache (each entry is evicted just before its next use). Two admission policies that keep
 * part of such data were measured on the compare bench's blocks and not kept, because both held a
 * query run after a wide one out of the cache for many runs (the fee-payer query after the Token
 * query: 1.3-1.7 s a run instead of ~0.1 s): admission by estimated use counts (W-TinyLFU's: the
 * engine looks an entry up many times in one query, so a wide query's counts stay high), and LRU-2
 * admission switched on when most misses are on keys dropped lately (the next query misses the
 * same columns' keys the wide one dropped). Size `--cache-mb` to the data of the queries repeated.
 */
/** a cache's size, budget and counters */
export interface CacheStats {
  bytes: number
  maxBytes: number
  entries: number
  hits: number
  misses: number
  evictions: number
}

export class ByteLru<K, V> {
  private readonly map = new Map<K, { value: V; bytes: number }>()
  private total = 0
  /** lookups (get) that found / did not find their key, and entries evicted (for metrics) */
  readonly stats = { hits: 0, misses: 0, evictions: 0 }

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.total
  }

  get size(): number {
    return this.map.size
  }

  get(key: K): V | undefined {
    const e = this.map.get(key)
    if (!e) {
      this.stats.misses++
      return undefined
    }
    this.stats.hits++
    this.map.delete(key)
    this.map.set(key, e)
    return e.value
  }

  /** `get` without counting a hit or a miss (lookups that are not cache reads, e.g. chunk objects) */
  touch(key: K): V | undefined {
    const e = this.map.get(key)
    if (!e) return undefined
    this.map.delete(key)
    this.map.set(key, e)
    return e.value
  }

  /** the value without counting a lookup or making it recent */
  peek(key: K): V | undefined {
    return this.map.get(key)?.value
  }

  has(key: K): boolean {
    return this.map.has(key)
  }

  set(key: K, value: V, bytes: number): void {
    const old = this.map.get(key)
    if (old) {
      this.total -= old.bytes
      this.map.delete(key)
    }
    this.map.set(key, { value, bytes })
    this.total += bytes
    this.evict()
  }

  /**
   * `value` holds `delta` more bytes now: accounted while it is the entry of `key` (an evicted value
   * may still be in use, and another may have been set for its key since)
   */
  growValue(key: K, value: V, delta: number): void {
    if (this.peek(key) === value) this.grow(key, delta)
  }

  /** an entry's value holds `delta` more bytes now (no-op when it was evicted meanwhile) */
  grow(key: K, delta: number): void {
    const e = this.map.get(key)
    if (!e) return
    e.bytes += delta
    this.total += delta
    this.evict()
  }

  private evict(): void {
    // keep at least the newest entry, even when it alone is over budget
    while (this.total > this.maxBytes && this.map.size > 1) {
      const first = this.map.keys().next().value as K
      this.total -= this.map.get(first)!.bytes
      this.map.delete(first)
      this.stats.evictions++
    }
  }

  delete(key: K): void {
    const e = this.map.get(key)
    if (e) {
      this.total -= e.bytes
      this.map.delete(key)
    }
  }

  /** drop every entry whose key matches */
  deleteWhere(pred: (key: K) => boolean): void {
    for (const [k, e] of this.map) {
      if (pred(k)) {
        this.total -= e.bytes
        this.map.delete(k)
      }
    }
  }

  clear(): void {
    this.map.clear()
    this.total = 0
  }
}
