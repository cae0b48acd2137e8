/**
 * The byte-bounded cache of the cold store. It keeps everything the store holds per chunk
 * (decoded columns, encoded parts and pages read, built rows, filters, and the chunk objects with
 * their footers), so a query touching many chunks never holds more than `maxBytes` of them (beyond
 * what running queries still reference).
 *
 * Policy (window + frequency admission, after W-TinyLFU): a new entry goes to a small
 * least-recently-used window (WINDOW_SHARE of the budget). An entry leaving the window enters the
 * main part only if it was used more often, lately, than the main part's least recently used
 * entries it would push out; otherwise it is dropped. Use counts are estimated by a small
 * count-min sketch that is halved every so often, so that counts fade. A plain least-recently-used
 * cache gets no hits at all when a query is repeated over data a little larger than the cache
 * (each entry is pushed out just before its next use); here the main part keeps what it holds and
 * the repeated query finds that share. Entries used often stay through one-off scans of other data.
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
}

export class ByteLru<K, V> {
  /** new entries, least recently used first (Map insertion order = recency) */
  private readonly win = new Map<K, Entry<V>>()
  /** admitted entries, least recently used first */
  private readonly main = new Map<K, Entry<V>>()
  private winBytes = 0
  private mainBytes = 0
  private readonly winMax: number
  private readonly mainMax: number
  private readonly sketch = new Sketch()
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
    this.sketch.add(key)
    let e = this.win.get(key)
    if (e !== undefined) {
      this.win.delete(key)
      this.win.set(key, e)
      return e.value
    }
    e = this.main.get(key)
    if (e === undefined) return undefined
    this.main.delete(key)
    this.main.set(key, e)
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
    this.delete(key)
    this.insert(key, { value, bytes })
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
    for (const k of [...this.win.keys(), ...this.main.keys()]) if (pred(k)) this.delete(k)
  }

  clear(): void {
    this.win.clear()
    this.main.clear()
    this.winBytes = 0
    this.mainBytes = 0
  }

  private insert(key: K, e: Entry<V>): void {
    this.win.set(key, e)
    this.winBytes += e.bytes
    this.balance()
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
      this.drop()
    }
  }

  /** a candidate from the window: into the main part if used more than all it would push out */
  private admit(key: K, cand: Entry<V>): void {
    if (cand.bytes > this.mainMax) return this.drop()
    let need = this.mainBytes + cand.bytes - this.mainMax
    if (need > 0) {
      const f = this.sketch.estimate(key)
      const victims: K[] = []
      for (const [k, e] of this.main) {
        if (this.sketch.estimate(k) >= f) return this.drop()
        victims.push(k)
        need -= e.bytes
        if (need <= 0) break
      }
      for (const k of victims) {
        const e = this.main.get(k)!
        this.main.delete(k)
        this.mainBytes -= e.bytes
        this.drop()
      }
    }
    this.main.set(key, cand)
    this.mainBytes += cand.bytes
  }

  private drop(): void {
    this.stats.evictions++
  }
}

/**
 * Estimated use counts of keys: a count-min sketch of 4-bit counters (4 rows), all halved once
 * the additions reach ten times a row's width, so that old uses fade.
 */
class Sketch {
  private static readonly WIDTH = 1 << 14
  private readonly rows = new Uint8Array(4 * Sketch.WIDTH)
  private additions = 0

  add(key: unknown): void {
    const h = hash(key)
    const rows = this.rows
    const m = Sketch.WIDTH - 1
    let h2 = Math.imul(h, 0x9e3779b1) >>> 0
    for (let r = 0; r < 4; r++) {
      const i = r * Sketch.WIDTH + ((h + r * h2) & m)
      if (rows[i] < 15) rows[i]++
      h2 = (h2 >>> 7) | (h2 << 25)
    }
    if (++this.additions >= 10 * Sketch.WIDTH) {
      for (let i = 0; i < rows.length; i++) rows[i] >>>= 1
      this.additions >>>= 1
    }
  }

  estimate(key: unknown): number {
    const h = hash(key)
    const rows = this.rows
    const m = Sketch.WIDTH - 1
    let h2 = Math.imul(h, 0x9e3779b1) >>> 0
    let min = 15
    for (let r = 0; r < 4; r++) {
      const c = rows[r * Sketch.WIDTH + ((h + r * h2) & m)]
      if (c < min) min = c
      h2 = (h2 >>> 7) | (h2 << 25)
    }
    return min
  }
}

/** hashes of recent keys (the engine keeps a string's own hash, so a lookup here is cheaper than hashing the key again) */
const HASHES = new Map<unknown, number>()

/** FNV-1a of a key's string form, remembered for up to 16,384 recent keys (~2 MB of key strings at most) */
function hash(key: unknown): number {
  let h = HASHES.get(key)
  if (h !== undefined) return h
  const s = typeof key === 'string' ? key : String(key)
  h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  h >>>= 0
  if (HASHES.size >= 1 << 14) HASHES.clear()
  HASHES.set(key, h)
  return h
}
