/**
 * Prometheus metrics (prom-client), served at `GET /metrics` in the text exposition format.
 *
 * Every metric is named `solportal_*` (process metrics: prom-client's default set, with the same
 * prefix). Values that the service already keeps (heads, the ingester's counters, the cold
 * store's cache counters, open streams) are read when Prometheus scrapes, so nothing is counted
 * twice and the hot paths are not touched; per-request figures are recorded by the observer
 * (src/server/observe.ts) when each response ends.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { NodeHeadTracker } from '../ingest/lag.ts'
import type { HeadInfo } from '../store/chunk.ts'
import type { CacheStats } from '../store/cold/lru.ts'

export const METRICS_PREFIX = 'solportal_'

/** what the metrics read from a dataset */
export interface DatasetView {
  name: string
  store: { head(): HeadInfo | null; finalizedHead(): HeadInfo | null }
}

/** an ingester following a node, as the metrics see it */
export interface IngestView {
  /** the dataset it feeds (label) */
  dataset: string
  /** the stored head, to compare with the node's */
  store: { head(): HeadInfo | null }
  nodeHead: NodeHeadTracker
  /** running totals since start */
  stats: { blocks: number; forks: number; finalized: number; failures: number; hotPauses?: number }
  /** slots a Geyser stream needs and neither it nor the node can give (ingestion stopped there) */
  gap?: () => { from: number; to: number } | null
  /** the hot store's bytes of unfinalized blocks and its bound (null: none) */
  hot?: () => { bytes: number; maxBytes: number | null }
}

export interface MetricsOptions {
  /** process metrics (CPU, memory, event loop lag, GC, handles); default true */
  processMetrics?: boolean
}

type Labels<T extends string> = Partial<Record<T, string | number>>

/** Counter fed from a running total read at scrape time (prom-client counters only go up by inc). */
function totalCounter(
  registry: Registry,
  name: string,
  help: string,
  read: () => { labels: Labels<'dataset'>; total: number }[],
): void {
  const last = new Map<string, number>()
  const c: Counter<'dataset'> = new Counter({
    name,
    help,
    labelNames: ['dataset'],
    registers: [registry],
    collect() {
      for (const { labels, total } of read()) {
        const key = String(labels.dataset ?? '')
        // inc by 0 too: the series exists from the first scrape
        c.inc(labels, Math.max(0, total - (last.get(key) ?? 0)))
        last.set(key, Math.max(total, last.get(key) ?? 0))
      }
    },
  })
}

/** Gauge with a `dataset` label whose values are read at scrape time (null: no sample). */
function datasetGauge(
  registry: Registry,
  name: string,
  help: string,
  read: () => { dataset: string; value: number | null }[],
): void {
  const g: Gauge<'dataset'> = new Gauge({
    name,
    help,
    labelNames: ['dataset'],
    registers: [registry],
    collect() {
      g.reset()
      for (const { dataset, value } of read()) if (value !== null) g.set({ dataset }, value)
    },
  })
}

