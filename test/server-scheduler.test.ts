/**
 * RenderScheduler: smallest response first, a long block giving its turn back to a smaller
 * response and resuming ahead of equals, and turns that wait for the event loop's I/O phase once
 * a slice of turns ran without it.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ByteBudget, RenderScheduler } from '../src/server/budget.ts'

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

/** acquire and record the grant order; resolves to the release function */
function taker(s: RenderScheduler, order: string[], name: string, served: number, resume = false) {
  const signal = new AbortController().signal
  return s.acquire(served, 10, signal, resume).then((release) => {
    order.push(name)
    return release!
  })
}

test('a stream in a long block yields to a smaller waiting response and resumes ahead of its equals', async () => {
  const budget = new ByteBudget(1000)
  const s = new RenderScheduler(1, budget, 100, 1_000_000)
  const order: string[] = []
  const a = await taker(s, order, 'A', 500)
  assert.equal(s.shouldYield(500), false, 'nobody waits')
  const c = taker(s, order, 'C', 500)
  assert.equal(s.shouldYield(500), false, 'an equal response does not take the turn of a block under way')
  const b = taker(s, order, 'B', 0)
  assert.equal(s.shouldYield(500), true)
  assert.equal(s.shouldYield(0), false)
  // A gives its turn back and waits as a resumer
  a()
  const a2 = taker(s, order, 'A2', 500, true)
  ;(await b)()
  ;(await a2)()
  ;(await c)()
  assert.deepEqual(order, ['A', 'B', 'A2', 'C'])
})

test('a resumed block is granted while the budget is full; a big response waits for room', async () => {
  const budget = new ByteBudget(1000)
  const s = new RenderScheduler(1, budget, 100, 1_000_000)
  const order: string[] = []
  const first = await taker(s, order, 'first', 0)
  budget.take(1000)
  assert.equal(budget.full, true)
  const big = taker(s, order, 'big', 5000)
  assert.equal(s.shouldYield(9000), false, 'a big response cannot render while the budget is full')
  const resumed = taker(s, order, 'resumed', 5000, true)
  first()
  ;(await resumed)()
  await tick()
  assert.deepEqual(order, ['first', 'resumed'])
  budget.release(1000)
  ;(await big)()
  assert.deepEqual(order, ['first', 'resumed', 'big'])
})

test('after a slice of turns without an event loop turn, the next turn waits for its I/O phase', async () => {
  const budget = new ByteBudget(1 << 20)
  const signal = new AbortController().signal
  // slice 0 ms: every turn handed on inside a slice waits for the loop
  const s = new RenderScheduler(1, budget, 100, 0)
  const release = (await s.acquire(0, 1, signal))!
  let granted = false
  void s.acquire(0, 1, signal).then(() => (granted = true))
  release()
  for (let i = 0; i < 20; i++) await Promise.resolve()
  assert.equal(granted, false, 'not handed on through promise callbacks alone')
  for (let i = 0; i < 3 && !granted; i++) await tick()
  assert.equal(granted, true)
  // a slice long enough: handed on at once
  const quick = new RenderScheduler(1, budget, 100, 60_000)
  const r2 = (await quick.acquire(0, 1, signal))!
  let g2 = false
  void quick.acquire(0, 1, signal).then(() => (g2 = true))
  r2()
  for (let i = 0; i < 5; i++) await Promise.resolve()
  assert.equal(g2, true)
})
