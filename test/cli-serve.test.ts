/**
 * The set-up contract as a user meets it: `solportal serve` (what `npm start` runs) as a real
 * process, on the sample and with `--demo`, answering on the address from PORT/HOST.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { test } from 'node:test'
import { postJson, request } from './support/http/client.ts'

function startServe(
  args: string[],
  port: number,
): { child: ChildProcess; ready: Promise<string>; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', ...args], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const ready = new Promise<string>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString()
      const m = /listening on (http:\/\/\S+):\s/.exec(out)
      if (m) resolve(m[1])
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
  })
  return { child, ready, output: () => out }
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode != null) return child.exitCode
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
  child.kill('SIGTERM')
  return exited
}

const freePort = () => 20000 + Math.floor(Math.random() * 20000)

test('serve with PORT/HOST answers the default datasets and stops cleanly on SIGTERM', async () => {
  const port = freePort()
  const s = startServe(['--quiet'], port)
  try {
    const url = await s.ready
    assert.equal(url, `http://127.0.0.1:${port}`)
    const meta = JSON.parse((await request(`${url}/datasets/solana-mainnet/metadata`)).text)
    assert.deepEqual(meta, {
      dataset: 'solana-mainnet',
      aliases: ['solana-beta'],
      real_time: false,
      start_block: 254170887,
    })
    const complete = JSON.parse((await request(`${url}/datasets/solana-beta/metadata`)).text)
    assert.equal(complete.dataset, 'solana-mainnet')
    const c = JSON.parse((await request(`${url}/datasets/solana-mainnet-complete/metadata`)).text)
    assert.equal(c.start_block, 100000000)
  } finally {
    assert.equal(await stop(s.child), 0)
  }
})

test('serve --demo: the head advances and a tail stream flows', async () => {
  const port = freePort()
  const s = startServe(['--demo', '--quiet'], port)
  try {
    const url = await s.ready
    const base = `${url}/datasets/solana-mainnet`
    assert.equal(JSON.parse((await request(`${base}/metadata`)).text).real_time, true)
    // the in-process node's history is ingested first: wait for a head
    let h1: { number: number } | null = null
    for (let i = 0; i < 900 && !h1; i++) {
      h1 = JSON.parse((await request(`${base}/head`)).text) as { number: number } | null
      if (!h1) await new Promise((r) => setTimeout(r, 100))
    }
    assert.ok(h1, 'the demo chain has a head')
    // the demo chain grows a block every 400 ms: wait for the head to move (generous bound)
    let h2 = h1
    for (const t0 = Date.now(); h2.number <= h1.number && Date.now() - t0 < 60_000;) {
      await new Promise((r) => setTimeout(r, 100))
      h2 = JSON.parse((await request(`${base}/head`)).text) as { number: number }
    }
    assert.ok(h2.number > h1.number, `head advanced: ${h1.number} → ${h2.number}`)
    const r = await postJson(`${base}/stream`, {
      fromBlock: h2.number,
      toBlock: h2.number + 3,
      includeAllBlocks: true,
      fields: { block: { number: true } },
    })
    assert.equal(r.status, 200)
    const got = r.text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { header: { number: number } }).header.number)
    assert.equal(got[0], h2.number)
    assert.ok(got.length >= 2, 'new blocks were pushed')
  } finally {
    assert.equal(await stop(s.child), 0)
  }
})
