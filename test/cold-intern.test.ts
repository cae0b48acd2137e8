// The chunk-wide account interner (src/store/cold/intern.ts): columns encoded from ids of one
// table shared by several columns give exactly the parts encodeColumn gives each column alone
// (format 4), for dictionaries of a few values (their ranks sorted) and of most of the table's
// values (one pass in value order), with nulls, runs, a column stored plain, and list columns
// with empty lists; a chunk written by encodeChunk decodes to the blocks written.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { encodeColumn } from '../src/store/cold/encode/column.ts'
import { AccountInterner } from '../src/store/cold/intern.ts'
import { BASE58_ALPHABET } from '../src/util/base58.ts'

/** deterministic base58-like strings (xorshift) */
function strings(n: number, seed: number): string[] {
  const abc = BASE58_ALPHABET
  let x = seed
  const next = () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return x >>> 0
  }
  return Array.from({ length: n }, () => {
    let s = ''
    const len = 32 + (next() % 13)
    for (let i = 0; i < len; i++) s += abc[next() % abc.length]
    return s
  })
}

test('interned columns encode as encodeColumn encodes each alone', () => {
  const pool = strings(3000, 7)
  // a prefix of another value, so value order is not length order
  pool.push(pool[0].slice(0, 20))
  let r = 12345
  const pick = (k: number) => {
    r = (r * 1103515245 + 12345) & 0x7fffffff
    return pool[r % k]
  }
  // rows of a few values, with runs and nulls
  const few: (string | null)[] = []
  for (let i = 0; i < 2000; i++) few.push(i % 97 === 0 ? null : i % 5 === 0 && i > 0 ? few[i - 1] : pick(40))
  // most of the pool, repeating
  const many = Array.from({ length: 6000 }, () => pick(pool.length))
  // all distinct: stored plain (the dictionary would not be smaller)
  const plain = pool.slice(0, 1500)
  const lists = Array.from({ length: 1500 }, (_, i) =>
    Array.from({ length: i % 7 }, () => pick(i % 2 ? 60 : pool.length)),
  )
  const columns = { few, many, plain } as Record<string, unknown[]>

  const interner = new AccountInterner()
  const ids = new Map(Object.entries(columns).map(([k, v]) => [k, interner.internValues(v)!]))
  const listIds = interner.internLists(lists)!
  interner.seal()
  for (const [name, values] of Object.entries(columns)) {
    const want = encodeColumn(name, 'safeAscii', values, true, true, true)
    const got = interner.encode(name, false, ids.get(name)!)
    assert.equal(got.e, want.e, name)
    assert.deepEqual(got, want, name)
  }
  assert.equal(interner.encode('plain', false, ids.get('plain')!).e, 'plain')
  const want = encodeColumn('lists', 'safeAsciiList', lists, true, true, true)
  assert.deepEqual(interner.encode('lists', true, listIds), want)
  // a column encoded twice gives the same (codes are released after each column)
  assert.deepEqual(interner.encode('lists', true, listIds), want)
})

test('a value that is not a string is left to encodeColumn, which names it', () => {
  const interner = new AccountInterner()
  assert.equal(interner.internValues(['a', 5]), null)
  assert.equal(interner.internLists([['a'], 'b']), null)
  assert.equal(interner.internLists([['a', 3]]), null)
  assert.throws(() => encodeColumn('account', 'safeAscii', ['a', 5], true, true, true), /column account row 1/)
})

test('interning through the cache: strings sharing a cache slot, and equal strings made apart, get the ids of a plain table', () => {
  // strings alike in the four characters that choose a cache slot, short ones (all in one slot),
  // and each string again as a different object (sliced out of a longer one)
  const base = strings(400, 11)
  const alike = base.map((s, i) => `ab${s.slice(2, -2)}${i % 3}z`)
  const short = ['', 'a', 'ab', 'abc', 'b', 'a']
  const pool = [...base, ...alike, ...short]
  const copies = pool.map((s) => `#${s}#`.slice(1, -1))
  const rows: string[] = []
  let x = 99
  for (let i = 0; i < 20_000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    const k = x % pool.length
    rows.push(i % 2 ? pool[k] : copies[k])
  }
  const interner = new AccountInterner()
  const got = interner.internValues(rows)!
  const want = new Map<string, number>()
  for (const s of rows) if (!want.has(s)) want.set(s, want.size)
  assert.deepEqual(
    Array.from(got.ids),
    rows.map((s) => want.get(s)),
  )
  assert.deepEqual(interner.strings(got), rows)
})
