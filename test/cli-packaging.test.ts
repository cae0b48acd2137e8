/**
 * The command as a package user meets it: `solportal --version` / `-V`, a `normalize` whose stdout
 * holds nothing but JSON lines (so `node bin/solportal.js normalize FILE > out` is clean), and a
 * bundled-sample start that says what it loaded in one line before the listening line.
 */
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'

const ROOT = join(import.meta.dirname, '..')
const BIN = join(ROOT, 'bin', 'solportal.js')
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const run = promisify(execFile)

test('--version and -V print the package version alone on stdout', async () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+/)
  for (const flag of ['--version', '-V']) {
    const { stdout, stderr } = await run(process.execPath, [BIN, flag], { cwd: ROOT })
    assert.equal(stdout, `${VERSION}\n`, flag)
    assert.equal(stderr, '', flag)
  }
})

test('normalize writes only JSON lines to stdout', async () => {
  const file = join(ROOT, 'data', 'mainnet', 'chainstorage', 'parser_solana_block.json')
  const { stdout } = await run(process.execPath, [BIN, 'normalize', file], { cwd: ROOT, maxBuffer: 64 << 20 })
  const lines = stdout.split('\n')
  assert.equal(lines.pop(), '', 'ends with a newline')
  assert.equal(lines.length, 1)
  const block = JSON.parse(lines[0]) as { header: { number: number } }
  assert.equal(block.header.number, 100000000)
})

test('the bundled sample starts with one informative line, then the listening line', async () => {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (c: Buffer) => {
        out += c.toString()
        if (/listening on http:\/\/\S+/.test(out)) resolve()
      }
      child.stdout.on('data', onData)
      child.stderr.on('data', onData)
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
    })
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
  // JSON log lines: the port opens first, then one line says what was loaded, then the listening line
  const lines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string })
  const listening = lines.findIndex((l) => l.msg.includes('listening on'))
  assert.ok(listening >= 1, out)
  assert.match(lines[0].msg, /^accepting connections on http:/)
  assert.equal(lines[listening - 1].level, 'info')
  assert.match(lines[listening - 1].msg, /^loaded the bundled sample: \d+ blocks in \d+ ms/)
  assert.ok(lines[listening - 1].msg.length < 200, `short: ${lines[listening - 1].msg}`)
  assert.equal(listening, 2, out)
  assert.ok(!lines.some((l) => l.level === 'warn'), out)
})
