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
function taker(s: RenderScheduler, order: string[], name: string, served: number, resume = false, span = 10) {
  const signal = new AbortController().signal
  return s.acquire(served, span, signal, resume).then((release) => {
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

test('a short response renders from the reserve while slow clients fill the budget; the reserve is bounded', async () => {
  // budget 1000 bytes, reserve 500; small = under 100 bytes sent; short = fewer than 5 blocks asked for
  const budget = new ByteBudget(1000, 500)
  const s = new RenderScheduler(2, budget, 100, 1_000_000, 5)
  assert.equal(s.reserveBytesOf(4), 100)
  assert.equal(s.reserveBytesOf(5), 0)
  assert.equal(s.reserveBytesOf(Number.MAX_SAFE_INTEGER), 0)
  budget.take(2000) // overfull: big blocks held by sockets that do not drain
  assert.equal(budget.overfull, true)
  const order: string[] = []
  const longSmall = taker(s, order, 'long', 0, false, Number.MAX_SAFE_INTEGER)
  const shortBig = taker(s, order, 'short but big', 100, false, 0)
  const short = taker(s, order, 'short', 0, false, 0)
  ;(await short)()
  await tick()
  assert.deepEqual(order, ['short'], 'only the short response still under 100 bytes renders')
  // the reserve used up (short responses whose clients do not read): short ones wait too
  budget.take(500, true)
  assert.equal(budget.reserveFull, true)
  const short2 = taker(s, order, 'short2', 0, false, 1)
  await tick()
  assert.deepEqual(order, ['short'])
  budget.release(1, true)
  ;(await short2)()
  assert.deepEqual(order, ['short', 'short2'])
  assert.equal(budget.inFlight, 2499)
  // room in the main account again: the others render, smallest first
  budget.release(2000)
  ;(await longSmall)()
  ;(await shortBig)()
  assert.deepEqual(order, ['short', 'short2', 'long', 'short but big'])
})

test('tryAcquire: a free turn at once, none while another stream waits, the budget is full or the slice is used up', async () => {
  const budget = new ByteBudget(1000)
  const signal = new AbortController().signal
  const s = new RenderScheduler(1, budget, 100, 60_000)
  const r1 = s.tryAcquire(500, 10)
  assert.ok(r1, 'nobody renders or waits: the turn at once')
  assert.equal(s.tryAcquire(500, 10), null, 'the one permit is taken')
  // another stream waits for the permit: it goes to that one first
  let waited = false
  const other = s.acquire(500, 10, signal).then((r) => ((waited = true), r!))
  r1()
  assert.equal(s.tryAcquire(500, 10), null, 'a waiting stream comes first')
  ;(await other)()
  assert.equal(waited, true)
  // the budget full: a big response gets no turn, a resumed block does
  budget.take(1000)
  assert.equal(s.tryAcquire(5000, 10), null)
  const r2 = s.tryAcquire(5000, 10, true)
  assert.ok(r2)
  r2()
  budget.release(1000)
  // a slice of 0 ms: used up at once, the turn waits for the loop (acquire)
  const sliced = new RenderScheduler(1, budget, 100, 0)
  const r3 = sliced.tryAcquire(0, 1)
  assert.ok(r3, 'the first turn of a slice')
  r3()
  assert.equal(sliced.tryAcquire(0, 1), null, 'the slice is used up until the event loop turns')
  await tick()
  const r4 = sliced.tryAcquire(0, 1)
  assert.ok(r4, 'a new slice after the loop turned')
  r4()
})
