/**
 * A block's records given a slice of transactions at a time as they are normalized
 * (normalize.ts `normalizeBlockInto`, text.ts `normalizeArchiveTextInto`) and taken into a chunk's
 * columns that way (chunk-file.ts `ChunkColumns.addPart`, src/ingest/import/batch.ts `BatchBuilder`).
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { gunzipSync } from 'node:zlib'
import { BatchBuilder } from '../src/ingest/import/batch.ts'
import type { Block } from '../src/model.ts'
import type { NormalizeResult } from '../src/normalize/normalize.ts'
import { normalizeArchiveText, normalizeArchiveTextInto } from '../src/normalize/text.ts'
import { splitTransactions } from '../src/rpc/split.ts'
import { ChunkColumns, encodeChunk } from '../src/store/cold/chunk-file.ts'
import { DATA } from './fixtures/normalize/blocks.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const LISTS = ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const

const mainnetText = (): string =>
  gunzipSync(readFileSync(join(DATA, 'blocks/254170887.jsonl.gz')))
    .toString('utf8')
    .trim()

/** the slices given for `text`, and the result */
function sliced(text: string, every: number, includeVotes: boolean): { slices: Block[]; r: NormalizeResult } {
  const slices: Block[] = []
  const r = normalizeArchiveTextInto(text, { includeVotes }, { every, take: (s) => slices.push(s) })
  return { slices, r }
}

/** the slices' lists concatenated, as one block */
function joined(slices: readonly Block[]): Block {
  const b = { header: slices[0].header } as Block
  for (const k of LISTS) (b[k] as unknown[]) = slices.flatMap((s) => s[k] as unknown[])
  return b
}

function assertSameAsWhole(text: string, every: number, includeVotes: boolean, what: string): Block[] {
  const want = normalizeArchiveText(text, { includeVotes })
  const { slices, r } = sliced(text, every, includeVotes)
  assert.ok(slices.length >= 1, what)
  for (const s of slices) assert.deepStrictEqual(s.header, slices[0].header, `${what}: one header`)
  assert.deepStrictEqual(joined(slices), want.block, what)
  assert.deepStrictEqual(r.warnings, want.warnings, `${what}: warnings`)
  assert.deepStrictEqual(r.block.header, want.block.header, `${what}: header`)
  for (const k of LISTS) assert.equal(r.block[k].length, 0, `${what}: the result keeps no ${k}`)
  return slices
}

test('the slices concatenated are the block normalized whole, for any slice size, votes kept or not', () => {
  const text = mainnetText()
  const n = splitTransactions(text, ['block'])!.spans.length / 2
  assert.ok(n > 100, `${n} transactions`)
  for (const includeVotes of [false, true]) {
    for (const every of [1, 7, 64, n + 1]) {
      const slices = assertSameAsWhole(text, every, includeVotes, `every ${every}, votes ${includeVotes}`)
      assert.equal(slices.length, Math.ceil(n / every))
    }
  }
})

test('a guessed cut that fails late: the records already given are not given again', () => {
  const text = mainnetText()
  const m = /"transactions":\s*\[\s*/.exec(text)!
  const at = m.index + m[0].length
  const opening = text.slice(at, text.indexOf(':', at) + 1)
  // a nested value that looks like the start of a transaction, in the last transaction but one
  // (the last one is measured exactly)
  const keys = [...text.matchAll(/"accountKeys":/g)].map((x) => x.index)
  const k = keys[keys.length - 2]
  const decoy = `${text.slice(0, k)}"decoy":[{},${opening}1}],${text.slice(k)}`
  const guessed = splitTransactions(decoy, ['block'], true)!
  const exact = splitTransactions(decoy, ['block'])!
  assert.equal(guessed.spans.length / 2, exact.spans.length / 2 + 1, 'the decoy adds a cut')
  for (const every of [1, 5, 64]) {
    const slices = assertSameAsWhole(decoy, every, true, `decoy, every ${every}`)
    // records were given before the guessed cut failed: its attempt and the next both gave slices
    assert.ok(slices.length > Math.ceil(exact.spans.length / 2 / every), `every ${every}: ${slices.length} slices`)
  }
})

test('the records of a slice given are the sink’s alone: collectable while the block’s result is held', async () => {
  const text = mainnetText()
  let registered = 0
  let collected = 0
  const registry = new FinalizationRegistry<number>(() => collected++)
  const r = normalizeArchiveTextInto(text, undefined, {
    every: 16,
    take(s) {
      for (const k of LISTS)
        for (const rec of s[k]) {
          registry.register(rec, 0)
          registered++
        }
    },
  })
  assert.ok(registered > 1000, `${registered} records`)
  for (let i = 0; i < 5 && collected < registered; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  assert.equal(collected, registered)
  assert.ok(r.block.header.number > 0) // the result is still held here
})

test('a block taken into the columns in slices: the bytes of encodeChunk of the whole block', async () => {
  const text = mainnetText()
  const whole = normalizeArchiveText(text, { includeVotes: true }).block
  const want = await encodeChunk([whole])
  for (const every of [1, 64]) {
    const c = new ChunkColumns()
    let first = true
    normalizeArchiveTextInto(
      text,
      { includeVotes: true },
      {
        every,
        take(s) {
          c.addPart(s, first)
          first = false
        },
      },
    )
    assert.equal((await c.encode()).sha256, want.sha256, `every ${every}`)
  }
  assert.throws(() => new ChunkColumns().addPart(whole, false), /before its first/)
})

test('BatchBuilder: a line taken in slices gives the chunk of the whole block, sealed as told', async () => {
  const text = mainnetText()
  const whole = normalizeArchiveText(text).block
  const want = await encodeChunk([whole])
  const b = new BatchBuilder({ includeVotes: false, encode: {} })
  for (const sealed of [true, false]) {
    assert.deepEqual(b.add(Buffer.from(text), 0).warnings, [])
    const got = await b.encode(sealed)
    assert.equal(got.sha256, want.sha256)
    assert.equal(got.sealed, sealed)
  }
})
