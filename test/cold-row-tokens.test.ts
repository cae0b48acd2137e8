// Few-rows output of the cold store in byte form: Table.rowTokens writes each row's stored JSON
// tokens (built once per row and kept) with the same bytes as Table.tokens; the parts it read
// whole to build them leave the cache when the rows are written; a selective query rendered from
// it gives the in-memory store's lines and, run again, decompresses no frame.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { columnsOf } from '../src/catalogue.ts'
import { RECORD_KINDS, type Block } from '../src/model.ts'
import { LineBuf, type JsonTokens } from '../src/util/json-bytes.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import type { Chunk } from '../src/store/chunk.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { readFooter } from '../src/store/cold/chunk-file.ts'
import type { DiskChunk } from '../src/store/cold/disk-chunk.ts'
import { frameStats } from '../src/store/cold/frames.ts'
import { StaticStore } from '../src/store/static.ts'
import type { BlockStore } from '../src/store/types.ts'
import { generateBlocks, rng } from './support/cold/gen.ts'
import { datasetOf, tempDir, writeStore } from './support/cold/util.ts'

test('Table.rowTokens writes the bytes Table.tokens writes, row by row, in any order and again', async () => {
  const blocks = generateBlocks({ seed: 5, count: 24, accounts: 300 })
  const rand = rng(3)
  let rows = 0
  let columns = 0
  // formats 3 and 4; the default cache, a 1-byte one (every read from the file again), 2 KiB frames
  for (const [formatVersion, cacheBytes, frameLog] of [
    [3, undefined, undefined],
    [4, undefined, undefined],
    [4, 1, undefined],
    [4, undefined, 11],
  ] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 8, formatVersion, frameLog })
    const s = await DiskColdStore.open(dir, { readOnly: true, cacheBytes })
    const chunks: Chunk[] = []
    for await (const c of s.chunks(0, Number.MAX_SAFE_INTEGER)) chunks.push(c)
    for (const c of chunks) {
      for (const kind of RECORD_KINDS) {
        const t = c.table(kind)
        const n = t.rowCount
        for (const d of columnsOf(kind)) {
          const few = t.rowTokens!(d.name, 4)
          if (few === null) continue
          // bool and u32 columns have no stored JSON form: their values as the writers render them
          const all = d.type === 'bool' || d.type === 'u32' ? valueTokens(t.column(d.name)) : t.tokens!(d.name, false)
          assert.notEqual(all, null, `${kind}.${d.name}: a column with row tokens has tokens`)
          columns++
          const order = Array.from({ length: n }, (_, i) => i).filter(() => rand() < 0.5)
          order.sort(() => rand() - 0.5)
          for (const i of [...order, ...order.slice(0, 5)]) {
            const a = new LineBuf(16)
            const b = new LineBuf(16)
            few.write(i, a)
            all!.write(i, b)
            assert.equal(
              a.buf.toString('utf8', 0, a.pos),
              b.buf.toString('utf8', 0, b.pos),
              `${kind}.${d.name} row ${i}`,
            )
            rows++
          }
        }
      }
    }
    await s.close()
  }
  assert.ok(columns > 20 && rows > 1000, `${columns} columns, ${rows} rows compared`)
})

/** a column's values written as JSON (null, booleans) */
function valueTokens(values: ArrayLike<unknown>): JsonTokens {
  return { write: (i, out) => out.str(JSON.stringify(values[i])) }
}

test('a u32 column of a few rows is written from rows kept, also once decoded (its values are scattered over the decoded column)', async () => {
  const { s, chunks } = await oneChunkStore(23)
  const t = chunks[0].table('instruction')
  const n = t.rowCount
  const rows = Array.from({ length: Math.floor(n / 9) }, (_, k) => 9 * k + 2)
  const render = (tok: JsonTokens) => {
    const out = new LineBuf(16)
    for (const r of rows) {
      tok.write(r, out)
      out.byte(0x2c)
    }
    return out.buf.toString('utf8', 0, out.pos)
  }
  const first = t.rowTokens!('transactionIndex', rows.length)
  assert.notEqual(first, null, 'a u32 column has row tokens')
  const text = render(first!)
  first!.done!()
  const values = t.column('transactionIndex') as ArrayLike<number>
  assert.equal(text, rows.map((r) => String(values[r]) + ',').join(''))
  // decoded now: the rows kept, in the form the compiled writers copy inline
  const again = t.rowTokens!('transactionIndex', rows.length)
  assert.notEqual(again, null, 'row tokens once the column is decoded too')
  assert.equal(again!.form?.kind, 'kept')
  assert.equal(again!.form?.kind === 'kept' ? again!.form.rows.length : 0, rows.length)
  assert.equal(render(again!), text)
  again!.done!()
  await s.close()
})

