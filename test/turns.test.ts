import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mapAcrossTurns } from '../src/util/turns.ts'

test('mapAcrossTurns: one item per turn of the event loop, results in order', async () => {
  const seen: string[] = []
  // an immediate queued before the call runs after the first item, before the second
  setImmediate(() => seen.push('turn'))
  const out = await mapAcrossTurns([1, 2, 3], (x) => {
    seen.push(`item ${x}`)
    return x * 10
  })
  assert.deepEqual(out, [10, 20, 30])
  assert.deepEqual(seen.slice(0, 3), ['item 1', 'turn', 'item 2'])
  assert.deepEqual(await mapAcrossTurns([], () => 1), [])
})
