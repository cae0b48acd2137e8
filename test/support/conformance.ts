/**
 * Backend-agnostic conformance suite of the query engine: random blocks, random queries, engine
 * output compared byte for byte with the naive evaluator, plus the range/stream rules of
 * docs/query.md §4. Any BlockStore implementation can run it:
 *
 *   runConformance('cold store', async (blocks) => openColdStoreWith(blocks))
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { SELECTOR_INDEX, SELECTOR_NAMES } from '../../src/catalogue.ts'
import type { Block } from '../../src/model.ts'
import { executeQuery, parseQuery } from '../../src/query/index.ts'
import type { BlockStore } from '../../src/store/types.ts'
import { naiveQuery } from './naive-query.ts'
import { makePools, randomBlocks, Rng, type Pools } from './random-blocks.ts'

type Q = Record<string, any>

export interface RunCase {
  body: Q
  /** the server's upper bound */
  to: number
  bigintsAsNumbers: boolean
  /** stop after the k-th produced block of the range (1-based), via shouldStop */
  stopAfterCount?: number
  /** run with the engine's `pause` at every check (slices of 0 ms): blocks rendered in pieces */
  pause?: boolean
}

function sample<T>(r: Rng, a: readonly T[], p: number): T[] {
  return a.filter(() => r.chance(p))
}

function values(r: Rng, pool: readonly string[]): string[] {
  if (r.chance(0.05)) return []
  const out = sample(r, pool, 2 / Math.max(pool.length, 1))
  if (out.length === 0) out.push(r.pick(pool))
  if (r.chance(0.2)) out.push('NotAnAddress1111111111111111111111111111111')
  return out
}

function randomFields(r: Rng): Q | undefined {
  if (r.chance(0.08)) return undefined
  const fields: Q = {}
  for (const sel of SELECTOR_NAMES) {
    if (r.chance(0.25)) continue
    const keys = [...SELECTOR_INDEX[sel].keys()]
    const chosen: Q = {}
    const all = r.chance(0.2)
    for (const k of keys) {
      if (all || r.chance(0.4)) chosen[k] = true
      else if (r.chance(0.1)) chosen[k] = false
    }
    fields[sel] = chosen
  }
  return fields
}

function hexCase(r: Rng, s: string): string {
  return r.chance(0.3) ? '0x' + s.slice(2).toUpperCase() : s
}

function randomInstructionRequest(r: Rng, P: Pools): Q {
  const q: Q = {}
  if (r.chance(0.5)) q.programId = values(r, P.programs)
  if (r.chance(0.4)) {
    const d = r.pick(['d1', 'd2', 'd3', 'd4', 'd8', 'discriminator'])
    const fixed = d === 'discriminator' ? -1 : Number(d.slice(1))
    const list: string[] = []
    const n = r.int(0, 3)
    for (let i = 0; i < n; i++) {
      // discriminator values of mixed lengths (0 to 12 bytes)
      const bytes = fixed >= 0 ? fixed : r.int(0, 12)
      const disc = r.pick(P.discriminators)
      let v = r.chance(0.8) ? disc.slice(0, 2 + 2 * Math.min(bytes, 8)) : '0x' + 'ab'.repeat(bytes)
      if (bytes > 8) v = v + 'cd'.repeat(bytes - 8)
      list.push(hexCase(r, v))
    }
    if (n === 0 && r.chance(0.5))
      list.push(hexCase(r, r.pick(P.discriminators).slice(0, 2 + 2 * Math.min(fixed >= 0 ? fixed : 4, 8))))
    q[d] = list
  }
  for (let i = 0; i < 16; i++) if (r.chance(0.04)) q[`a${i}`] = values(r, P.accounts)
  if (r.chance(0.15)) q.mentionsAccount = values(r, P.accounts)
  if (r.chance(0.2)) q.isCommitted = r.chance(0.7)
  for (const flag of [
    'transaction',
    'transactionBalances',
    'transactionTokenBalances',
    'transactionInstructions',
    'innerInstructions',
    'parentInstructions',
    'logs',
  ]) {
    if (r.chance(0.25)) q[flag] = r.chance(0.85)
  }
  return q
}

