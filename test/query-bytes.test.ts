/**
 * The byte writer: the same text as the string writer for every field of every kind (values,
 * nulls, both u64 renderings), and the cold store's blocks rendered as bytes from its stored JSON
 * tokens, byte for byte the lines of the in-memory store; the in-memory store's blocks rendered as
 * bytes from its values, byte for byte the engine's string output.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SELECTOR_NAMES, SELECTOR_INDEX } from '../src/catalogue.ts'
import { LineBuf } from '../src/util/json-bytes.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { compileByteWriter, compileWriter, selectedDefs } from '../src/query/render.ts'
import type { RecordKind } from '../src/model.ts'
import type { Chunk, Table } from '../src/store/chunk.ts'
import { MemoryChunk } from '../src/store/memory.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { datasetOf } from './support/cold/util.ts'
import { everything } from './support/http/hostile.ts'
import { randomBlocks } from './support/random-blocks.ts'

const blocks = randomBlocks(21, { blocks: 30, maxTx: 30 })

test('LineBuf.uint writes what string conversion writes, for integers up to 2^53 and others', () => {
  const o = new LineBuf(4)
  for (const v of [
    0,
    -0,
    7,
    9,
    10,
    99,
    100,
    65535,
    1e9 - 1,
    1e9,
    4294967295,
    4294967296,
    1e15 - 1,
    1e15,
    2 ** 53 - 1,
    2 ** 53,
    1e16,
    -1,
    1.5,
    NaN,
    Infinity,
  ]) {
    o.pos = 0
    o.uint(v)
    assert.equal(o.buf.toString('utf8', 0, o.pos), '' + v)
  }
})

test('byte writers render every field of every kind as the string writers do', () => {
  const chunk = new MemoryChunk(blocks)
  for (const sel of SELECTOR_NAMES) {
    const fields: Record<string, boolean> = {}
    for (const [name] of SELECTOR_INDEX[sel]) fields[name] = true
    const q = parseQuery({ type: 'solana', fromBlock: 0, fields: { [sel]: fields } })
    const selected = q.fields[sel]
    const defs = selectedDefs(selected)
    const cols = defs.map((d) =>
      sel === 'block' ? chunk.header(d.name as 'number') : chunk.table(sel).column(d.name),
    ) as ArrayLike<unknown>[]
    const rows = cols[0].length
    assert.ok(rows > 0, sel)
    for (const bigints of [false, true]) {
      const str = compileWriter(selected, bigints)(cols)
      const bytes = compileByteWriter(
        selected,
        bigints,
        defs.map(() => false),
      )(cols)
      const o = new LineBuf(16)
      for (let i = 0; i < rows; i++) {
        o.pos = 0
        bytes(i, o)
        assert.equal(o.buf.toString('utf8', 0, o.pos), str(i), `${sel} row ${i}`)
      }
    }
  }
})

async function lines(store: BlockStore, body: Record<string, unknown>) {
  const last = blocks[blocks.length - 1].header.number
  const out: { line: string; bytes?: Buffer }[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to: last, finalizedOnly: false })) {
    out.push({ line: b.line, bytes: b.bytes })
  }
  return out
}

test('the cold store renders blocks as bytes from its tokens: the in-memory store`s lines exactly', async () => {
  const cold = await datasetOf(blocks, { targetBlocks: 8 })
  const memory = new StaticStore(blocks, 8)
  const first = blocks[0].header.number
  const queries = [
    everything(first),
    { fromBlock: first, fields: { instruction: { accounts: true, programId: true, data: true } }, instructions: [{}] },
    {
      fromBlock: first,
      includeAllBlocks: true,
      fields: { transaction: { signatures: true, feePayer: true, fee: true } },
      transactions: [{ feePayer: [blocks[3].transactions[0]?.feePayer ?? 'x'] }],
    },
  ]
  for (const body of queries) {
    const want = await lines(memory, body)
    const got = await lines(cold, body)
    assert.equal(got.length, want.length)
    for (let i = 0; i < got.length; i++) {
      assert.ok(got[i].bytes instanceof Buffer, 'rendered as bytes')
      assert.equal(got[i].bytes!.toString('utf8'), want[i].line)
      assert.equal(got[i].line, want[i].line)
    }
  }
  await cold.close()
})

test('the in-memory store renders blocks as bytes: the string output`s lines exactly', async () => {
  const memory = new StaticStore(blocks, 8)
  // the same chunks with tables that offer no byte form: the engine's string output
  const stringsOnly = (c: Chunk): Chunk =>
    new Proxy(c, {
      get(target, prop) {
        if (prop !== 'table') {
          const v = Reflect.get(target, prop, target) as unknown
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
        }
        return (kind: RecordKind): Table => {
          const t = target.table(kind)
          return { rowCount: t.rowCount, blockOffsets: t.blockOffsets, column: (f) => t.column(f) }
        }
      },
    })
  const strings = new Proxy(memory, {
    get(target, prop) {
      if (prop === 'chunks') {
        return async function* (from: number, to: number, fin: boolean) {
          for await (const c of target.chunks(from, to, fin)) yield stringsOnly(c)
        }
      }
      const v = Reflect.get(target, prop, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  const first = blocks[0].header.number
  for (const body of [
    everything(first),
    everything(first, first + 5),
    { fromBlock: first, fields: { log: { message: true, programId: true } }, logs: [{}] },
    {
      ...everything(first),
      includeAllBlocks: true,
      rewards: [{ pubkey: [blocks.flatMap((b) => b.rewards)[0].pubkey] }],
    },
  ]) {
    const want = await lines(strings, body)
    const got = await lines(memory, body)
    assert.ok(want.length > 0)
    assert.equal(got.length, want.length)
    for (let i = 0; i < got.length; i++) {
      assert.equal(want[i].bytes, undefined, 'the reference renders strings')
      assert.ok(got[i].bytes instanceof Buffer, 'rendered as bytes')
      assert.equal(got[i].bytes!.toString('utf8'), want[i].line)
    }
  }
})
