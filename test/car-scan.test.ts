// Transaction and Entry nodes read in place (src/ingest/car/scan.ts) against the generic DAG-CBOR
// decoder (decodeNode): the same node for every such node of generated CAR files in each layout
// the writer makes, and null (left to decodeNode) for encodings outside the usual shape.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeNode, KIND_ENTRY, KIND_TRANSACTION } from '../src/ingest/car/nodes.ts'
import { readCar, type CarSection } from '../src/ingest/car/reader.ts'
import { scanEntry, scanTransaction } from '../src/ingest/car/scan.ts'
import { encodeRewards, encodeTransactionStatusMeta } from '../src/ingest/solana-storage/index.ts'
import { realBlocks } from './fixtures/normalize/blocks.ts'
import { cbor, Link, writeCar, type CarWriterOptions } from './support/car/writer.ts'

const BASE: CarWriterOptions = {
  meta: (m) => (m ? encodeTransactionStatusMeta(m) : null),
  rewards: (r) => encodeRewards(r),
}

async function sections(bytes: Uint8Array): Promise<CarSection[]> {
  const out: CarSection[] = []
  async function* one() {
    yield bytes
  }
  for await (const s of readCar(one())) if ('data' in s) out.push({ ...s, data: s.data.slice() })
  return out
}

test('every Transaction and Entry node of generated CAR files: read in place equals decodeNode', async () => {
  const lines = realBlocks()
    .slice(0, 3)
    .map((b) => structuredClone(b.line))
  const layouts: Partial<CarWriterOptions>[] = [
    {},
    { index: 'absent' },
    { index: 'null' },
    { frameSize: 200, hash: 'crc' },
    { frameSize: 64, hash: 'fnv', txPerEntry: 1 },
  ]
  let scanned = 0
  for (const layout of layouts) {
    for (const s of await sections(writeCar(lines, { ...BASE, ...layout }))) {
      const kind = s.data[1]
      if (kind !== KIND_TRANSACTION && kind !== KIND_ENTRY) continue
      const fast = kind === KIND_TRANSACTION ? scanTransaction(s.data) : scanEntry(s.data)
      assert.ok(fast, `layout ${JSON.stringify(layout)}: a usual node read in place`)
      assert.deepEqual(fast, decodeNode(s.data))
      scanned++
    }
  }
  assert.ok(scanned > 1000, `${scanned} nodes`)
})

test('unusual encodings are left to decodeNode (null), which still decodes or rejects them', () => {
  const key = new Uint8Array(36).fill(7)
  key[0] = 1
  const frame = (hash: unknown) => [6, hash, null, null, new Uint8Array([1, 2, 3])]
  type V = Parameters<typeof cbor>[0]
  // hashes: unsigned and negative (some writers store the 64 bits signed), below and beyond 2^53
  for (const hash of [
    0,
    23,
    12345,
    2 ** 40,
    2n ** 60n,
    2n ** 64n - 1n,
    -1,
    -5,
    -(2 ** 40),
    -(2n ** 60n),
    -(2n ** 63n),
  ]) {
    const b = cbor([0, frame(hash), frame(null), 9, 0] as V)
    assert.deepEqual(scanTransaction(b), decodeNode(b), `hash ${hash}`)
  }
  // a slot beyond 2^53 (decodeNode rejects it)
  const big = cbor([0, frame(null), frame(null), 2n ** 60n] as V)
  assert.equal(scanTransaction(big), null)
  assert.throws(() => decodeNode(big))
  // a tag written with a longer head than needed: same link for decodeNode, not the usual shape
  const entry = cbor([1, 3, new Uint8Array(32), [new Link(key)]])
  assert.deepEqual(scanEntry(entry), decodeNode(entry))
  const longTag = Buffer.from(entry)
  const at = longTag.indexOf(0xd8)
  const odd = Buffer.concat([longTag.subarray(0, at), Buffer.from([0xd9, 0x00, 42]), longTag.subarray(at + 2)])
  assert.equal(scanEntry(odd), null)
  assert.deepEqual(decodeNode(odd), decodeNode(entry))
  // wrong arity, a text where bytes belong, bytes after the node, truncation: null, and decodeNode rejects
  const bad = [
    cbor([0, frame(null), frame(null)] as V),
    cbor([1, 3, 'not bytes', [new Link(key)]]),
    Buffer.concat([entry, Buffer.from([0])]),
    entry.subarray(0, entry.length - 3),
  ]
  for (const b of bad) {
    assert.equal(b[1] === KIND_ENTRY ? scanEntry(b) : scanTransaction(b), null)
    assert.throws(() => decodeNode(b))
  }
})
