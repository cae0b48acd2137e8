/**
 * `solportal serve` (what `npm start` runs): the bundled sample by default, archive files with
 * `--archive`, an imported dataset directory with `--dataset-dir`, a live node with `--rpc`, or an
 * in-process fake chain with `--demo`.
 */
import type { Command } from 'commander'
import { readArchive } from '../../ingest/archive.ts'
import { sampleLines } from '../../ingest/sample.ts'
import type { DatasetConfig } from '../../server/datasets.ts'
import { DatasetRegistry } from '../../server/datasets.ts'
import { DEFAULT_LIMITS, PortalServer } from '../../server/http.ts'
import { loadStaticStore } from '../../server/load.ts'
import type { BlockStore } from '../../store/types.ts'

export interface ServeOptions {
  port: string
  host: string
  archive?: string[]
  demo?: boolean
  rpc?: string
  dataDir?: string
  datasetDir?: string
  commitment: string
  rpcConcurrency: string
  bigintsAsNumbers?: boolean
  includeVotes?: boolean
  responseTimeMs: string
  responseBytes: string
  headWaitMs: string
  maxStreams: string
  maxStreamsPerClient: string
  bodyTimeoutMs: string
  writeTimeoutMs: string
  streamBufferMb: string
  rateLimit: string
  cacheMb?: string
  quiet?: boolean
}

