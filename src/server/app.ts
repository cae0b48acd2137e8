/**
 * The serving application behind `solportal serve`: the HTTP server with its observer, metrics and
 * render threads, which opens its port at once (/health answers; /ready and the dataset routes
 * answer 503 with Retry-After), then loads the sources one after the other
 * (src/server/sources.ts) and serves all their datasets once every one is loaded.
 */
import type { Logger } from '../log.ts'
import { errorMessage } from '../util/errors.ts'
import { DatasetRegistry, type DatasetConfig } from './datasets.ts'
import { PortalServer, type RateLimit, type ServerLimits, type ServerOptions } from './http.ts'
import { Metrics } from './metrics.ts'
import { Observer } from './observe.ts'
import { RenderPool } from './render-pool.ts'
import type { NamedView } from './named-views.ts'
import { loadSource, type ArchiveOpener, type SourceOptions, type SourceSettings } from './sources.ts'

export interface AppOptions {
  limits: Partial<ServerLimits>
  rateLimit: RateLimit | null
  /** API keys, CORS, trusted proxies */
  access: Pick<ServerOptions, 'apiKeys' | 'cors' | 'trustProxy'>
  /** render worker threads (0: none), the cache of each, and whether one thread streams a whole range */
  render: { threads: number; cacheBytes: number; streamed: boolean }
  log: Logger
}

/** one source to load and the names it is served under */
export interface AppSource {
  opts: SourceOptions
  settings: SourceSettings
  views: readonly NamedView[]
}

export interface LoadOptions {
  /** where the datasets are announced once served */
  announce: Logger
  /** awaited before the datasets load (tests: hold the loading) */
  beforeLoad?: () => Promise<void>
  /** live sources: ingestion stopped for good */
  onFatal?: (err: Error) => void
  openArchive: ArchiveOpener
}

export class PortalApp {
  readonly metrics = new Metrics()
  readonly server: PortalServer
  private readonly renderPool: RenderPool | null
  private readonly log: Logger
  /** aborted on stop(): a source still loading gives up */
  private readonly loading = new AbortController()
  /** closes the loaded sources */
  private onStop: (() => Promise<void>) | undefined

  constructor(o: AppOptions) {
    this.log = o.log
    // worker threads start with the first stream that uses them
    // each worker keeps its own cache of what it reads: --cache-mb split with the main thread's
    this.renderPool =
      o.render.threads > 0
        ? new RenderPool({ threads: o.render.threads, cacheBytes: o.render.cacheBytes, streamed: o.render.streamed })
        : null
    this.server = new PortalServer({
      renderPool: this.renderPool,
      limits: o.limits,
      rateLimit: o.rateLimit,
      ...o.access,
      log: (level, msg) => o.log[level](msg),
      observer: new Observer({ logger: o.log, metrics: this.metrics }),
    })
  }

  /**
   * Loads the sources and serves their datasets; on a failure (logged) the application stops and
   * the promise rejects. `url`: where the server listens, for the announcement.
   */
  async load(url: string, sources: readonly AppSource[], o: LoadOptions): Promise<void> {
    const log = this.log
    try {
      await o.beforeLoad?.()
      const datasets: DatasetConfig[] = []
      const stops: (() => Promise<void>)[] = []
      this.onStop = async () => {
        for (const s of stops.reverse()) await s()
      }
      const ctx = {
        log,
        metrics: this.metrics,
        onFatal: o.onFatal,
        signal: this.loading.signal,
        openArchive: o.openArchive,
      }
      for (const src of sources) {
        const loaded = await loadSource(src.opts, src.settings, ctx, src.views)
        if (loaded.stop) stops.push(loaded.stop)
        datasets.push(...loaded.datasets)
      }
      this.server.setDatasets(new DatasetRegistry(datasets))
      o.announce.info(`solportal listening on ${url}: ${datasets.map((d) => `${url}/datasets/${d.name}`).join(', ')}`)
    } catch (e) {
      log.error(`loading the datasets failed: ${errorMessage(e)}`)
      await this.stop().catch(() => {})
      throw e
    }
  }

  /** close the server, the render threads and the sources */
  async stop(): Promise<void> {
    this.log.info('shutting down')
    this.loading.abort()
    await this.server.close()
    await this.renderPool?.close()
    await this.onStop?.()
  }
}
