/**
 * The flags of `solportal serve` (src/cli/commands/serve.ts), as data: flags, help text and
 * default (a function: read from the environment when the command is registered). The provider
 * flags shared with the import commands are added by `addRpcProviderOptions` (src/cli/options.ts).
 */
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STALL_TIMEOUT_MS } from '../../ingest/rpc/defaults.ts'
import { DEFAULT_LIMITS } from '../../server/limits.ts'
import { SERVE_HEAP_GROWING_PERCENT } from '../../util/gc-tuning.ts'

/** flags, help, default */
export type FlagDecl = readonly [flags: string, help: string, value?: string | (() => string | undefined)]

export const SERVE_FLAGS: readonly FlagDecl[] = [
  ['--port <port>', 'port to listen on (env PORT)', () => process.env.PORT ?? '3000'],
  ['--host <host>', 'address to listen on (env HOST)', () => process.env.HOST ?? '127.0.0.1'],
  [
    '--archive <path...>',
    'serve archive files (.jsonl/.jsonl.gz, or a directory of them) instead of the sample, imported into a temporary dataset directory',
  ],
  ['--demo', 'run a live fake Solana chain in-process and serve it in real time'],
  ['--rpc <url>', 'follow a Solana node over JSON-RPC (needs --data-dir)'],
  ['--data-dir <dir>', 'storage of the followed chain (hot LMDB + cold chunks)'],
  [
    '--commitment <level>',
    'commitment of the followed chain: confirmed or finalized (with --geyser, processed too)',
    'confirmed',
  ],
  [
    '--geyser [url]',
    'with --rpc: take blocks and slot statuses from this Geyser (Yellowstone gRPC) endpoint, the RPC node filling every gap; with --demo: run the demo chain through a fake Geyser server',
  ],
  ['--geyser-token <token>', 'the x-token of the Geyser endpoint (env GEYSER_TOKEN)', () => process.env.GEYSER_TOKEN],
  ['--rpc-concurrency <n>', 'getBlock requests in flight', '4'],
  [
    '--rpc-poll-ms <ms>',
    "once caught up, the follower asks for the next slot's block directly; when the node has none yet, it reads the head (getSlot) and waits this long before asking again",
    '250',
  ],
  [
    '--rpc-max-body-mb <n>',
    'largest node answer read, MiB (a bigger one is abandoned while reading and fetched again)',
    String(DEFAULT_MAX_RESPONSE_BYTES / 1024 / 1024),
  ],
  [
    '--ingest-threads <n>',
    "--rpc, --demo: worker threads that parse and normalize the node's blocks (0: the main thread; default: the cores less one, 2 to 4; 1 on one core)",
  ],
  [
    '--hot-max-mb <n>',
    '--rpc: bound on the unfinalized blocks the hot store (LMDB) holds; a warning at 80%, ingestion pauses at the bound until finalization frees space (default 4096; 0 = none)',
  ],
  [
    '--rpc-damaged-attempts <n>',
    'answers fetched for a block whose answer is damaged before ingestion stops (exit status 1)',
    '5',
  ],
  [
    '--rpc-stall-ms <ms>',
    'a node request that receives nothing for this long is abandoned and retried',
    String(DEFAULT_STALL_TIMEOUT_MS),
  ],
  [
    '--dataset-dir <dir>',
    'serve a dataset directory written by `solportal import`, or s3://BUCKET/PREFIX (a read replica)',
  ],
  ['--bigints-as-numbers', 'render u64 amounts as bare JSON integers instead of decimal strings'],
  ['--include-votes', 'keep vote transactions'],
  ['--response-time-ms <ms>', 'end a stream response after this long', String(DEFAULT_LIMITS.responseTimeMs)],
  ['--response-bytes <n>', 'end a stream response after this many bytes', String(DEFAULT_LIMITS.responseBytes)],
  ['--head-wait-ms <ms>', 'wait this long for a block above the head before 204', String(DEFAULT_LIMITS.headWaitMs)],
  ['--max-streams <n>', 'concurrent stream responses before 503', String(DEFAULT_LIMITS.maxConcurrentStreams)],
  [
    '--max-streams-per-client <n>',
    'concurrent stream requests of one client address before 429',
    String(DEFAULT_LIMITS.maxStreamsPerClient),
  ],
  [
    '--max-body-bytes <n>',
    `largest query body, decoded (default ${DEFAULT_LIMITS.maxBodyBytes}, or what --max-filter-values needs)`,
  ],
  ['--max-filter-values <n>', 'values per filter list', String(DEFAULT_LIMITS.maxFilterValues)],
  [
    '--body-timeout-ms <ms>',
    'a request (headers and body) must arrive within this long, else 408',
    String(DEFAULT_LIMITS.bodyTimeoutMs),
  ],
  [
    '--write-timeout-ms <ms>',
    'cut a response whose client takes no bytes for this long (0 = never)',
    String(DEFAULT_LIMITS.writeTimeoutMs),
  ],
  [
    '--stream-buffer-mb <n>',
    'response bytes buffered across all streams before writers wait',
    String(DEFAULT_LIMITS.streamBufferBytes / (1024 * 1024)),
  ],
  [
    '--memory-limit-mb <n>',
    'resident memory to stay under: above 3/4 of it, stream responses wait before decoding their next chunk and the heap is collected (0 = no limit; default 1024 plus what --cache-mb adds over 192)',
  ],
  ['--rate-limit <n>', 'requests per second per client address (0 = off)', '200'],
  [
    '--cache-mb <n>',
    'memory for cold-store columns, pages, filters and chunk footers read from disk (--dataset-dir, --rpc), in all: with --render-threads, an eighth for the main thread and the rest split between the render threads (--render-split: evenly between all)',
    '192',
  ],
  ['--cache-dir <dir>', '--dataset-dir s3://...: local cache of the fetched objects (default a temporary one)'],
  ['--cache-disk-mb <n>', '--dataset-dir s3://...: disk budget of the cached chunk files (default 10240)'],
  ['--s3-poll-ms <ms>', '--dataset-dir s3://...: how often new chunks are looked for (default 5000)'],
  [
    '--s3-timeout-ms <ms>',
    '--dataset-dir s3://...: an object-store request making no progress this long fails and is retried (default 10000)',
  ],
  [
    '--render-threads <n>',
    'worker threads rendering finalized ranges of stream responses (default 0 = render in the main thread; opt-in: memory under many wide streams is not bounded yet)',
  ],
  [
    '--render-split',
    "with --render-threads: split a stream's range into segments rendered by every thread, the main one included (default: one render thread streams the whole range while the main thread sends)",
  ],
  [
    '--heap-growing-percent <n>',
    `how far the JavaScript heap may grow past its live size before a full collection, percent (0 = V8's own factor, 10-300 %, which grows on a loaded machine)`,
    String(SERVE_HEAP_GROWING_PERCENT),
  ],
  ['--quiet', 'log errors only'],
  [
    '--config <file>',
    'serve the datasets of a JSON configuration file (names, aliases, sources, views, API keys, CORS, trusted proxies: docs/operations.md §10) instead of one source named by flags',
  ],
  [
    '--api-keys <file...>',
    'require an API key on the dataset routes: JSON files {"keys": [{"id", "sha256", "rateLimit", "maxStreams", "datasets"}]} (sha256: printf %s KEY | sha256sum); per-key rate limit, stream cap and datasets',
  ],
  [
    '--cors <origin...>',
    'let web pages of these origins (https://app.example.com, or * for any) call the API from a browser: preflights answered, X-Sqd-* headers exposed',
  ],
  [
    '--trust-proxy <cidr...>',
    'proxies (addresses or CIDR ranges) trusted to name the client in X-Forwarded-For / Forwarded: rate limits, stream caps and logs then use the forwarded address',
  ],
  ['--api-key-header <name>', 'the header holding the API key (default: Authorization: Bearer KEY)'],
  [
    '--from-slot <slot>',
    "--rpc with an empty --data-dir: start at this slot (backfilled up to the node's head, then followed) instead of the node's finalized slot",
  ],
]
