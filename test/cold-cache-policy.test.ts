// The cold store's cache (src/store/cold/lru.ts): the byte budget holds, and a new query's data
// takes the place of what is no longer used from its second run on (admission policies that made a
// query run after a wide one wait for dozens of runs were measured and not kept).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ByteLru } from '../src/store/cold/lru.ts'

const KB = 1024

/**
 * One pass over keys 0..n-1 in order, as a query uses the cache: a lookup, and a value built (and
 * set) when it misses. Returns how many keys the cache held when their turn came.
 */
function pass(c: ByteLru<string, object>, n: number, bytes: number, prefix = 'k'): number {
  let held = 0
  for (let i = 0; i < n; i++) {
    const k = `${prefix}${i}`
    if (c.peek(k) !== undefined) held++
    if (c.get(k) === undefined || c.peek(k) === undefined) c.set(k, { i }, bytes)
    assert.ok(c.bytes <= c.maxBytes, `over budget: ${c.bytes} > ${c.maxBytes}`)
  }
  return held
}

test('the budget holds: bytes never exceed it, except a lone newest entry larger than all of it', () => {
  const c = new ByteLru<string, object>(100 * KB)
  for (let i = 0; i < 1000; i++) {
    c.set(`a${i}`, { i }, ((i * 7919) % 13) * KB + 1)
    assert.ok(c.bytes <= c.maxBytes)
    if (i % 3 === 0) c.get(`a${i >> 1}`)
  }
  // an entry grows after it was set (columns decode on demand)
  c.set('g', {}, KB)
  c.grow('g', 50 * KB)
  assert.ok(c.bytes <= c.maxBytes)
  // the newest entry alone over budget stays, alone
  const big = {}
  c.set('big', big, 150 * KB)
  assert.equal(c.peek('big'), big)
  assert.equal(c.size, 1)
  assert.equal(c.bytes, 150 * KB)
})

test('a new query repeated takes the place of entries no longer used, from its second run on', () => {
  // a wide query run three times fills the cache, then a selective one whose data fits is repeated
  const c = new ByteLru<string, object>(100 * KB)
  for (let r = 0; r < 3; r++) for (let i = 0; i < 100; i++) for (let k = 0; k < 20; k++) pass(c, 1, KB, `wide${i}-`)
  assert.equal(pass(c, 60, KB, 'sel'), 0)
  pass(c, 60, KB, 'sel')
  assert.equal(pass(c, 60, KB, 'sel'), 60, 'all of it held from the third run')
})

test('recent entries are kept while the data fits', () => {
  const c = new ByteLru<string, object>(100 * KB)
  pass(c, 90, KB)
  assert.equal(pass(c, 90, KB), 90)
  assert.equal(c.stats.evictions, 0)
})

test('a deleted key is gone, as are keys dropped by a predicate (a chunk forgotten) and after clear()', () => {
  const c = new ByteLru<string, object>(10 * KB)
  c.set('x', {}, KB)
  c.set('y', {}, KB)
  c.delete('x')
  assert.equal(c.get('x'), undefined)
  assert.equal(c.bytes, KB)
  for (let r = 0; r < 3; r++) pass(c, 5, KB, 'p')
  c.deleteWhere((k) => k.startsWith('p'))
  assert.equal(c.size, 1)
  assert.equal(c.bytes, KB)
  c.clear()
  assert.equal(c.get('y'), undefined)
  assert.equal(c.bytes, 0)
  assert.equal(c.size, 0)
})

test('growValue of a value that is not the entry is ignored', () => {
  const c = new ByteLru<string, object>(10 * KB)
  const a = {}
  c.set('k', a, KB)
  c.growValue('k', {}, 5 * KB)
  assert.equal(c.bytes, KB)
  c.growValue('k', a, 2 * KB)
  assert.equal(c.bytes, 3 * KB)
})
