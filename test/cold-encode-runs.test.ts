// String and JSON column encoding (src/store/cold/encode.ts) over runs of one value: a row equal
// to the previous one takes its code without a dictionary lookup, and a JSON column lists one
// value per dictionary entry (`objects`, what its Bloom filter is built from), its dictionary in
// value order. Runs broken by nulls, runs of the same object and of equal but distinct ones all
// decode as written.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { encodeColumn } from '../src/store/cold/encode/column.ts'
import { decodeColumn } from '../src/store/cold/encode/decode.ts'

function roundTrip(type: 'string' | 'safeAscii' | 'json', values: unknown[], sortDicts: boolean) {
  const enc = encodeColumn('c', type, values, true, true, sortDicts)
  return { enc, back: Array.from(decodeColumn(enc.e, values.length, enc.parts, enc.w, enc.v).values) }
}

test('string columns with runs, nulls inside and between them, decode as written', () => {
  const values = ['b', 'b', null, 'b', 'a', 'a', undefined, null, 'b', 'c', 'c', 'c', null, 'a']
  for (const type of ['string', 'safeAscii'] as const)
    for (const sortDicts of [false, true]) {
      const { enc, back } = roundTrip(type, values, sortDicts)
      assert.equal(enc.e, 'dict')
      assert.deepEqual(
        back,
        values.map((v) => v ?? null),
      )
      assert.deepEqual([...enc.distinct!].sort(), ['a', 'b', 'c'])
    }
  // mostly distinct values (the plain list), with a run: the run's rows are all there
  const plain = Array.from({ length: 50 }, (_, i) => `value-${i}`)
  plain.splice(10, 0, 'value-9', 'value-9', null as unknown as string, 'value-9')
  const { enc, back } = roundTrip('safeAscii', plain, true)
  assert.equal(enc.e, 'plain')
  assert.deepEqual(back, plain)
})

test('JSON columns: runs of one object, equal objects and nulls; one object per dictionary entry', () => {
  const shared = { writable: ['A1', 'A2'], readonly: ['R1'] }
  const other = { writable: [], readonly: ['R2'] }
  const values = [
    shared,
    shared,
    null,
    shared,
    { ...shared },
    other,
    other,
    null,
    null,
    { writable: [], readonly: ['R2'] },
  ]
  const { enc, back } = roundTrip('json', values, false)
  assert.equal(enc.e, 'jdict')
  assert.deepEqual(back, values)
  assert.deepEqual(enc.distinct, [JSON.stringify(shared), JSON.stringify(other)])
  assert.deepEqual(enc.objects, [shared, other])
  // the dictionary is in value order whatever order the values came in (codes map through it)
  const rev = [other, other, shared, null, other]
  const r = roundTrip('json', rev, false)
  assert.equal(r.enc.e, 'jdict')
  assert.deepEqual(r.back, rev)
  assert.deepEqual(r.enc.distinct, [JSON.stringify(shared), JSON.stringify(other)])
  assert.deepEqual(r.enc.objects, [shared, other])
  // all distinct: the plain list, objects still one per distinct text
  const many = Array.from({ length: 30 }, (_, i) => [i])
  many.splice(5, 0, many[4], many[4])
  const p = roundTrip('json', many, false)
  assert.equal(p.enc.e, 'jplain')
  assert.deepEqual(p.back, many)
  assert.equal(p.enc.objects!.length, 30)
  assert.deepEqual(
    p.enc.objects!.map((o) => JSON.stringify(o)),
    p.enc.distinct,
  )
})
