// The ring `solportal import` hands lines to its workers in (src/ingest/import/line-ring.ts): lines
// are placed after the newest one or at the start, released oldest first, never overlap one in
// use, and keep their bytes until released.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { LineRing } from '../src/ingest/import/line-ring.ts'
import { mulberry32 } from '../src/util/prng.ts'

test('the line ring: FIFO spans, wrap to the start, no overlap, bytes kept until released', () => {
  const ring = new LineRing(100)
  assert.equal(ring.room(101), -1, 'longer than the ring: never')
  assert.equal(ring.room(100), 0)
  const a = ring.place([Buffer.from('a'.repeat(40))], 40, ring.room(40))
  const b = ring.place([Buffer.from('b'.repeat(30)), Buffer.from('c'.repeat(20))], 50, ring.room(50))
  assert.equal(b.byteOffset, 40)
  assert.equal(ring.room(11), -1, '10 bytes left at the end, none before the oldest')
  assert.equal(ring.room(10), 90)
  ring.release() // a
  assert.equal(ring.room(11), 0, 'wraps to the start, before the oldest (b at 40)')
  const c = ring.place([Buffer.from('d'.repeat(35))], 35, 0)
  assert.equal(ring.room(6), -1, 'wrapped: 5 bytes between the newest (ends at 35) and the oldest (40)')
  assert.equal(ring.room(5), 35)
  assert.equal(b.toString(), 'b'.repeat(30) + 'c'.repeat(20), 'b kept')
  ring.release() // b
  assert.equal(ring.room(65), 35, 'after the newest, to the end')
  assert.equal(ring.count, 1)
  assert.equal(c.toString(), 'd'.repeat(35))
  ring.release()
  assert.equal(ring.count, 0)
  assert.equal(ring.room(100), 0, 'empty: from the start')
  assert.throws(() => ring.release(), /no line in use/)
  assert.equal(a.buffer, ring.buffer)
  assert.ok(ring.holds(a) && !ring.holds(Buffer.alloc(1)))
})

test('the line ring under random lines: every line in use keeps its bytes', () => {
  const rnd = mulberry32(7)
  const ring = new LineRing(1000)
  const live: { view: Buffer; fill: number }[] = []
  for (let i = 0; i < 20_000; i++) {
    const n = 1 + Math.floor(rnd() * 400)
    let at = ring.room(n)
    while (at < 0) {
      assert.ok(live.length > 0, 'an empty ring has room for any line up to its size')
      ring.release()
      live.shift()
      at = ring.room(n)
    }
    const fill = i % 251
    live.push({ view: ring.place([Buffer.alloc(n, fill)], n, at), fill })
    for (const l of live)
      assert.ok(
        l.view.every((x) => x === l.fill),
        `line ${i}: a line in use was overwritten`,
      )
    if (rnd() < 0.3 && live.length > 0) {
      ring.release()
      live.shift()
    }
  }
})
