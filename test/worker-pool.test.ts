// The worker pool (src/util/worker-pool.ts) with real worker threads (test/support/pool-worker.mjs):
// requests and their answers, the least busy pick, transfer lists, and what happens when a worker
// throws, exits or hangs: its requests rejected naming it, its slot respawned after the backoff,
// the pool failed once restarts are used up, a hung worker routed around and ended by close.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { WorkerDiedError, WorkerPool, type RestartPolicy } from '../src/util/worker-pool.ts'

interface Msg {
  id?: number
  op: 'echo' | 'note' | 'throw' | 'exit' | 'hang'
  value?: unknown
  bytes?: Uint8Array
}
interface Reply {
  id?: number
  value?: unknown
  thread?: number
  bytes?: number
  data?: unknown
  note?: unknown
}

const URL_ = new URL('./support/pool-worker.mjs', import.meta.url)

function newPool(size: number, restarts: Partial<RestartPolicy> = {}, more: { onFailure?: (e: Error) => void } = {}) {
  const notes: unknown[] = []
  const deaths: string[] = []
  const pool = new WorkerPool<{ slot: number }, Msg, Reply>({
    name: 'test worker',
    size,
    url: URL_,
    setup: (slot) => ({ workerData: { slot }, state: { slot } }),
    restarts: { backoffMs: 20, maxBackoffMs: 100, ...restarts },
    onMessage: (_w, m) => notes.push(m.note),
    onDeath: (w, e) => deaths.push(`${w.name}: ${e.message}`),
    onFailure: more.onFailure,
  })
  return { pool, notes, deaths }
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

test('requests get their own answers from the least busy worker; transfer lists move the bytes; other messages go to onMessage', async () => {
  const { pool, notes } = newPool(2)
  try {
    // a slot not started is started before a running worker is given a second request
    const a = pool.request({ op: 'echo', value: 1 })
    const b = pool.request({ op: 'echo', value: 2 })
    assert.deepEqual(pool.stats, { spawned: 2, died: 0, pending: 2, busy: 2, alive: 2 })
    const [ra, rb] = await Promise.all([a, b])
    assert.equal(ra.value, 1)
    assert.equal(rb.value, 2)
    assert.notEqual(ra.thread, rb.thread, 'one request per worker')
    assert.deepEqual([ra.data, rb.data], [{ slot: 0 }, { slot: 1 }], 'each worker has its own workerData')
    const bytes = new Uint8Array(1000)
    const r = await pool.request({ op: 'echo', value: 3, bytes }, { transfer: [bytes.buffer] })
    assert.equal(r.bytes, 1000)
    assert.equal(bytes.byteLength, 0, 'the buffer was moved, not copied')
    assert.equal((await pool.request({ op: 'note', value: 'x' })).value, 'x')
    assert.deepEqual(notes, ['x'])
    // `to` picks the worker; the others stay idle
    const [w1, w2] = pool.workers
    const answers = await Promise.all([1, 2, 3].map((value) => pool.request({ op: 'echo', value }, { to: w2 })))
    assert.ok(answers.every((x) => x.thread === w2.thread.threadId))
    assert.equal(pool.pick(), w1)
    assert.equal(pool.pick(w1), w2, 'other than `not`')
    assert.deepEqual(pool.stats, { spawned: 2, died: 0, pending: 0, busy: 0, alive: 2 })
  } finally {
    await pool.close()
  }
})

test('a worker that throws: its requests are rejected naming it, the others answer, and its slot is spawned again', async () => {
  const { pool, deaths } = newPool(2)
  try {
    const [w1, w2] = [pool.pick()!, pool.pick()!]
    const held = pool.request({ op: 'hang' }, { to: w2 })
    void held.catch(() => {})
    const dying = pool.request({ op: 'throw' }, { to: w1 })
    await assert.rejects(
      dying,
      (e: Error) => e instanceof WorkerDiedError && e.message === 'test worker 1 failed: boom',
    )
    assert.deepEqual(deaths, ['test worker 1: test worker 1 failed: boom'])
    assert.equal(w1.alive, false)
    assert.equal(pool.stats.died, 1)
    // meanwhile the live worker (busy) takes the requests; then the slot is back
    await until(() => pool.workers.length === 2, 'the respawn')
    assert.equal(pool.stats.spawned, 3)
    const r = await pool.request({ op: 'echo', value: 'again' })
    assert.equal(r.value, 'again')
    assert.notEqual(r.thread, w2.thread.threadId, 'not the hung worker')
  } finally {
    await pool.close()
  }
})

test('a worker that exits: its requests fail with its exit code; requests made while none runs wait for the respawn', async () => {
  const { pool } = newPool(1, { backoffMs: 200 })
  try {
    await assert.rejects(pool.request({ op: 'exit' }), /^WorkerDiedError: test worker 1 exited \(code 3\)$/)
    assert.equal(pool.workers.length, 0, 'not spawned again before the backoff')
    assert.equal(pool.pick(), null)
    const t0 = Date.now()
    const waiting = pool.request({ op: 'echo', value: 'later' })
    assert.equal(pool.stats.pending, 1)
    assert.equal((await waiting).value, 'later')
    assert.ok(Date.now() - t0 >= 150, `answered after ${Date.now() - t0} ms: after the backoff`)
    assert.deepEqual(pool.stats, { spawned: 2, died: 1, pending: 0, busy: 0, alive: 1 })
  } finally {
    await pool.close()
  }
})

test('restarts are bounded: one death too many fails the pool, once, and every request after it', async () => {
  const failures: Error[] = []
  const { pool } = newPool(1, { maxRestarts: 2, backoffMs: 5 }, { onFailure: (e) => failures.push(e) })
  try {
    for (let i = 0; i < 2; i++) {
      await assert.rejects(pool.request({ op: 'throw' }), /test worker 1 failed: boom/)
      await until(() => pool.workers.length === 1, 'the respawn')
    }
    assert.equal(pool.usable, true)
    await assert.rejects(pool.request({ op: 'exit' }), /test worker 1 exited \(code 3\)/)
    assert.equal(pool.usable, false)
    assert.equal(failures.length, 1)
    assert.match(
      failures[0].message,
      /^test workers keep dying \(3 within 600 s; last: test worker 1 exited \(code 3\)\)$/,
    )
    assert.equal(pool.failure, failures[0])
    await assert.rejects(pool.request({ op: 'echo' }), (e) => e === failures[0])
    await sleep(50)
    assert.equal(pool.workers.length, 0, 'no respawn after the failure')
    assert.equal(pool.stats.spawned, 3)
  } finally {
    await pool.close()
  }
})

test('maxRestarts 0: the first death fails the pool with that death, and ends the other workers', async () => {
  const failures: Error[] = []
  const { pool } = newPool(2, { maxRestarts: 0 }, { onFailure: (e) => failures.push(e) })
  try {
    const [w1, w2] = [pool.pick()!, pool.pick()!]
    const other = pool.request({ op: 'hang' }, { to: w2 })
    await assert.rejects(pool.request({ op: 'throw' }, { to: w1 }), /test worker 1 failed: boom/)
    assert.equal(failures.length, 1)
    assert.equal(failures[0].message, 'test worker 1 failed: boom')
    await assert.rejects(other, (e) => e === failures[0], 'the other worker’s requests fail with it')
    assert.equal(w2.alive, false)
  } finally {
    await pool.close()
  }
})

test('a worker that hangs is routed around, and close ends it, rejecting what it held', async () => {
  const { pool } = newPool(2)
  const [w1] = [pool.pick()!, pool.pick()!]
  const hung = pool.request({ op: 'hang' }, { to: w1 })
  const hungFailed = assert.rejects(hung, /^WorkerDiedError: test workers are closed$/)
  for (let i = 0; i < 3; i++) {
    const r = await pool.request({ op: 'echo', value: i })
    assert.notEqual(r.thread, w1.thread.threadId)
  }
  const t0 = Date.now()
  await pool.close()
  assert.ok(Date.now() - t0 < 5000)
  await hungFailed
  await assert.rejects(pool.request({ op: 'echo' }), /test workers are closed/)
  assert.equal(pool.stats.died, 0, 'ended by close, not died')
  assert.equal(pool.workers.length, 0)
})
