/**
 * Chunk pruning: the engine consults `Chunk.mayContain` and skips what it proves empty, without
 * changing any output.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BlockHeader, RecordKind } from '../src/model.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import type { Chunk, Table } from '../src/store/chunk.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { runConformance } from './support/conformance.ts'
import { makePools, randomBlocks } from './support/random-blocks.ts'

/** A chunk with an exact `mayContain` (a scan), counting table accesses. */
class PruningChunk implements Chunk {
  tableCalls = 0
  constructor(private readonly base: Chunk) {}
  get firstBlock() {
    return this.base.firstBlock
  }
  get lastBlock() {
    return this.base.lastBlock
  }
  get blockCount() {
    return this.base.blockCount
  }
  header<K extends keyof BlockHeader>(field: K): ArrayLike<BlockHeader[K]> {
    return this.base.header(field)
  }
  table(kind: RecordKind): Table {
    this.tableCalls++
    return this.base.table(kind)
  }
  mayContain(kind: RecordKind, field: string, values: ReadonlySet<string>): boolean {
    const col = this.base.table(kind).column(field)
    for (let i = 0; i < col.length; i++) {
      const v = col[i] as unknown
      const items: unknown[] = Array.isArray(v)
        ? v
        : v !== null && typeof v === 'object'
          ? Object.values(v as object).flat()
          : [v]
      for (const x of items) if (values.has(x as string)) return true
    }
    return false
  }
}

function pruningStore(inner: StaticStore, seen: PruningChunk[] = []): BlockStore {
  return {
    firstBlock: () => inner.firstBlock(),
    head: () => inner.head(),
    finalizedHead: () => inner.finalizedHead(),
    chainBefore: (n, l) => inner.chainBefore(n, l),
    waitFor: (n, f, t, s) => inner.waitFor(n, f, t, s),
    async *chunks(from: number, to: number, finalizedOnly: boolean) {
      for await (const c of inner.chunks(from, to, finalizedOnly)) {
        const p = new PruningChunk(c)
        seen.push(p)
        yield p
      }
    },
  }
}

runConformance('StaticStore with exact mayContain pruning', async (blocks) => pruningStore(new StaticStore(blocks, 6)))

test('chunks proven empty are skipped without touching their tables', async () => {
  const P = makePools()
  const blocks = randomBlocks(5, { blocks: 40, pools: P })
  const seen: PruningChunk[] = []
  const store = pruningStore(new StaticStore(blocks, 8), seen)
  const last = blocks[blocks.length - 1].header.number
  const q = parseQuery({
    fromBlock: 0,
    fields: { instruction: { programId: true } },
    instructions: [{ programId: ['NoSuchProgram111111111111111111111111111111'], transaction: true, logs: true }],
    transactions: [{ feePayer: ['NoSuchPayer11111111111111111111111111111111'], instructions: true }],
    tokenBalances: [{ account: [P.accounts[0]], preMint: ['NoSuchMint111111111111111111111111111111111'] }],
  })
  const out = []
  for await (const b of executeQuery(store, q, { to: last, finalizedOnly: true })) out.push(b)
  assert.deepEqual(
    out.map((b) => [b.number, b.line, b.empty]),
    [
      [blocks[0].header.number, '{"header":{}}', true],
      [last, '{"header":{}}', true],
    ],
  )
  assert.ok(seen.length >= 5)
  assert.deepEqual(
    seen.map((c) => c.tableCalls),
    seen.map(() => 0),
  )
})
