/**
 * Blocks of the fake node (src/ingest/fake-node/) as the follower stores them: produced by a
 * real FakeSolanaNode, fetched over loopback JSON-RPC with the follower's own `getBlock`
 * parameters and decoded by its own `decodeBlockAnswer`. Mainnet-sized when `txPerBlock` is a
 * few hundred: the rotating window over the real mainnet template block makes them compressible,
 * as real blocks are (many repeated accounts, programs and log lines).
 */
import { decodeBlockAnswer } from '../../src/ingest/block-decode.ts'
import { FakeSolanaNode } from '../../src/ingest/fake-node/node.ts'
import { fullBlockParams } from '../../src/ingest/rpc/client.ts'
import type { Block } from '../../src/model.ts'

async function call(url: string, method: string, params: unknown[]): Promise<Uint8Array> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  if (res.status !== 200) throw new Error(`fake node: ${method} answered ${res.status}`)
  return new Uint8Array(await res.arrayBuffer())
}

/**
 * `count` consecutive blocks of a fake node with `txPerBlock` transactions each (seeded: the same
 * blocks every run), yielded in batches of `batch` as they are fetched (never all held at once).
 */
export async function* fakeNodeBlocks(opts: {
  count: number
  txPerBlock: number
  seed: number
  batch: number
  /** keep vote transactions (the follower drops them by default, `serve --include-votes` keeps them) */
  includeVotes?: boolean
}): AsyncGenerator<Block[]> {
  const node = await FakeSolanaNode.start({
    txPerBlock: opts.txPerBlock,
    seed: opts.seed,
    intervalMs: 0,
    initialBlocks: opts.count,
  })
  try {
    const slots = node
      .chain()
      .map((b) => b.slot)
      .slice(0, opts.count)
    for (let i = 0; i < slots.length; i += opts.batch) {
      const out: Block[] = []
      for (const slot of slots.slice(i, i + opts.batch)) {
        const env = decodeBlockAnswer(await call(node.url, 'getBlock', fullBlockParams(slot, 'confirmed')), slot, {
          includeVotes: opts.includeVotes,
        })
        if (env.result?.kind !== 'normalized') throw new Error(`fake node: block ${slot} did not decode`)
        out.push(env.result.block as Block)
      }
      yield out
    }
  } finally {
    await node.stop()
  }
}
