/**
 * The engine on a real mainnet block (slot 254170887, 602 transactions) normalized by
 * src/normalize: the bench queries and random queries built from the block's own addresses,
 * compared byte for byte with the naive evaluator.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SELECTOR_INDEX, type SelectorName } from '../src/catalogue.ts'
import type { Block } from '../src/model.ts'
import { readArchive } from '../src/ingest/archive.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { StaticStore } from '../src/store/static.ts'
import { assertSame, benchQueries, randomCase, runEngine } from './support/conformance.ts'
import { Rng, type Pools } from './support/random-blocks.ts'

const FILE = new URL('../data/mainnet/blocks/254170887.jsonl.gz', import.meta.url).pathname

async function load(): Promise<Block[]> {
  const out: Block[] = []
  for await (const line of readArchive(FILE)) out.push(normalizeBlock(line).block)
  return out
}

function poolsOf(blocks: Block[]): Pools {
  const uniq = (a: (string | null)[]) => [...new Set(a.filter((x): x is string => x !== null))].sort()
  const ins = blocks.flatMap((b) => b.instructions)
  const tbs = blocks.flatMap((b) => b.tokenBalances)
  return {
    programs: uniq(ins.map((i) => i.programId)),
    accounts: uniq(blocks.flatMap((b) => b.transactions.flatMap((t) => t.accountKeys))).slice(0, 400),
    mints: uniq(tbs.flatMap((t) => [t.preMint, t.postMint])),
    owners: uniq(tbs.flatMap((t) => [t.preOwner, t.postOwner])),
    tokenPrograms: uniq(tbs.flatMap((t) => [t.preProgramId, t.postProgramId])),
    discriminators: uniq(ins.map((i) => i.d8)).slice(0, 50),
  }
}

test('real mainnet block: bench queries match the naive evaluator', async () => {
  const blocks = await load()
  assert.equal(blocks.length, 1)
  const slot = blocks[0].header.number
  assert.equal(slot, 254170887)
  const store = new StaticStore(blocks)
  const queries = benchQueries()
  assert.ok(queries.length >= 5, 'bench queries not found')
  for (const { name, body } of queries) {
    const c = { body: { ...body, fromBlock: slot }, to: slot, bigintsAsNumbers: false }
    await assertSame(store, blocks, c)
    if (name === 'whirlpool_swap') {
      const res = await runEngine(store, c)
      const out = JSON.parse(res.lines[0].line)
      assert.ok(out.instructions.length > 0 && out.transactions.length > 0, 'the block has whirlpool swaps')
    }
  }
  // wide: every instruction, transaction, log, balance with every field
  const all = Object.fromEntries(
    ['block', 'transaction', 'instruction', 'log', 'balance', 'tokenBalance', 'reward'].map((s) => [s, allFields(s)]),
  )
  for (const bigintsAsNumbers of [false, true]) {
    await assertSame(store, blocks, {
      body: {
        fromBlock: slot,
        fields: all,
        instructions: [{}],
        transactions: [{}],
        logs: [{}],
        balances: [{}],
        tokenBalances: [{}],
        rewards: [{}],
      },
      to: slot,
      bigintsAsNumbers,
    })
  }
})

/** every selector name of the catalogue (both spellings where there are two) */
function allFields(sel: string): Record<string, boolean> {
  const out: Record<string, boolean> = {}
  for (const k of SELECTOR_INDEX[sel as SelectorName].keys()) out[k] = true
  return out
}

test('real mainnet block: random queries over its own addresses match the naive evaluator', async () => {
  const blocks = await load()
  const store = new StaticStore(blocks)
  const P = poolsOf(blocks)
  const r = new Rng(254170887)
  for (let i = 0; i < 60; i++) await assertSame(store, blocks, randomCase(r, P, blocks))
})