function randomTransactionRequest(r: Rng, P: Pools): Q {
  const q: Q = {}
  if (r.chance(0.4)) q.feePayer = values(r, P.accounts)
  if (r.chance(0.4)) q.mentionsAccount = values(r, P.accounts)
  for (const flag of ['instructions', 'balances', 'tokenBalances', 'logs']) if (r.chance(0.3)) q[flag] = r.chance(0.85)
  return q
}

function randomLogRequest(r: Rng, P: Pools): Q {
  const q: Q = {}
  if (r.chance(0.5)) q.programId = values(r, P.programs)
  if (r.chance(0.4)) q.kind = r.chance(0.05) ? [] : sample(r, ['log', 'data', 'other'], 0.5)
  for (const flag of ['instruction', 'transaction']) if (r.chance(0.35)) q[flag] = true
  return q
}

function randomBalanceRequest(r: Rng, P: Pools): Q {
  const q: Q = {}
  if (r.chance(0.6)) q.account = values(r, P.accounts)
  for (const flag of ['transaction', 'transactionInstructions']) if (r.chance(0.35)) q[flag] = true
  return q
}

function randomTokenBalanceRequest(r: Rng, P: Pools): Q {
  const q: Q = {}
  if (r.chance(0.3)) q.account = values(r, P.accounts)
  if (r.chance(0.2)) q.preMint = values(r, P.mints)
  if (r.chance(0.2)) q.postMint = values(r, P.mints)
  if (r.chance(0.15)) q.preOwner = values(r, P.owners)
  if (r.chance(0.15)) q.postOwner = values(r, P.owners)
  if (r.chance(0.15)) q.preProgramId = values(r, P.tokenPrograms)
  if (r.chance(0.15)) q.postProgramId = values(r, P.tokenPrograms)
  for (const flag of ['transaction', 'transactionInstructions', 'transactionBalances', 'transactionTokenBalances']) {
    if (r.chance(0.3)) q[flag] = true
  }
  return q
}

const MAKERS: [string, (r: Rng, P: Pools) => Q][] = [
  ['instructions', randomInstructionRequest],
  ['transactions', randomTransactionRequest],
  ['logs', randomLogRequest],
  ['balances', randomBalanceRequest],
  ['tokenBalances', randomTokenBalanceRequest],
  ['rewards', (r, P) => (r.chance(0.6) ? { pubkey: values(r, P.accounts.slice(0, 12)) } : {})],
]

/** A random valid query over `blocks` (ascending) with a random server bound and stop point. */
export function randomCase(r: Rng, P: Pools, blocks: Block[]): RunCase {
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const fromBlock = r.int(first - 3, last + (r.chance(0.05) ? 5 : 0))
  const body: Q = { fromBlock }
  if (r.chance(0.5)) body.type = 'solana'
  if (r.chance(0.6)) body.toBlock = r.int(fromBlock, last + 3)
  if (r.chance(0.2)) body.includeAllBlocks = r.chance(0.8)
  const fields = randomFields(r)
  if (fields !== undefined) body.fields = fields
  const kinds = r.int(0, 3)
  for (let k = 0; k < kinds; k++) {
    const [member, make] = r.pick(MAKERS)
    const n = r.int(1, 2)
    body[member] = [...(body[member] ?? []), ...Array.from({ length: n }, () => make(r, P))]
  }
  const head = r.chance(0.3) ? r.int(fromBlock, last) : last
  const to = Math.min(body.toBlock ?? head, head)
  const produced = blocks.filter((b) => b.header.number >= fromBlock && b.header.number <= to).length
  const c: RunCase = { body, to, bigintsAsNumbers: r.chance(0.2) }
  if (produced > 0 && r.chance(0.15)) c.stopAfterCount = r.int(1, produced)
  return c
}