/** the per-request families, recorded by the observer (src/server/observe.ts) when a response ends */
function requestMetrics(registers: Registry[]) {
  return {
    requests: new Counter({
      name: `${METRICS_PREFIX}http_requests_total`,
      help: 'HTTP requests answered, by endpoint (route, not path), dataset (canonical name) and status',
      labelNames: ['endpoint', 'dataset', 'status'],
      registers,
    }),
    responseBytes: new Counter({
      name: `${METRICS_PREFIX}http_response_bytes_total`,
      help: 'response body bytes sent (after compression), by endpoint and dataset',
      labelNames: ['endpoint', 'dataset'],
      registers,
    }),
    streamDuration: new Histogram({
      name: `${METRICS_PREFIX}stream_duration_seconds`,
      help: 'duration of stream and finalized-stream responses, request to last byte',
      labelNames: ['endpoint', 'dataset', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
      registers,
    }),
    keyRequests: new Counter({
      name: `${METRICS_PREFIX}key_requests_total`,
      help: 'requests authenticated with an API key, by key id, endpoint and status',
      labelNames: ['key', 'endpoint', 'status'],
      registers,
    }),
    keyBytes: new Counter({
      name: `${METRICS_PREFIX}key_response_bytes_total`,
      help: 'response body bytes sent (after compression) to requests of an API key, by key id',
      labelNames: ['key'],
      registers,
    }),
  }
}

export class Metrics {
  readonly registry = new Registry()
  private datasets: () => readonly DatasetView[] = () => []
  private openStreams: () => number = () => 0
  private readonly ingest: IngestView[] = []
  private readonly caches: { dataset: string; stats: () => CacheStats }[] = []
  private readonly perRequest: ReturnType<typeof requestMetrics>

  /** the families are registered (and so exposed) in this order */
  constructor(opts: MetricsOptions = {}) {
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX })
    this.perRequest = requestMetrics([this.registry])
    this.streamMetrics()
    this.headMetrics()
    this.ingestMetrics()
    this.coldCacheMetrics()
  }

  /** open stream responses */
  private streamMetrics(): void {
    const registers = [this.registry]
    const active: Gauge = new Gauge({
      name: `${METRICS_PREFIX}active_streams`,
      help: 'stream responses open now',
      registers,
      collect: () => active.set(this.openStreams()),
    })
  }

  /** the heads of the served datasets */
  private headMetrics(): void {
    const heads = (name: string, help: string, pick: (d: DatasetView) => HeadInfo | null) =>
      datasetGauge(this.registry, name, help, () =>
        this.datasets().map((d) => ({ dataset: d.name, value: pick(d)?.number ?? null })),
      )
    heads(`${METRICS_PREFIX}head_block`, 'number (slot) of the dataset head', (d) => d.store.head())
    heads(`${METRICS_PREFIX}finalized_head_block`, 'number (slot) of the finalized head', (d) =>
      d.store.finalizedHead(),
    )
  }

  /** the ingesters following nodes: their lag, gaps, hot store and running totals */
  private ingestMetrics(): void {
    const lagGauge = (name: string, help: string, pick: (i: IngestView) => number | null) =>
      datasetGauge(this.registry, name, help, () => this.ingest.map((i) => ({ dataset: i.dataset, value: pick(i) })))
    lagGauge(`${METRICS_PREFIX}node_head_slot`, "the followed node's head slot, as last read", (i) => i.nodeHead.slot)
    lagGauge(
      `${METRICS_PREFIX}ingest_lag_slots`,
      "slots between the node's head and the stored head",
      (i) => i.nodeHead.lag(i.store.head()?.number ?? null)?.slots ?? null,
    )
    lagGauge(
      `${METRICS_PREFIX}ingest_lag_seconds`,
      'how long ago the node first reported a slot above the stored head (0 when caught up)',
      (i) => i.nodeHead.lag(i.store.head()?.number ?? null)?.seconds ?? null,
    )
    lagGauge(
      `${METRICS_PREFIX}ingest_gap_slots`,
      'slots missing from the Geyser stream that the node could not give either: ingestion waits at them (0: none)',
      (i) => {
        const g = i.gap?.()
        return i.gap ? (g ? g.to - g.from + 1 : 0) : null
      },
    )
    lagGauge(`${METRICS_PREFIX}hot_store_bytes`, 'bytes of unfinalized blocks in the hot store (LMDB)', (i) =>
      i.hot ? i.hot().bytes : null,
    )
    lagGauge(`${METRICS_PREFIX}hot_store_max_bytes`, "the hot store's bound (--hot-max-mb)", (i) =>
      i.hot ? i.hot().maxBytes : null,
    )
    const ingestTotal = (what: string, help: string, pick: (s: IngestView['stats']) => number) =>
      totalCounter(this.registry, `${METRICS_PREFIX}ingest_${what}_total`, help, () =>
        this.ingest.map((i) => ({ labels: { dataset: i.dataset }, total: pick(i.stats) })),
      )
    ingestTotal('blocks', 'blocks ingested from the node (rate() = blocks/s)', (s) => s.blocks)
    ingestTotal('forks', 'forks applied (stored blocks replaced or dropped)', (s) => s.forks)
    ingestTotal('finalized_blocks', 'blocks moved to the finalized (cold) store', (s) => s.finalized)
    ingestTotal('failures', 'ingest sessions that failed and were retried', (s) => s.failures)
    ingestTotal('hot_pauses', "times ingestion paused at the hot store's bound", (s) => s.hotPauses ?? 0)
  }

  /** the cold stores' caches */
  private coldCacheMetrics(): void {
    const cacheGauge = (what: string, help: string, pick: (s: CacheStats) => number) =>
      datasetGauge(this.registry, `${METRICS_PREFIX}cold_cache_${what}`, help, () =>
        this.caches.map((c) => ({ dataset: c.dataset, value: pick(c.stats()) })),
      )
    cacheGauge('bytes', "bytes held by the cold store's cache", (s) => s.bytes)
    cacheGauge('max_bytes', "the cold store's cache budget", (s) => s.maxBytes)
    cacheGauge('entries', "entries in the cold store's cache", (s) => s.entries)
    const cacheTotal = (what: string, help: string, pick: (s: CacheStats) => number) =>
      totalCounter(this.registry, `${METRICS_PREFIX}cold_cache_${what}_total`, help, () =>
        this.caches.map((c) => ({ labels: { dataset: c.dataset }, total: pick(c.stats()) })),
      )
    cacheTotal('hits', 'cold cache lookups answered from memory', (s) => s.hits)
    cacheTotal('misses', 'cold cache lookups that read from disk', (s) => s.misses)
    cacheTotal('evictions', 'cold cache entries evicted to stay in budget', (s) => s.evictions)
  }

  /** the served datasets (read at scrape time) */
  watchDatasets(fn: () => readonly DatasetView[]): void {
    this.datasets = fn
  }

  /** the number of open stream responses (read at scrape time) */
  watchStreams(fn: () => number): void {
    this.openStreams = fn
  }

  addIngester(view: IngestView): void {
    this.ingest.push(view)
  }

  addColdCache(dataset: string, stats: () => CacheStats): void {
    this.caches.push({ dataset, stats })
  }

  /** one answered request (`key`: the id of its API key) */
  observeRequest(r: {
    endpoint: string
    dataset: string
    status: number
    bytes: number
    seconds: number
    key?: string
  }): void {
    const m = this.perRequest
    m.requests.inc({ endpoint: r.endpoint, dataset: r.dataset, status: r.status })
    if (r.key !== undefined) {
      m.keyRequests.inc({ key: r.key, endpoint: r.endpoint, status: r.status })
      if (r.bytes > 0) m.keyBytes.inc({ key: r.key }, r.bytes)
    }
    if (r.bytes > 0) m.responseBytes.inc({ endpoint: r.endpoint, dataset: r.dataset }, r.bytes)
    if (r.endpoint === 'stream' || r.endpoint === 'finalized-stream') {
      m.streamDuration.observe({ endpoint: r.endpoint, dataset: r.dataset, status: r.status }, r.seconds)
    }
  }

  get contentType(): string {
    return this.registry.contentType
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }
}
