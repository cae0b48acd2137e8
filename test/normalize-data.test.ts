/**
 * dataPrefixOf / discriminators against the plain byte-wise decoder of src/util/base58.ts, and the
 * per-block reuse of decoded data in normalizeBlock.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { dataPrefixOf, discriminatorsOf } from '../src/normalize/data.ts'
import { base58Decode, base58Encode, hexPrefix } from '../src/util/base58.ts'
import type { Instruction } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { PA, PB, synthBlock } from './fixtures/normalize/synth.ts'

test('dataPrefixOf equals the full decode: length and first 16 bytes (property, both code paths)', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 1300 }), fc.nat(20), (bytes, zeros) => {
      const b = new Uint8Array(bytes)
      for (let k = 0; k < zeros && k < b.length; k++) b[k] = 0
      const s = base58Encode(b)
      const p = dataPrefixOf(s)
      assert.ok(p)
      const full = base58Decode(s)
      assert.equal(p.length, full.length)
      assert.equal(p.prefix, hexPrefix(full, 16))
    }),
    { numRuns: 400 },
  )
})

test('discriminators: exact widths, null when the data is shorter; invalid base58 → null', () => {
  assert.deepStrictEqual(discriminatorsOf(dataPrefixOf('')!), {
    d1: null,
    d2: null,
    d4: null,
    d8: null,
    dataPrefix: '0x',
  })
  const three = base58Encode(Uint8Array.from([0xab, 0x00, 0x01]))
  assert.deepStrictEqual(discriminatorsOf(dataPrefixOf(three)!), {
    d1: '0xab',
    d2: '0xab00',
    d4: null,
    d8: null,
    dataPrefix: '0xab0001',
  })
  const long = base58Encode(Uint8Array.from({ length: 40 }, (_, i) => i))
  assert.deepStrictEqual(discriminatorsOf(dataPrefixOf(long)!), {
    d1: '0x00',
    d2: '0x0001',
    d4: '0x00010203',
    d8: '0x0001020304050607',
    dataPrefix: '0x000102030405060708090a0b0c0d0e0f',
  })
  assert.equal(dataPrefixOf('abc0'), null)
  assert.equal(dataPrefixOf('I'.repeat(50)), null)
  assert.deepStrictEqual(dataPrefixOf('1'.repeat(20)), { prefix: '0x' + '00'.repeat(16), length: 20 })
})

test('normalizeBlock: data met again in a block gets the fields it gets alone; bad data fails every time', () => {
  const long = base58Encode(Uint8Array.from({ length: 200 }, (_, i) => (i * 37 + 11) & 0xff))
  const other = base58Encode(Uint8Array.from({ length: 60 }, (_, i) => 255 - i))
  const bad = long.slice(0, 40) + '0' + long.slice(41) // '0' is not base58
  const alone = (d: string) => normalizeBlock(synthBlock([{ top: [{ p: PA, data: d }] }])).block.instructions[0]
  const pick = (i: Instruction) => [i.data, i.d1, i.d2, i.d4, i.d8, i.dataPrefix]
  const { block, warnings } = normalizeBlock(
    synthBlock([
      {
        top: [
          { p: PA, data: long },
          { p: PB, data: other },
        ],
        sig: 'A',
      },
      { top: [{ p: PA, data: bad }], sig: 'B' },
      {
        top: [
          { p: PB, data: other },
          { p: PA, data: long },
        ],
        sig: 'C',
      },
      { top: [{ p: PA, data: bad }], sig: 'D' },
    ]),
  )
  assert.deepStrictEqual(
    block.instructions.map((i) => [i.transactionIndex, ...pick(i)]),
    [
      [0, ...pick(alone(long))],
      [0, ...pick(alone(other))],
      [2, ...pick(alone(other))],
      [2, ...pick(alone(long))],
    ],
  )
  const p = dataPrefixOf(long)!
  assert.equal(block.instructions[0].dataPrefix, p.prefix)
  assert.deepStrictEqual(
    warnings.filter((w) => /data is not base58/.test(w.message)).map((w) => w.transactionIndex),
    [1, 3],
  )
})
