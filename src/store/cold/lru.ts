/**
 * The byte-bounded cache of the cold store. It keeps everything the store holds per chunk
 * (decoded columns, encoded parts and pages read, built rows, filters, and the chunk objects with
 * their footers), so a query touching many chunks never holds more than `maxBytes` of them (beyond
 * what running queries still reference).
 *
 * Policy: least recently used out first, as long as that works. It fails when a query is repeated
 * over data a little larger than the cache: each entry is pushed out just before its next use and
 * the repeated query finds nothing. The cache notices it by the keys it misses: when most of them
 * were dropped lately (remembered for the last GHOSTS keys), it protects what it holds. New entries
 * go to a least-recently-used window (WINDOW_SHARE of the budget); one leaving the window enters
 * the main part, pushing out its least recently used entries, unless the cache is protecting, in
 * which case it enters only if its use before this stay is more recent than the last use of every
 * entry it would push out (after LRU-2), and is dropped otherwise. The repeated query then keeps
 * finding the main part's share; a new query's keys, not dropped lately, end the protection and
 * take the place of entries no longer used. (Admission by estimated use counts, W-TinyLFU's, was
 * measured and not kept: the engine looks an entry up many times within one query, so the entries
 * of a wide query run a few times kept counts a selective query run next needed dozens of runs to
 * beat; admission on recency alone held a new query's data only up to the main part's size.)
 *
 * (Remembering dropped values weakly, to take back those a running query still holds, was measured
 * and not kept: every WeakRef made or read pins its value until the current job ends, and a
 * query's render loop may run for long in microtasks, holding all it dropped.)
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

/** the share of the budget the window of new entries has */
const WINDOW_SHARE = 0.2

interface Entry<V> {
  value: V
  bytes: number
  /** the tick of its last use */
  last: number
  /** the tick of its last use before this stay in the cache, -1 when not remembered */
  prev: number
}

/** keys of dropped entries whose last use is remembered (at most this many) */
const GHOSTS = 1 << 14
/** the weight of one miss in the moving share of misses on keys dropped lately */
const THRASH_WEIGHT = 1 / 64

export class ByteLru<K, V> {
  /** new entries, least recently used first (Map insertion order = recency) */
  private readonly win = new Map<K, Entry<V>>()
  /** admitted entries, least recently used first */
  private readonly main = new Map<K, Entry<V>>()
  private winBytes = 0
  private mainBytes = 0
  private readonly winMax: number
  private readonly mainMax: number
  /** logical time: one tick per lookup or insertion */
  private tick = 0
  /** the last use of keys dropped lately, oldest first */
  private readonly ghosts = new Map<K, number>()
  /** the share of recent misses whose keys had been dropped lately (a moving average) */
  private thrash = 0
  /** lookups (get) that found / did not find their key, and entries evicted (for metrics) */
  readonly stats = { hits: 0, misses: 0, evictions: 0 }

  constructor(readonly maxBytes: number) {
    this.winMax = Math.floor(maxBytes * WINDOW_SHARE)
    this.mainMax = maxBytes - this.winMax
  }

  get bytes(): number {
    return this.winBytes + this.mainBytes
  }

  get size(): number {
    return this.win.size + this.main.size
  }

  get(key: K): V | undefined {
    const v = this.touch(key)
    if (v === undefined) this.stats.misses++
    else this.stats.hits++
    return v
  }

  /** `get` without counting a hit or a miss (lookups that are not cache reads, e.g. chunk objects) */
  touch(key: K): V | undefined {
    let e = this.win.get(key)
    if (e !== undefined) {
      this.win.delete(key)
      this.win.set(key, e)
    } else {
      e = this.main.get(key)
      if (e === undefined) return undefined
      this.main.delete(key)
      this.main.set(key, e)
    }
    e.last = ++this.tick
    return e.value
  }

  /** the value without counting a lookup or making it recent */
  peek(key: K): V | undefined {
    return (this.win.get(key) ?? this.main.get(key))?.value
  }

  has(key: K): boolean {
    return this.win.has(key) || this.main.has(key)
  }

