/**
 * `solportal fake-node`: a fake Solana JSON-RPC node on loopback serving recorded real blocks
 * re-slotted into a growing chain, with forks, skipped slots, lagging finalization and injected
 * faults (src/ingest/fake-node/, loaded once the options are checked).
 */
import type { Command } from 'commander'
import { demoTemplates } from '../../ingest/fake-node/templates.ts'
import type { FakeSolanaNode } from '../../ingest/fake-node/node.ts'
import { type FakeNodeOptions } from '../../ingest/fake-node/types.ts'
import { existingPath, intOption, listenError, numberOption, portOption } from '../options.ts'

interface FakeNodeCliOptions {
  port: string
  host: string
  template?: string[]
  txPerBlock?: string
  startSlot: string
  initialBlocks: string
  intervalMs: string
  skipRate: string
  finalityLag: string
  forkEvery: string
  forkDepth: string
  rate429: string
  retryAfter: string
  dropRate: string
  notYetRate: string
  notAvailableRate: string
  gzip?: boolean
  seed: string
  quiet?: boolean
  geyser?: string
  geyserToken?: string
}

function num(name: string, v: string, opts: { int?: boolean; max?: number } = {}): number {
  return opts.int ? intOption(name, v, 0, opts.max) : numberOption(name, v, 0, opts.max ?? Number.MAX_SAFE_INTEGER)
}

/** the node's options from the command line's (misused ones: a UsageError) */
function nodeOptions(o: FakeNodeCliOptions, port: number): FakeNodeOptions {
  return {
    templates: o.template ?? demoTemplates(),
    txPerBlock: o.txPerBlock === undefined ? undefined : num('tx-per-block', o.txPerBlock, { int: true }),
    startSlot: num('start-slot', o.startSlot, { int: true }),
    initialBlocks: Math.max(1, num('initial-blocks', o.initialBlocks, { int: true })),
    intervalMs: num('interval-ms', o.intervalMs, { int: true }),
    skipRate: num('skip-rate', o.skipRate, { max: 0.95 }),
    finalityLag: num('finality-lag', o.finalityLag, { int: true }),
    forkEvery: num('fork-every', o.forkEvery, { int: true }),
    forkDepth: num('fork-depth', o.forkDepth, { int: true }),
    rate429: num('rate429', o.rate429, { max: 1 }),
    retryAfterSec: num('retry-after', o.retryAfter, { int: true }),
    dropRate: num('drop-rate', o.dropRate, { max: 1 }),
    notYetRate: num('not-yet-rate', o.notYetRate, { max: 1 }),
    notAvailableRate: num('not-available-rate', o.notAvailableRate, { max: 1 }),
    gzip: o.gzip === true,
    seed: num('seed', o.seed, { int: true }),
    host: o.host,
    port,
  }
}

/** produced blocks (unless --quiet) and forks logged on stderr */
function logBlocks(node: FakeSolanaNode, o: FakeNodeCliOptions): void {
  let forks = 0
  node.onBlock((b) => {
    if (node.stats.forks !== forks) {
      forks = node.stats.forks
      console.error(`fork #${forks}: chain now ends at slot ${b.slot} (${b.hash})`)
    }
    if (!o.quiet) console.error(`slot ${b.slot} height ${b.height} ${b.hash} finalized ${node.finalizedSlot}`)
  })
}

/** `--geyser PORT`: the chain also streamed by a fake Geyser server */
async function startGeyser(
  node: FakeSolanaNode,
  o: FakeNodeCliOptions,
): Promise<import('../../ingest/geyser/fake-server.ts').FakeGeyserServer | null> {
  if (o.geyser === undefined) return null
  const geyserPort = portOption('geyser', o.geyser)
  const { FakeGeyserServer } = await import('../../ingest/geyser/fake-server.ts')
  const geyser = await FakeGeyserServer.start(node, {
    host: o.host,
    port: geyserPort,
    token: o.geyserToken,
    reorder: true,
  }).catch((e: unknown) => {
    throw listenError(e, 'geyser', 'host', o.host, geyserPort)
  })
  console.error(`fake Geyser server listening on ${geyser.url}`)
  return geyser
}

export function register(program: Command): void {
  program
    .command('fake-node')
    .description('run a fake Solana JSON-RPC node (real recorded blocks, re-slotted) for tests and demos')
    .option('--port <port>', 'port to listen on', '8899')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--template <file...>',
      'archive files with template blocks (default: data/sample/litesvm.jsonl.gz, with version 1 transactions, and data/mainnet/blocks/254170887.jsonl.gz)',
    )
    .option('--tx-per-block <n>', 'transactions per block, a rotating window of the template (default: all)')
    .option('--start-slot <slot>', 'slot of the first block', '300000000')
    .option('--initial-blocks <n>', 'blocks produced at start', '1')
    .option('--interval-ms <ms>', 'produce a block every N ms (0 = never)', '400')
    .option('--skip-rate <p>', 'probability that a slot is skipped', '0.1')
    .option('--finality-lag <slots>', 'finalized = confirmed - lag', '32')
    .option('--fork-every <n>', 'every N produced blocks, fork (0 = never)', '0')
    .option('--fork-depth <k>', 'blocks replaced by a fork', '3')
    .option('--rate429 <p>', 'fraction of requests answered HTTP 429', '0')
    .option('--retry-after <s>', 'Retry-After of the 429 answers, seconds', '1')
    .option('--drop-rate <p>', 'fraction of requests whose connection is dropped', '0')
    .option('--not-yet-rate <p>', 'fraction of getBlock calls answered -32014 (not available yet)', '0')
    .option('--not-available-rate <p>', 'fraction of getBlock calls answered -32004 (not available)', '0')
    .option('--gzip', 'gzip-compressed answers when asked, gzip-compressed requests read')
    .option('--seed <n>', 'PRNG seed', '1')
    .option('--quiet', 'do not log produced blocks')
    .option('--geyser <port>', 'also stream the chain from a fake Geyser (Yellowstone gRPC) server on this port')
    .option('--geyser-token <token>', 'the x-token the fake Geyser server requires (default: none)')
    .action(async (o: FakeNodeCliOptions) => {
      for (const t of o.template ?? []) existingPath('template', t)
      const port = portOption('port', o.port)
      const options = nodeOptions(o, port)
      const { FakeSolanaNode } = await import('../../ingest/fake-node/node.ts')
      const node = new FakeSolanaNode(options)
      logBlocks(node, o)
      await node.start().catch((e: unknown) => {
        throw listenError(e, 'port', 'host', o.host, port)
      })
      console.error(`fake Solana node listening on ${node.url} (first slot ${node.firstSlot})`)
      const geyser = await startGeyser(node, o)
      const stop = async () => {
        await geyser?.stop()
        await node.stop()
        process.exit(0)
      }
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
}
