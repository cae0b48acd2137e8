/**
 * dataPrefixOf / discriminators against the plain byte-wise decoder of src/util/base58.ts, and the
 * per-block reuse of decoded data in normalizeBlock.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { dataPrefixOf, discriminatorsOf, prefixHex, viaWindow } from '../src/normalize/data.ts'
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

test('viaWindow: long data decided from its leading 36 characters equals the full decode; crafted data falls back', () => {
  const decided = { yes: 0, no: 0 }
  const check = (bytes: Uint8Array, zeros: number, expectDecided: boolean | null) => {
    const s = base58Encode(bytes)
    const full = base58Decode(s)
    const len = viaWindow(s, zeros)
    if (len === -2) {
      decided.no++
      if (expectDecided === true) assert.fail(`undecided on ${s}`)
    } else {
      decided.yes++
      if (expectDecided === false) assert.fail(`decided on crafted ${s}`)
      assert.equal(len, full.length)
      assert.equal(prefixHex(len), hexPrefix(full, 16))
    }
    // whichever path answers, the public result is the exact one
    const p = dataPrefixOf(s)!
    assert.equal(p.length, full.length)
    assert.equal(p.prefix, hexPrefix(full, 16))
  }
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 45, maxLength: 1300 }), fc.nat(5), (bytes, zeros) => {
      const b = new Uint8Array(bytes)
      b[zeros] |= 1 // the number starts right after the leading zero bytes
      for (let k = 0; k < zeros; k++) b[k] = 0
      check(b, zeros, null)
    }),
    { numRuns: 300 },
  )
  // random data: decided (a carry within 2^-83 of the window's bound does not happen by chance)
  assert.ok(decided.yes >= 290, JSON.stringify(decided))
  // crafted: after 16 leading bytes, all 0x00 or all 0xff (the bounds straddle a carry)
  for (const fill of [0x00, 0xff]) {
    for (const n of [45, 46, 100, 333, 1232]) {
      const b = Uint8Array.from({ length: n }, (_, i) => (i < 16 ? (i * 29 + 7) & 0xff : fill))
      check(b, 0, false)
    }
  }
  // a non-base58 character anywhere, also after the window
  assert.equal(viaWindow('2'.repeat(70) + '0', 0), -1)
  assert.equal(viaWindow('0' + '2'.repeat(70), 0), -1)
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
