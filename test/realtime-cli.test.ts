/** `solportal fake-node` as a real process: listens, produces blocks, answers JSON-RPC, stops on SIGTERM. */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { RpcClient } from '../src/ingest/rpc/client.ts'

test('fake-node CLI serves a growing chain', async () => {
  const root = join(import.meta.dirname, '..')
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'fake-node',
      '--port',
      '0',
      '--interval-ms',
      '20',
      '--tx-per-block',
      '2',
      '--finality-lag',
      '5',
      '--quiet',
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  try {
    let err = ''
    const url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no url: ${err}`)), 90_000)
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString()
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)
        if (m) {
          clearTimeout(t)
          resolve(m[1])
        }
      })
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)))
    })
    const c = new RpcClient({ url })
    const s1 = await c.getSlot('confirmed')
    // the chain grows (a block every 20 ms): wait for it to grow past the finality lag (until then
    // nothing is finalized), with a generous bound
    let s2 = s1
    for (const t0 = Date.now(); s2 <= s1 + 10 && Date.now() - t0 < 60_000;) {
      await new Promise((r) => setTimeout(r, 50))
      s2 = await c.getSlot('confirmed')
    }
    assert.ok(s2 > s1, `${s1} -> ${s2}`)
    const fin = await c.getSlot('finalized')
    const s3 = await c.getSlot('confirmed')
    assert.ok(fin <= s3 - 5 && fin >= s1 - 5, `finalized ${fin}, confirmed ${s3}`)
    const slots = await c.getBlocks(s1, s2, 'confirmed')
    assert.ok(slots.length >= 1 && slots.includes(s2))
    const b = (await c.getBlock(s2, 'confirmed'))!
    assert.equal(b.transactions!.length, 2)
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
})