  set(key: K, value: V, bytes: number): void {
    const old = this.win.get(key) ?? this.main.get(key)
    let prev = -1
    if (old !== undefined) prev = old.prev
    else {
      const g = this.ghosts.get(key)
      if (g !== undefined) {
        prev = g
        this.ghosts.delete(key)
      }
      this.thrash += ((g === undefined ? 0 : 1) - this.thrash) * THRASH_WEIGHT
    }
    this.delete(key)
    this.win.set(key, { value, bytes, last: ++this.tick, prev })
    this.winBytes += bytes
    this.balance()
  }

  /** an entry's value holds `delta` more bytes now (no-op when it was evicted meanwhile) */
  grow(key: K, delta: number): void {
    const e = this.win.get(key)
    if (e !== undefined) {
      e.bytes += delta
      this.winBytes += delta
    } else {
      const m = this.main.get(key)
      if (m === undefined) return
      m.bytes += delta
      this.mainBytes += delta
    }
    this.balance()
  }

  /**
   * `value` holds `delta` more bytes now: accounted while it is the entry of `key` (an evicted value
   * may still be in use, and another may have been set for its key since)
   */
  growValue(key: K, value: V, delta: number): void {
    if (this.peek(key) === value) this.grow(key, delta)
  }

  delete(key: K): void {
    this.ghosts.delete(key)
    const e = this.win.get(key)
    if (e !== undefined) {
      this.winBytes -= e.bytes
      this.win.delete(key)
      return
    }
    const m = this.main.get(key)
    if (m !== undefined) {
      this.mainBytes -= m.bytes
      this.main.delete(key)
    }
  }

  /** drop every entry whose key matches */
  deleteWhere(pred: (key: K) => boolean): void {
    for (const k of [...this.win.keys(), ...this.main.keys(), ...this.ghosts.keys()]) if (pred(k)) this.delete(k)
  }

  clear(): void {
    this.win.clear()
    this.main.clear()
    this.ghosts.clear()
    this.winBytes = 0
    this.mainBytes = 0
  }

  /** back within the budgets: the window's oldest entries offered to the main part */
  private balance(): void {
    // the newest entry stays in the window, even when it alone is over budget
    while (this.winBytes > this.winMax && this.win.size > 1) {
      const [k, e] = this.win.entries().next().value as [K, Entry<V>]
      this.win.delete(k)
      this.winBytes -= e.bytes
      this.admit(k, e)
    }
    // entries that grew in the main part, or a newest entry over the whole budget
    while (this.winBytes + this.mainBytes > this.maxBytes && this.main.size > 0) {
      const [k, e] = this.main.entries().next().value as [K, Entry<V>]
      this.main.delete(k)
      this.mainBytes -= e.bytes
      this.drop(k, e)
    }
  }

  /**
   * a candidate from the window: into the main part, unless the cache is protecting what it holds
   * and the candidate's use before this stay is not more recent than the last use of everything it
   * would push out
   */
  private admit(key: K, cand: Entry<V>): void {
    if (cand.bytes > this.mainMax) return this.drop(key, cand)
    let need = this.mainBytes + cand.bytes - this.mainMax
    if (need > 0) {
      const victims: K[] = []
      const protect = this.thrash >= 0.5
      for (const [k, e] of this.main) {
        if (protect && e.last >= cand.prev) return this.drop(key, cand)
        victims.push(k)
        need -= e.bytes
        if (need <= 0) break
      }
      for (const k of victims) {
        const e = this.main.get(k)!
        this.main.delete(k)
        this.mainBytes -= e.bytes
        this.drop(k, e)
      }
    }
    this.main.set(key, cand)
    this.mainBytes += cand.bytes
  }

  /** an entry out of the cache: its last use remembered */
  private drop(key: K, e: Entry<V>): void {
    this.stats.evictions++
    this.ghosts.set(key, e.last)
    if (this.ghosts.size > GHOSTS) this.ghosts.delete(this.ghosts.keys().next().value as K)
  }
}
