// sortOrder (src/store/cold/sort-strings.ts), the order of the writer's value-ordered
// dictionaries, is the order of Array.prototype.sort on the same strings: prefixes before longer
// strings, long shared prefixes, characters 0 and above 127 (the comparison sort then), and
// enough values that fewer characters fit in a key.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sortOrder } from '../src/store/cold/sort-strings.ts'
import { BASE58_ALPHABET } from '../src/util/base58.ts'

function check(values: string[], what: string): void {
  const order = sortOrder(values)
  assert.equal(order.length, values.length)
  const got = Array.from(order, (i) => values[i])
  assert.deepEqual(got, values.slice().sort(), what)
}

test('sortOrder orders distinct strings as the default sort does', () => {
  let s = 7
  const rnd = (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    return Math.floor((s / 2 ** 32) * n)
  }
  const pieces = ['a', 'b', 'ab', '1111111', 'z', '~', '\u0000', 'é', '\uffff', '😀']
  check([], 'empty')
  check(['only'], 'one')
  check(['', 'a', 'aa', 'ab', 'b'].reverse(), 'prefixes')
  for (let t = 0; t < 500; t++) {
    const ascii = t % 3 !== 0
    const set = new Set<string>()
    const n = rnd(60)
    for (let i = 0; i < n; i++) {
      let x = ascii && t % 2 ? '2111111111' : ''
      const len = rnd(25)
      for (let j = 0; j < len; j++) x += ascii ? String.fromCharCode(97 + rnd(3)) : pieces[rnd(pieces.length)]
      set.add(x)
    }
    check([...set], `case ${t}`)
  }
  // base58-like values sharing long prefixes, more of them than 2^17 (4 characters per key)
  const alphabet = BASE58_ALPHABET
  const many = new Set<string>()
  while (many.size < 140_000) {
    let x = alphabet[rnd(8)] + '1111111'
    for (let j = 0; j < 12; j++) x += alphabet[rnd(58)]
    many.add(x)
  }
  check([...many], 'many')
})
