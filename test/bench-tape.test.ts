import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import fc from 'fast-check'
import { TapeReader, STR, ESC } from '../bench/tape/reader.ts'
import { splitTransactions } from '../src/rpc/split.ts'
import { BlockGenerator, loadTemplates } from '../src/ingest/generate.ts'
import { INVALID_JSON } from './fixtures/invalid-json.ts'
// @ts-expect-error: a plain ES module without types
import { buildTape, TAPE_MODULE } from '../scripts/build-wasm.mjs'

// the compiled JSON reader the normalizer benchmark measures against JSON.parse: its figures mean
// something only if it reads every text JSON.parse reads, into the same values, and refuses the
// others

const bytes = (s: string) => Buffer.from(s, 'utf8')

function readValue(r: TapeReader, text: string): unknown {
  const tape = r.read(bytes(text))
  const [v, end] = r.value(tape)
  assert.equal(end, tape.length, 'one value fills the tape')
  return v
}

test('the committed module is what its source compiles to', () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-tape-'))
  try {
    const out = join(dir, 'reader.wasm')
    buildTape(out)
    assert.ok(readFileSync(out).equals(readFileSync(TAPE_MODULE)), 'run `npm run build:wasm` and commit the module')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the tape holds the values JSON.parse gives (property: escapes, non-ASCII, numbers, whitespace)', () => {
  const r = new TapeReader()
  const spaced = (t: string, ws: string) => t.replace(/([,:[\]{}])/g, `${ws}$1${ws}`)
  const text = fc.oneof(
    fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)),
    fc
      .tuple(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(' ', '\n', '\t', '\r\n', ''))
      .map(([v, ws]) => `${ws}${JSON.stringify(v, null, ws === '' ? undefined : 1)}${ws}`),
    // spaces around every structural character (inside strings too: still valid JSON)
    fc.jsonValue({ maxDepth: 3 }).map((v) => spaced(JSON.stringify(v), ' ')),
    fc
      .array(
        fc.oneof(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.double({ noNaN: true, noDefaultInfinity: true })),
        {
          maxLength: 8,
        },
      )
      .map((a) => '[' + a.map((x) => (typeof x === 'bigint' ? String(x) : JSON.stringify(x))).join(',') + ']'),
    fc.string({ unit: 'binary', maxLength: 40 }).map((s) => JSON.stringify([s, { [s]: s }])),
  )
  fc.assert(
    fc.property(text, (t) => {
      assert.deepStrictEqual(readValue(r, t), JSON.parse(t))
    }),
    { numRuns: 3000 },
  )
  for (const t of [
    '-0',
    '[-0,0,-0.0,1e2,-123456789,1234567890,-1234567890]',
    '{"__proto__":{"x":1}}',
    '"\\u00e9\\ud83d\\ude00"',
  ])
    assert.deepStrictEqual(readValue(r, t), JSON.parse(t), t)
})

test('a string met again has the id it got the first time; escaped or non-ASCII strings are not interned', () => {
  const r = new TapeReader()
  const t1 = [...r.read(bytes('["abc","Vote111111111111111111111111111111111111111","abc"]'))]
  assert.deepStrictEqual([t1[2], t1[4], t1[6]], [STR, STR, STR])
  assert.equal(t1[3], t1[7])
  assert.notEqual(t1[3], t1[5])
  const t2 = [...r.read(bytes('{"x":"Vote111111111111111111111111111111111111111","y":"a\\"b","z":"é"}'))]
  assert.equal(t2[5], t1[5], 'the same string in a later text, the same id')
  assert.equal(r.idOf('Vote111111111111111111111111111111111111111'), t1[5])
  assert.equal(r.string(t1[3]), 'abc')
  assert.equal(t2[8], ESC)
  assert.equal(t2[13], ESC)
  // many strings: the tables grow and every id still finds its bytes
  const words = Array.from({ length: 200_000 }, (_, i) => `w${i.toString(36)}-${'x'.repeat(i % 23)}`)
  const tape = [...r.read(bytes(JSON.stringify(words)))]
  const again = [...r.read(bytes(JSON.stringify(words.slice().reverse())))]
  for (let i = 0; i < words.length; i++) {
    assert.equal(r.string(tape[2 + 2 * i + 1]), words[i])
    assert.equal(again[2 + 2 * (words.length - 1 - i) + 1], tape[2 + 2 * i + 1])
  }
  assert.equal(r.count, 2 + 3 + words.length)
})

test('it refuses what JSON.parse refuses', () => {
  const r = new TapeReader()
  const bad = [
    ...INVALID_JSON,
    '',
    ' ',
    '1e',
    '.5',
    '+1',
    'tru',
    'falsy',
    '{"a":1}}',
    '[',
    '{"a"}',
    '{1:2}',
    '"\\x"',
    '"\\u12G4"',
    '"\\u12"',
    "'a'",
    '\ufeff1',
    '[1,,2]',
    'NaN',
    '-Infinity',
  ]
  for (const t of bad) {
    assert.throws(() => JSON.parse(t), SyntaxError, t)
    assert.throws(() => r.read(bytes(t)), SyntaxError, t)
  }
  // every cut of a valid text, and every byte of it replaced by a structural character: refused
  // exactly when JSON.parse refuses
  const valid = '{"a":[1,-2.5e3,"x\\"y",true,false,null,{"b":{}}],"c":"ok"}'
  const cases: string[] = []
  for (let i = 0; i < valid.length; i++) {
    cases.push(valid.slice(0, i))
    for (const c of [',', ':', '"', '}', ']', '0', ' ']) cases.push(valid.slice(0, i) + c + valid.slice(i + 1))
  }
  for (const t of cases) {
    let expected: unknown
    try {
      expected = JSON.parse(t)
    } catch {
      assert.throws(() => r.read(bytes(t)), SyntaxError, t)
      continue
    }
    assert.deepStrictEqual(readValue(r, t), expected, t)
  }
  // nesting: 256 levels read, deeper refused (JSON.parse reads both; getBlock results nest ~10)
  const nested = (k: number) => '['.repeat(k) + '1' + ']'.repeat(k)
  assert.deepStrictEqual(readValue(r, nested(256)), JSON.parse(nested(256)))
  assert.throws(() => r.read(bytes(nested(257))), SyntaxError)
  // the reader is still sound after refusals
  assert.deepStrictEqual(readValue(r, valid), JSON.parse(valid))
})

test('every transaction of the mainnet block and of generated blocks reads to its JSON.parse value', () => {
  const texts = [
    ...gunzipSync(readFileSync(join(import.meta.dirname, '../data/mainnet/blocks/254170887.jsonl.gz')))
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== ''),
  ]
  const gen = new BlockGenerator(loadTemplates(), { blocks: 2, seed: 11, txsPerBlock: 300 })
  for (let i = 0; i < 2; i++) texts.push(gen.nextBuffer().toString('utf8').trimEnd())
  const r = new TapeReader()
  let n = 0
  for (const text of texts) {
    const sp = splitTransactions(text, ['block'], false)
    assert.ok(sp, 'the block splits')
    for (let i = 0; i < sp.spans.length / 2; i++) {
      const t = text.slice(sp.spans[2 * i], sp.spans[2 * i + 1])
      assert.deepStrictEqual(readValue(r, t), JSON.parse(t))
      n++
    }
    // and the whole line at once
    assert.deepStrictEqual(readValue(r, text), JSON.parse(text))
  }
  assert.ok(n > 1000, `${n} transactions`)
})
