/**
 * A fake node's getBlock answer for one generated mainnet-shaped block of ~1,500 transactions
 * (the micro-benches of bench/tail/), as the bytes of its body.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeArchive } from '../../src/ingest/generate.ts'
import { FakeSolanaNode } from '../../src/ingest/fake-node/node.ts'
import { fullBlockParams } from '../../src/ingest/rpc/client.ts'

export async function mainnetAnswer(): Promise<{ bytes: Uint8Array; slot: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tail-answer-'))
  try {
    const archive = join(dir, 'blocks.jsonl.gz')
    await writeArchive(archive, { blocks: 1, txsPerBlock: 1500, seed: 7 })
    const node = await FakeSolanaNode.start({
      templates: [archive],
      intervalMs: 0,
      initialBlocks: 1,
      skipRate: 0,
      seed: 3,
    })
    const slot = node.firstSlot
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: fullBlockParams(slot, 'confirmed') }),
    })
    const bytes = new Uint8Array(await res.arrayBuffer())
    await node.stop()
    return { bytes, slot }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
