/**
 * A follower far behind its node (restarted after a stop, the node a few hundred blocks ahead)
 * whose cold store is slow (a writer process starved of CPU on a busy machine): with
 * `finalizeBacklogMaxBytes`, ingestion pauses once that many bytes of finalized blocks wait in the
 * hot store, instead of storing the whole catch-up there (which filled a disk the cold store had
 * room on: the hot form of a block is many times its chunk form). Once the cold store answers, the
 * follower catches up in steps, and the stored chain is the node's: nothing lost. Real fake node
 * over loopback, real LMDB; the slow cold store is an in-memory one whose appends wait for a gate.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FakeSolanaNode } from '../src/ingest/fake-node/node.ts'
import type { Block } from '../src/model.ts'
import { MemoryColdStore } from '../src/store/cold-memory.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { pausingFollower, untilHeadStops } from './support/realtime/pausing-follower.ts'

/** a cold store whose appends wait until `open()` (a writer that gets no CPU meanwhile) */
class GatedColdStore extends MemoryColdStore {
  private gate: Promise<void>
  open!: () => void
  constructor() {
    super([], 8)
    this.gate = new Promise((r) => (this.open = r))
  }
  override async append(blocks: Block[]): Promise<void> {
    await this.gate
    return super.append(blocks)
  }
}

test('a follower far behind with a slow cold store pauses at its finalized backlog, then catches up with nothing lost', async () => {
  const node = await FakeSolanaNode.start({
    txPerBlock: 20,
    intervalMs: 0,
    initialBlocks: 150,
    finalityLag: 4,
    seed: 5,
  })
  const cold = new GatedColdStore()
  const MAX = 3_000_000 // a few blocks of 20 transactions
  const f = await pausingFollower(node, cold, {
    finalizeMinBlocks: 20,
    finalizeMaxDelayMs: 300,
    finalizeBacklogMaxBytes: MAX,
  })
  const { ds, logs } = f
  try {
    ds.start()
    // the first append waits: the head stops once the finalized backlog passes the bound (a head
    // that stops for another reason on a busy machine, before the pause, is not it)
    const pausedLine = /MiB of finalized blocks wait for the cold store: ingestion paused/
    await untilHeadStops(f, 300, () => logs.some((l) => pausedLine.test(l)))
    assert.ok(ds.store.head()!.number < node.tip.slot, 'ingestion paused below the tip')
    assert.ok(ds.hot.bytes <= MAX + 2 * f.largest(), `${ds.hot.bytes} bytes held, bound ${MAX}, blocks ~${f.largest()}`)
    // the cold store answers: the follower catches up, moving the finalized blocks as it goes
    cold.open()
    const t1 = Date.now()
    while (ds.store.head()?.hash !== node.tip.hash || cold.lastBlock()?.number !== node.finalizedSlot) {
      if (Date.now() - t1 > 60_000) throw new Error(`no catch-up: ${logs.slice(-5).join(' | ')}`)
      await sleep(20)
    }
    assert.ok(
      logs.some((l) => /ingestion resumed after/.test(l)),
      logs.join('\n'),
    )
    assert.ok(cold.appends.length >= 2, `${cold.appends.length} appends`)
    const stored = await ds.store.chainBefore(Number.MAX_SAFE_INTEGER, 1_000_000)
    assert.deepEqual(
      stored.map((h) => [h.number, h.hash]),
      node.chain().map((b) => [b.slot, b.hash]),
    )
  } finally {
    cold.open()
    await ds.stop()
    await node.stop()
  }
})