test('fixed-width columns (u64, i64, bool) of a few rows read many enough to read them whole write their stored bytes', async () => {
  const blocks = generateBlocks({ seed: 21, count: 16, accounts: 300 })
  let checked = 0
  for (const formatVersion of [3, 4] as const) {
    const dir = tempDir()
    await writeStore(dir, blocks, { targetBlocks: 16, formatVersion })
    const s = await DiskColdStore.open(dir, { readOnly: true })
    const chunks: Chunk[] = []
    for await (const c of s.chunks(0, Number.MAX_SAFE_INTEGER)) chunks.push(c)
    for (const kind of RECORD_KINDS) {
      const t = chunks[0].table(kind)
      const n = t.rowCount
      for (const d of columnsOf(kind)) {
        if (d.type !== 'u64' && d.type !== 'i64' && d.type !== 'bool') continue
        // both first: once decoded (column()), the decoded values are used instead
        const toks = [false, true].map((bigints) => t.rowTokens!(d.name, n, bigints))
        const values = t.column(d.name)
        for (const bigints of [false, true]) {
          const tok = toks[+bigints]
          assert.notEqual(tok, null, `${kind}.${d.name}: many rows write the stored bytes`)
          for (let i = 0; i < n; i++) {
            const out = new LineBuf(16)
            tok!.write(i, out)
            const v = values[i]
            const want =
              typeof v === 'bigint' ? (bigints ? String(v) : `"${v}"`) : v === undefined ? 'null' : JSON.stringify(v)
            assert.equal(out.buf.toString('utf8', 0, out.pos), want, `${kind}.${d.name} row ${i}`)
            checked++
          }
        }
      }
    }
    await s.close()
  }
  assert.ok(checked > 1000, `${checked} values`)
})

/** 16 generated blocks written as one chunk, the store opened read-only, and its chunks (one) */
async function oneChunkStore(seed: number): Promise<{ s: DiskColdStore; chunks: Chunk[] }> {
  const blocks = generateBlocks({ seed, count: 16, accounts: 3000 })
  const dir = tempDir()
  await writeStore(dir, blocks, { targetBlocks: 16 })
  const s = await DiskColdStore.open(dir, { readOnly: true })
  const chunks: Chunk[] = []
  for await (const c of s.chunks(0, Number.MAX_SAFE_INTEGER)) chunks.push(c)
  assert.equal(chunks.length, 1)
  return { s, chunks }
}

/** accounts in 3 to 20 instructions' lists, the most used first */
function fewUseAccounts(blocks: Block[]): string[] {
  const uses = new Map<string, number>()
  for (const b of blocks)
    for (const ins of b.instructions) for (const a of ins.accounts) uses.set(a, (uses.get(a) ?? 0) + 1)
  return [...uses]
    .filter(([, k]) => k >= 3 && k <= 20)
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([a]) => a)
}

async function lines(store: BlockStore, body: Record<string, unknown>, to: number): Promise<string[]> {
  const out: string[] = []
  for await (const b of executeQuery(store, parseQuery(body), { to, finalizedOnly: false })) {
    assert.ok(b.bytes === undefined || b.bytes instanceof Buffer)
    out.push(b.line)
  }
  return out
}

test('a one-account query renders from row tokens: the in-memory lines, and no frame decompressed when run again', async () => {
  const blocks = generateBlocks({ seed: 9, count: 40, accounts: 2000 })
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  // an account of few instructions (the selected rows are few in each chunk)
  const account = fewUseAccounts(blocks)[0]
  const body = {
    type: 'solana',
    fromBlock: first,
    fields: {
      block: { number: true },
      instruction: { transactionIndex: true, instructionAddress: true, programId: true, accounts: true, data: true },
      transaction: { signatures: true, feePayer: true },
    },
    instructions: [{ mentionsAccount: [account], transaction: true }],
  }
  const want = await lines(new StaticStore(blocks, 8), body, last)
  assert.ok(want.length > 1)
  const cold = await datasetOf(blocks, { targetBlocks: 8 })
  const f0 = frameStats.frames
  assert.deepEqual(await lines(cold, body, last), want)
  assert.ok(frameStats.frames > f0, 'the first run reads frames')
  const f1 = frameStats.frames
  assert.deepEqual(await lines(cold, body, last), want)
  assert.equal(frameStats.frames, f1, 'the second run decompresses nothing')
  await cold.close()
})

