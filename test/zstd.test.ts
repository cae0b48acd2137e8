import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { zstdBuild, zstdBuilds, zstdCompressAsync, zstdCompressSync, zstdDecompressSync } from '../src/util/zstd.mjs'

/** text that compresses (repeats) and noise that does not, mixed */
function sample(n: number): Buffer {
  const parts: Buffer[] = []
  let len = 0
  for (let i = 0; len < n; i++) {
    const p =
      i % 3 === 2
        ? randomBytes(200)
        : Buffer.from(`{"slot":${i},"program":"Vote111111111111111111111111111111111111111"}`)
    parts.push(p)
    len += p.length
  }
  return Buffer.concat(parts).subarray(0, n)
}

const both = await zstdBuilds()
const builds = Object.entries(both).filter(([, b]) => b !== null) as [string, (typeof both)['wasm']][]

test('the native build loads on the platforms it is shipped for', () => {
  // the addon's packages cover these; elsewhere the WebAssembly build is the one used
  const shipped = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64']
  if (shipped.includes(`${process.platform}-${process.arch}`) && process.env.SOLPORTAL_ZSTD !== 'wasm') {
    assert.equal(zstdBuild, 'native')
    assert.notEqual(both.native, null)
  }
})

test('each build reads the frames of the other, at the levels the store uses', () => {
  for (const n of [0, 1, 1000, 70_000, 600_000]) {
    const data = sample(n)
    for (const level of [2, 3, 9]) {
      for (const [wname, w] of builds) {
        const frame = w.compress(data, level)
        for (const [rname, r] of builds) {
          const back = Buffer.from(r.decompress(frame))
          assert.ok(back.equals(data), `${n} bytes at level ${level}: ${wname} written, ${rname} read`)
        }
      }
    }
  }
})

test('the process build: views, the asynchronous call, and frames that are not zstd', async () => {
  const data = sample(300_000)
  // a view into a larger buffer, not at its start
  const big = Buffer.concat([Buffer.from('xxxxxxx'), data, Buffer.from('yyy')])
  const view = new Uint8Array(big.buffer, big.byteOffset + 7, data.length)
  const frame = zstdCompressSync(view, 2)
  assert.ok(frame.byteLength < data.length)
  assert.ok(Buffer.from(zstdDecompressSync(frame)).equals(data))
  assert.ok(Buffer.from(zstdDecompressSync(await zstdCompressAsync(view, 9))).equals(data))
  // a frame read from inside a larger buffer
  const framed = Buffer.concat([Buffer.from('head'), frame])
  assert.ok(Buffer.from(zstdDecompressSync(framed.subarray(4))).equals(data))
  assert.throws(() => zstdDecompressSync(Buffer.from('not a zstd frame at all')))
  assert.throws(() => zstdDecompressSync(Buffer.from(frame).subarray(0, frame.byteLength - 5)))
  const flipped = Buffer.from(frame)
  flipped[0] ^= 0xff
  assert.throws(() => zstdDecompressSync(flipped))
})

test('SOLPORTAL_ZSTD=wasm takes the WebAssembly build', () => {
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', "import('./src/util/zstd.mjs').then((m) => console.log(m.zstdBuild))"],
    { env: { ...process.env, SOLPORTAL_ZSTD: 'wasm' }, encoding: 'utf8' },
  )
  assert.equal(out.trim(), 'wasm')
})