function int(name: string, v: string): number {
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got '${v}'`)
  return n
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('serve datasets over the Portal HTTP interface')
    .option('--port <port>', 'port to listen on (env PORT)', process.env.PORT ?? '3000')
    .option('--host <host>', 'address to listen on (env HOST)', process.env.HOST ?? '127.0.0.1')
    .option(
      '--archive <path...>',
      'serve archive files (.jsonl/.jsonl.gz, or a directory of them) instead of the sample',
    )
    .option('--demo', 'run a live fake Solana chain in-process and serve it in real time')
    .option('--rpc <url>', 'follow a Solana node over JSON-RPC (needs --data-dir)')
    .option('--data-dir <dir>', 'storage of the followed chain (hot LMDB + cold chunks)')
    .option('--commitment <level>', 'commitment of the followed chain: confirmed or finalized', 'confirmed')
    .option('--rpc-concurrency <n>', 'getBlock requests in flight', '4')
    .option('--dataset-dir <dir>', 'serve a dataset directory written by `solportal import`')
    .option('--bigints-as-numbers', 'render u64 amounts as bare JSON integers instead of decimal strings')
    .option('--include-votes', 'keep vote transactions')
    .option('--response-time-ms <ms>', 'end a stream response after this long', String(DEFAULT_LIMITS.responseTimeMs))
    .option('--response-bytes <n>', 'end a stream response after this many bytes', String(DEFAULT_LIMITS.responseBytes))
    .option(
      '--head-wait-ms <ms>',
      'wait this long for a block above the head before 204',
      String(DEFAULT_LIMITS.headWaitMs),
    )
    .option('--max-streams <n>', 'concurrent stream responses before 503', String(DEFAULT_LIMITS.maxConcurrentStreams))
    .option(
      '--max-streams-per-client <n>',
      'concurrent stream requests of one client address before 429',
      String(DEFAULT_LIMITS.maxStreamsPerClient),
    )
    .option(
      '--body-timeout-ms <ms>',
      'a request (headers and body) must arrive within this long, else 408',
      String(DEFAULT_LIMITS.bodyTimeoutMs),
    )
    .option(
      '--write-timeout-ms <ms>',
      'cut a response whose client takes no bytes for this long (0 = never)',
      String(DEFAULT_LIMITS.writeTimeoutMs),
    )
    .option(
      '--stream-buffer-mb <n>',
      'response bytes buffered across all streams before writers wait',
      String(DEFAULT_LIMITS.streamBufferBytes / (1024 * 1024)),
    )
    .option('--rate-limit <n>', 'requests per second per client address (0 = off)', '200')
    .option(
      '--cache-mb <n>',
      'memory for cold-store columns, pages and filters read from disk (--dataset-dir, --rpc)',
      '192',
    )
    .option('--quiet', 'log errors only')
    .action(async (opts: ServeOptions) => {
      await serve(opts)
    })
}

function cacheBytes(opts: ServeOptions): number {
  return int('cache-mb', opts.cacheMb ?? '192') * 1024 * 1024
}

export async function serve(opts: ServeOptions): Promise<PortalServer> {
  const log = (level: 'info' | 'warn' | 'error', msg: string) => {
    if (opts.quiet && level !== 'error') return
    console.error(`${new Date().toISOString()} ${level} ${msg}`)
  }
  const datasets: DatasetConfig[] = []
  const common = { bigintsAsNumbers: !!opts.bigintsAsNumbers }
  let onStop: (() => Promise<void>) | undefined

  const realtimeLogger = {
    info: (m: string) => log('info', m),
    warn: (m: string) => log('warn', m),
    error: (m: string) => log('error', m),
  }
  if (opts.demo || opts.rpc) {
    const rt = await import('../../store/realtime.ts')
    let ds: Awaited<ReturnType<typeof rt.createRealtimeDataset>>
    if (opts.demo) {
      ds = await rt.createDemoDataset({ logger: realtimeLogger, dataDir: opts.dataDir })
      log('info', `demo: fake Solana node at ${(ds as Awaited<ReturnType<typeof rt.createDemoDataset>>).node.url}`)
    } else {
      if (!opts.dataDir) throw new Error('--rpc needs --data-dir DIR (hot and cold storage)')
      const { DiskColdStore } = await import('../../store/cold.ts')
      const { coldDir } = await import('../../store/dataset-dir.ts')
      const cold = await DiskColdStore.open(coldDir(opts.dataDir), { cacheBytes: cacheBytes(opts) })
      ds = await rt.createRealtimeDataset({
        rpcUrl: opts.rpc!,
        dataDir: opts.dataDir,
        cold,
        commitment: opts.commitment === 'finalized' ? 'finalized' : 'confirmed',
        concurrency: int('rpc-concurrency', opts.rpcConcurrency),
        normalizeOptions: { includeVotes: opts.includeVotes },
        logger: realtimeLogger,
      })
      const stopDs = ds.stop
      ds.stop = async () => {
        await stopDs()
        await cold.close()
      }
    }
    ds.start()
    onStop = ds.stop
    datasets.push(
      { name: 'solana-mainnet', aliases: ['solana-beta'], store: ds.store, realTime: true, ...common },
      { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store: ds.store, realTime: true, ...common },
    )
  } else if (opts.datasetDir) {
    const { openDatasetDir } = await import('../../store/dataset-dir.ts')
    const store = await openDatasetDir(opts.datasetDir, { cacheBytes: cacheBytes(opts) })
    onStop = () => store.close()
    datasets.push(
      { name: 'solana-mainnet', aliases: ['solana-beta'], store, realTime: false, ...common },
      { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store, realTime: false, ...common },
    )
  } else {
    const t0 = Date.now()
    const source = opts.archive ? readArchive(opts.archive) : sampleLines()
    let warned = 0
    const { store, blocks, warnings } = await loadStaticStore(source, {
      includeVotes: opts.includeVotes,
      onWarning: (m) => {
        if (warned++ < 20) log('warn', m)
      },
    })
    log('info', `loaded ${blocks} blocks (${warnings} normalization warnings) in ${Date.now() - t0} ms`)
    const first = store.firstBlock() ?? 0
    // The stable dataset starts at the whole mainnet block of the sample (2024); the complete one
    // at the earliest sample block (2021). An archive is served from its first block by both.
    const stableStart = opts.archive ? first : Math.max(first, 254170887)
    const s: BlockStore = store
    datasets.push(
      {
        name: 'solana-mainnet',
        aliases: ['solana-beta'],
        store: s,
        startBlock: stableStart,
        realTime: false,
        ...common,
      },
      {
        name: 'solana-mainnet-complete',
        aliases: ['solana-complete'],
        store: s,
        startBlock: first,
        realTime: false,
        ...common,
      },
    )
  }

  const server = new PortalServer({
    datasets: new DatasetRegistry(datasets),
    limits: {
      responseTimeMs: int('response-time-ms', opts.responseTimeMs),
      responseBytes: int('response-bytes', opts.responseBytes),
      headWaitMs: int('head-wait-ms', opts.headWaitMs),
      maxConcurrentStreams: int('max-streams', opts.maxStreams),
      maxStreamsPerClient: int('max-streams-per-client', opts.maxStreamsPerClient),
      bodyTimeoutMs: int('body-timeout-ms', opts.bodyTimeoutMs),
      writeTimeoutMs: int('write-timeout-ms', opts.writeTimeoutMs),
      streamBufferBytes: int('stream-buffer-mb', opts.streamBufferMb) * 1024 * 1024,
    },
    rateLimit:
      int('rate-limit', opts.rateLimit) > 0
        ? { perSecond: int('rate-limit', opts.rateLimit), burst: 2 * int('rate-limit', opts.rateLimit) }
        : null,
    log,
  })
  const url = await server.listen(int('port', opts.port), opts.host)
  // printed even with --quiet: scripts wait for this line
  console.error(
    `${new Date().toISOString()} info solportal listening on ${url}: ${datasets.map((d) => `${url}/datasets/${d.name}`).join(', ')}`,
  )
  const shutdown = async () => {
    log('info', 'shutting down')
    await server.close()
    await onStop?.()
    process.exit(0)
  }
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  return server
}