test('rows kept by an earlier query are copied inline by the compiled writers, mixed with rows built now', async () => {
  const blocks = generateBlocks({ seed: 13, count: 40, accounts: 2000 })
  const first = blocks[0].header.number
  const last = blocks[blocks.length - 1].header.number
  const few = fewUseAccounts(blocks)
  const query = (accounts: string[]) => ({
    type: 'solana',
    fromBlock: first,
    fields: {
      block: { number: true },
      instruction: { transactionIndex: true, instructionAddress: true, programId: true, accounts: true, data: true },
    },
    instructions: [{ mentionsAccount: accounts }],
  })
  const memory = new StaticStore(blocks, 8)
  const cold = await datasetOf(blocks, { targetBlocks: 8 })
  const one = query([few[0]])
  assert.deepEqual(await lines(cold, one, last), await lines(memory, one, last))
  // the rows of that query are kept: the columns now come with them in a form the writers copy
  let kept = 0
  for await (const c of cold.chunks(first, last, true)) {
    const t = c.table('instruction').rowTokens!('accounts', 4)
    assert.ok(t !== null)
    if (t.form?.kind === 'kept' && t.form.rows.length > 0) kept++
    t.done?.()
  }
  assert.ok(kept > 0, 'chunks with kept rows')
  // more accounts: rows kept (copied inline) and rows built now (through the column), in order
  const more = query(few.slice(0, 6))
  const want = await lines(memory, more, last)
  assert.ok(want.length > 1)
  assert.deepEqual(await lines(cold, more, last), want)
  assert.deepEqual(await lines(cold, more, last), want, 'again, every row kept')
  await cold.close()
})

test('parts read whole to build a few rows are dropped once the rows are written; the built rows stay', async () => {
  const { s, chunks } = await oneChunkStore(13)
  const c = chunks[0] as DiskChunk
  const t = c.table('instruction')
  const n = t.rowCount
  const parts = (readFooter(c.path).footer.kinds.instruction.cols.accounts.p as number[]).slice(0, 5)
  const whole = parts.reduce((a, b) => a + b, 0)
  // every 10th row: few rows (1 in 10), but enough to read the parts whole
  const rows = Array.from({ length: Math.floor(n / 10) }, (_, k) => 10 * k)
  const render = (tok: JsonTokens) => {
    const out = new LineBuf()
    for (const r of rows) tok.write(r, out)
    return out.buf.toString('latin1', 0, out.pos)
  }
  const before = s.cacheStats().bytes
  const f0 = frameStats.frames
  const tok = t.rowTokens!('accounts', rows.length)!
  const text = render(tok)
  const held = s.cacheStats().bytes - before
  assert.ok(frameStats.frames > f0)
  assert.ok(held > 0.8 * whole, `held ${held} bytes while rendering, parts ${whole}`)
  tok.done!()
  const kept = s.cacheStats().bytes - before
  assert.ok(kept < held - 0.8 * parts[1], `kept ${kept} bytes after done, ${held} before`)
  assert.equal(text, render(t.tokens!('accounts', false)!))
  // again: the built rows, nothing read
  const f1 = frameStats.frames
  const again = t.rowTokens!('accounts', rows.length)!
  assert.equal(render(again), text)
  again.done!()
  assert.equal(frameStats.frames, f1)
  await s.close()
})

test('rows built by rowTokens are packed once written (bytes and an index; a view for a big row only), found again in any order, merged with rows built later', async () => {
  const { s, chunks } = await oneChunkStore(17)
  const t = chunks[0].table('instruction')
  const n = t.rowCount
  const rand = rng(11)
  const render = (tok: JsonTokens, rows: number[]) => {
    const out = new LineBuf(16)
    for (const r of rows) {
      tok.write(r, out)
      out.byte(0x0a)
    }
    return out.buf.toString('utf8', 0, out.pos)
  }
  for (const field of ['accounts', 'programId', 'data', 'instructionAddress']) {
    const all = t.tokens!(field, false)!
    const a = Array.from({ length: Math.floor(n / 5) }, (_, k) => 5 * k)
    const b = Array.from({ length: Math.floor(n / 7) }, (_, k) => 7 * k + 1).reverse()
    const before = s.cacheStats().bytes
    const first = t.rowTokens!(field, a.length)!
    const text = render(first, a)
    assert.equal(text, render(all, a), `${field}: rows of the first use`)
    first.done!()
    const held = s.cacheStats().bytes - before
    // the rows' bytes, 8 bytes of index each and a view per row of 160 bytes or more (a Map entry
    // and a Buffer per row were counted 64 more), and a few pages of the column
    const rowBytes = text.length - a.length
    const big = text.split('\n').filter((r) => Buffer.byteLength(r) >= 160).length
    assert.ok(
      held <= rowBytes + 16 * a.length + 96 * big + 1024,
      `${field}: ${held} bytes held for ${a.length} rows of ${rowBytes} bytes (${big} of them big)`,
    )
    // packed rows and new ones, descending, then every one of them in a random order
    const second = t.rowTokens!(field, b.length)!
    assert.equal(render(second, [...b, ...a]), render(all, [...b, ...a]), `${field}: packed and new rows`)
    second.done!()
    const mixed = [...a, ...b, ...a].sort(() => rand() - 0.5)
    const f0 = frameStats.frames
    const third = t.rowTokens!(field, mixed.length)!
    assert.equal(render(third, mixed), render(all, mixed), `${field}: every row again, in any order`)
    third.done!()
    assert.equal(frameStats.frames, f0, `${field}: nothing read again`)
  }
  await s.close()
})