export interface RunResult {
  lines: { number: number; hash: string; line: string; empty: boolean }[]
  stopCalls: number
}

export async function runEngine(store: BlockStore, c: RunCase): Promise<RunResult> {
  const q = parseQuery(c.body)
  let calls = 0
  const shouldStop = () => ++calls === c.stopAfterCount
  const lines = []
  for await (const b of executeQuery(store, q, {
    to: c.to,
    finalizedOnly: false,
    bigintsAsNumbers: c.bigintsAsNumbers,
    shouldStop,
    ...(c.pause ? { pause: () => Promise.resolve(true), sliceMs: 0 } : {}),
  })) {
    lines.push(b)
  }
  return { lines, stopCalls: calls }
}

export function runNaive(blocks: Block[], c: RunCase) {
  let stopAfter: number | undefined
  if (c.stopAfterCount !== undefined) {
    const inRange = blocks.filter((b) => b.header.number >= c.body.fromBlock && b.header.number <= c.to)
    stopAfter = inRange[c.stopAfterCount - 1].header.number
  }
  return naiveQuery(blocks, c.body, { to: c.to, bigintsAsNumbers: c.bigintsAsNumbers, stopAfter })
}

function describeDiff(
  c: RunCase,
  got: { number: number; line: string }[],
  exp: { number: number; line: string }[],
): string {
  for (let i = 0; i < Math.max(got.length, exp.length); i++) {
    if (got[i]?.line !== exp[i]?.line || got[i]?.number !== exp[i]?.number) {
      return `query ${JSON.stringify(c)}\nline ${i}:\n engine: ${got[i]?.line}\n  naive: ${exp[i]?.line}`
    }
  }
  return 'same'
}

export async function assertSame(store: BlockStore, blocks: Block[], c: RunCase): Promise<void> {
  const got = await runEngine(store, c)
  const exp = runNaive(blocks, c)
  const a = got.lines.map((l) => `${l.number} ${l.hash} ${l.line}`).join('\n')
  const e = exp.map((l) => `${l.number} ${l.hash} ${l.line}`).join('\n')
  if (a !== e) assert.fail(describeDiff(c, got.lines, exp))
  // `empty` marks exactly the blocks with nothing selected (never with includeAllBlocks)
  for (const l of got.lines) {
    const headerOnly = Object.keys(JSON.parse(l.line)).length === 1
    assert.equal(l.empty, headerOnly && c.body.includeAllBlocks !== true, `empty flag of block ${l.number}`)
  }
}

/** the reference engine's benchmark queries (bench/queries) */
export function benchQueries(): { name: string; body: Q }[] {
  const dir = join(import.meta.dirname, '..', '..', 'bench', 'queries')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: f.replace(/\.json$/, ''), body: JSON.parse(readFileSync(join(dir, f), 'utf8')) }))
}

/**
 * Register the conformance tests for a store backend. `makeStore` receives ascending blocks and
 * must serve exactly them (all finalized).
 */
