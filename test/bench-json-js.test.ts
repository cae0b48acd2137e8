import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { parseJsonJs, scanJson } from '../bench/json-js.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { INVALID_JSON } from './fixtures/invalid-json.ts'

// the JavaScript JSON reader the normalizer benchmark measures against JSON.parse: its figures
// mean something only if it reads what parseJsonExact reads and refuses what it refuses

test('parseJsonJs gives the values of parseJsonExact (property, big integers and escapes included)', () => {
  const int = fc.oneof(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.bigInt({ min: -1000n, max: 1000n }))
  const text = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v, null, 1)),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.array(int, { maxLength: 6 }).map((a) => '[' + a.join(' , ') + ']'),
  )
  fc.assert(
    fc.property(text, (t) => {
      assert.deepStrictEqual(parseJsonJs(t), parseJsonExact(t))
      assert.ok(scanJson(t) >= 0)
    }),
    { numRuns: 2000 },
  )
  assert.deepStrictEqual(parseJsonJs('{"__proto__":{"x":1}}'), JSON.parse('{"__proto__":{"x":1}}'))
  assert.deepStrictEqual(parseJsonJs('{"a":"q\\"\\\\\\u00e9","b":[1.5e3,-0,12345678901234567]}'), {
    a: 'q"\\\u00e9',
    b: [1500, -0, '12345678901234567'],
  })
})

test('parseJsonJs refuses what JSON.parse refuses', () => {
  for (const bad of INVALID_JSON) {
    assert.throws(() => JSON.parse(bad), SyntaxError, bad)
    assert.throws(() => parseJsonJs(bad), SyntaxError, bad)
  }
})
