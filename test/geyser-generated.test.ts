// The fake Geyser server over a fake node whose blocks come from `solportal gen` templates, which
// hold version 1 transactions (as the tail bench's do): the blocks are streamed, not refused.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import { writeArchive } from '../src/ingest/generate.ts'
import { createGeyserDataset, type GeyserDataset } from '../src/ingest/geyser/dataset.ts'
import { FakeGeyserServer } from '../src/ingest/geyser/fake-server.ts'
import { silentLogger } from '../src/ingest/realtime/types.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import type { RpcBlock } from '../src/rpc/types.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

test('generated blocks with version 1 transactions go through the fake Geyser server to the hot store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-geyser-gen-'))
  const archive = join(dir, 'blocks.jsonl.gz')
  await writeArchive(archive, { blocks: 2, txsPerBlock: 300, seed: 7 })
  const node = await FakeSolanaNode.start({
    templates: [archive],
    intervalMs: 0,
    initialBlocks: 3,
    skipRate: 0,
    seed: 3,
  })
  let server: FakeGeyserServer | undefined
  let ds: GeyserDataset | undefined
  try {
    const versions = node
      .chain()
      .flatMap((b) => (parseJsonExact(node.blockText(b)) as RpcBlock).transactions!.map((t) => t.version))
    assert.ok(versions.includes(1), `the generated blocks hold version 1 transactions: ${[...new Set(versions)]}`)
    server = await FakeGeyserServer.start(node)
    const s = server
    ds = await createGeyserDataset({
      rpcUrl: node.url,
      dataDir: join(dir, 'hot'),
      cold: new MemoryColdStore(),
      startSlot: node.firstSlot,
      noSync: true,
      logger: silentLogger,
      geyser: { url: s.url },
    })
    const d = ds
    d.start()
    await until('a subscriber', () => s.subscribers > 0)
    for (let i = 0; i < 4; i++) node.produce()
    await until('caught up', () => d.store.head()?.hash === node.tip.hash)
    assert.ok(d.geyser.stats.streamed >= 4, JSON.stringify(d.geyser.stats))
    assert.equal(d.geyser.stats.unreadable, 0)
  } finally {
    await ds?.stop()
    await server?.stop()
    await node.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})