export function runConformance(name: string, makeStore: (blocks: Block[]) => Promise<BlockStore>): void {
  const P = makePools()
  const sets: { seed: number; blocks: Block[] }[] = [
    { seed: 11, blocks: randomBlocks(11, { blocks: 60, pools: P }) },
    { seed: 12, blocks: randomBlocks(12, { blocks: 25, pools: P, maxTx: 12, skipRate: 0.5 }) },
    { seed: 13, blocks: randomBlocks(13, { blocks: 40, pools: P, maxTx: 2, firstSlot: 5_000_000 }) },
  ]

  test(`${name}: bench queries match the naive evaluator`, async () => {
    for (const { blocks } of sets) {
      const store = await makeStore(blocks)
      const last = blocks[blocks.length - 1].header.number
      for (const { body } of benchQueries()) {
        for (const bigintsAsNumbers of [false, true]) {
          await assertSame(store, blocks, {
            body: { ...body, fromBlock: blocks[3].header.number },
            to: last,
            bigintsAsNumbers,
            pause: bigintsAsNumbers,
          })
        }
      }
    }
  })

  test(`${name}: random queries match the naive evaluator byte for byte`, async () => {
    for (const { seed, blocks } of sets) {
      const store = await makeStore(blocks)
      const r = new Rng(seed * 7919)
      for (let i = 0; i < 250; i++) await assertSame(store, blocks, { ...randomCase(r, P, blocks), pause: i % 3 === 0 })
    }
  })

  test(`${name}: the first and the last produced block of the range are always present`, async () => {
    const blocks = sets[0].blocks
    const store = await makeStore(blocks)
    const nums = blocks.map((b) => b.header.number)
    // a query selecting nothing: exactly the two boundary blocks, header-only
    const body = { fromBlock: nums[5] - 1, fields: { block: { number: true, hash: true } } }
    const res = await runEngine(store, { body, to: nums[40], bigintsAsNumbers: false })
    assert.deepEqual(
      res.lines.map((l) => l.line),
      [nums[5], nums[40]].map((n, i) => `{"header":{"number":${n},"hash":"${blocks[i === 0 ? 5 : 40].header.hash}"}}`),
    )
    assert.deepEqual(
      res.lines.map((l) => l.empty),
      [true, true],
    )
    // no fields at all: the header renders as {}
    const bare = await runEngine(store, { body: { fromBlock: nums[2] }, to: nums[9], bigintsAsNumbers: false })
    assert.deepEqual(
      bare.lines.map((l) => [l.number, l.line]),
      [
        [nums[2], '{"header":{}}'],
        [nums[9], '{"header":{}}'],
      ],
    )
    // a single-block range yields that block once
    const one = await runEngine(store, { body: { fromBlock: nums[7] }, to: nums[7], bigintsAsNumbers: false })
    assert.deepEqual(
      one.lines.map((l) => l.number),
      [nums[7]],
    )
    // includeAllBlocks: every produced block, none marked empty
    const all = await runEngine(store, {
      body: { fromBlock: nums[0], includeAllBlocks: true },
      to: nums[20],
      bigintsAsNumbers: false,
    })
    assert.deepEqual(
      all.lines.map((l) => l.number),
      nums.slice(0, 21),
    )
    assert.ok(all.lines.every((l) => !l.empty))
  })

  test(`${name}: a range with no produced block yields nothing`, async () => {
    const blocks = sets[1].blocks // skip rate 0.5: has gaps
    const store = await makeStore(blocks)
    const nums = blocks.map((b) => b.header.number)
    const gap = nums.findIndex((n, i) => i > 0 && n - nums[i - 1] > 1)
    assert.ok(gap > 0, 'the generator made no gap')
    const res = await runEngine(store, {
      body: { fromBlock: nums[gap - 1] + 1, includeAllBlocks: true },
      to: nums[gap] - 1,
      bigintsAsNumbers: false,
    })
    assert.equal(res.lines.length, 0)
    const above = await runEngine(store, {
      body: { fromBlock: nums[nums.length - 1] + 1 },
      to: nums[nums.length - 1] + 100,
      bigintsAsNumbers: false,
    })
    assert.equal(above.lines.length, 0)
  })

  test(`${name}: shouldStop ends at a block boundary and emits that block`, async () => {
    const blocks = sets[0].blocks
    const store = await makeStore(blocks)
    const nums = blocks.map((b) => b.header.number)
    const body = { fromBlock: nums[0], fields: { block: { number: true } } }
    for (const k of [1, 2, 13, 30, nums.length]) {
      const res = await runEngine(store, {
        body,
        to: nums[nums.length - 1],
        bigintsAsNumbers: false,
        stopAfterCount: k,
      })
      const expected = k === 1 ? [nums[0]] : [nums[0], nums[k - 1]]
      assert.deepEqual(
        res.lines.map((l) => l.number),
        expected,
        `stop after ${k}`,
      )
      assert.equal(res.stopCalls, k, 'shouldStop is checked once per produced block, and not after stopping')
    }
  })
}
