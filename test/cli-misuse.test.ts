/**
 * The CLI as a user misuses it, each case a real process: one line on stderr naming the option,
 * a non-zero exit status, no stack trace, and none of the server, stores or ingestion loaded for
 * it (nor for `--version`). Also: a closed stdout (`normalize ... | head -1`) ends
 * quietly, and SIGTERM to `npm start` stops the server it started.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { request } from './support/http/client.ts'

const ROOT = join(import.meta.dirname, '..')
const work = mkdtempSync(join(tmpdir(), 'solportal-misuse-'))
after(() => rmSync(work, { recursive: true, force: true }))

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

function run(args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...nodeArgs, 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', ...env, SOLPORTAL_DEBUG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    // a misuse that is not refused would start serving: never wait for that forever
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** runs `jobs` with at most `n` at a time */
async function pool<T>(jobs: (() => Promise<T>)[], n: number): Promise<T[]> {
  const out: T[] = new Array(jobs.length)
  let next = 0
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++
        out[i] = await jobs[i]()
      }
    }),
  )
  return out
}

test('every misuse: one line naming the option on stderr, non-zero exit', async () => {
  // a port that is taken
  const busy: Server = createServer()
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()))
  const busyPort = String((busy.address() as { port: number }).port)
  const missing = join(work, 'missing')
  const cases: { args: string[]; env?: Record<string, string>; want: RegExp; code?: number }[] = [
    { args: ['serve', '--archive', missing], want: /^solportal: error: --archive \S+missing: no such file/ },
    { args: ['serve', '--dataset-dir', missing], want: /^solportal: error: --dataset-dir \S+missing: no such file/ },
    { args: ['serve', '--rpc', 'http://127.0.0.1:1'], want: /^solportal: error: --rpc needs --data-dir/ },
    {
      args: ['serve', '--port', 'abc'],
      want: /^solportal: error: --port must be an integer in 0\.\.65535, got 'abc'$/,
    },
    { args: ['serve'], env: { PORT: 'abc' }, want: /^solportal: error: --port must be an integer/ },
    {
      args: ['serve', '--port', busyPort, '--quiet'],
      want: new RegExp(`^solportal: error: --port ${busyPort}: address 127\\.0\\.0\\.1:${busyPort} is already in use$`),
    },
    { args: ['gen', '--blocks', 'abc', '--out', join(work, 'a.jsonl')], want: /^solportal: error: --blocks must/ },
    { args: ['gen', '--blocks', '-5', '--out', join(work, 'a.jsonl')], want: /^solportal: error: --blocks must/ },
    {
      args: ['gen', '--blocks', '2', '--out', join(missing, 'x.jsonl')],
      want: /^solportal: error: --out \S+: directory \S+missing does not exist$/,
    },
    {
      args: ['serve', '--rpc', 'http://127.0.0.1:1', '--data-dir', '.', '--rpc-poll-ms', '0'],
      want: /^solportal: error: --rpc-poll-ms must be an integer in 1\.\.60000, got '0'$/,
    },
    { args: ['fake-node', '--skip-rate', 'abc'], want: /^solportal: error: --skip-rate must be a number/ },
    { args: ['fake-node', '--interval-ms', '-1'], want: /^solportal: error: --interval-ms must be an integer/ },
    { args: ['fake-node', '--port', '70000'], want: /^solportal: error: --port must be an integer in 0\.\.65535/ },
    {
      args: ['fake-node', '--port', busyPort, '--quiet'],
      want: new RegExp(`^solportal: error: --port ${busyPort}: address 127\\.0\\.0\\.1:${busyPort} is already in use$`),
    },
    {
      args: ['serve', '--dataset-dir', work, '--archive', 'data', '--demo'],
      want: /^solportal: error: options --archive, --dataset-dir, --demo cannot be used together/,
    },
    {
      args: ['serve', '--rpc', 'http://127.0.0.1:1', '--data-dir', join(work, 'd'), '--commitment', 'finalised'],
      want: /^solportal: error: --commitment must be one of confirmed, finalized, got 'finalised'$/,
    },
    {
      args: ['serve', '--rpc', 'localhost:8899', '--data-dir', join(work, 'd')],
      want: /^solportal: error: --rpc must be an http:\/\/ or https:\/\/ URL, got 'localhost:8899'$/,
    },
    { args: ['serve', '--data-dir', join(work, 'd')], want: /^solportal: error: --data-dir applies only to/ },
    {
      args: ['serve', '--max-body-bytes', '1k'],
      want: /^solportal: error: --max-body-bytes must be an integer in 1024\.\.2147483648, got '1k'$/,
    },
    {
      args: ['serve', '--max-body-bytes', '100'],
      want: /^solportal: error: --max-body-bytes must be an integer in 1024\.\.2147483648, got '100'$/,
    },
    {
      args: ['serve', '--max-body-bytes', '100000', '--max-filter-values', '10000'],
      want: /^solportal: error: --max-body-bytes 100000 cannot hold --max-filter-values 10000 addresses \(~\d+ bytes each\): raise it to \d+ or more$/,
    },
    {
      args: ['serve', '--heap-growing-percent', '1001'],
      want: /^solportal: error: --heap-growing-percent must be an integer in 0\.\.1000, got '1001'$/,
    },
    { args: ['serve', '--no-such-option'], want: /^error: unknown option '--no-such-option'$/ },
    // backup refuses what export refuses, the same way (status 2, nothing created)
    { args: ['backup', missing, join(work, 'bk')], want: /^solportal: error: \S+missing: no such directory$/, code: 2 },
    {
      args: ['backup', join(ROOT, 'data'), join(work, 'bk')],
      want: /^solportal: error: \S+data: not a dataset directory \(no cold\/; see solportal import or serve --rpc\)$/,
      code: 2,
    },
    {
      args: ['import', join(work, 'd'), missing],
      want: /^solportal: error: \S+missing: no such file or directory$/,
      code: 2,
    },
  ]
  try {
    const results = await pool(
      cases.map((c) => () => run(c.args, c.env)),
      4,
    )
    for (const [i, c] of cases.entries()) {
      const r = results[i]
      const what = `solportal ${c.args.join(' ')}: ${JSON.stringify(r)}`
      assert.ok(r.code !== null && r.code !== 0, `non-zero exit: ${what}`)
      if (c.code !== undefined) assert.equal(r.code, c.code, `exit status: ${what}`)
      const lines = r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('npm warn'))
      assert.equal(lines.length, 1, `one line: ${what}`)
      assert.match(lines[0], c.want, what)
      assert.doesNotMatch(r.stderr, /\n\s+at /, `no stack trace: ${what}`)
    }
    // nothing was created by the refused commands
    assert.ok(!existsSync(join(work, 'd')), '--data-dir not created by a refused serve')
    assert.ok(!existsSync(join(work, 'bk')), 'no backup directory created by a refused backup')
    assert.ok(!existsSync(join(work, 'a.jsonl')))
  } finally {
    busy.close()
  }
})

test('--version and misused options answer without loading what runs the commands', async () => {
  // what runs serve, import, fake-node and export: loaded once a command's options are checked
  // (every command module is registered: none of them may load it)
  const heavy = [
    'server/app.ts',
    'server/sources.ts',
    'server/http.ts',
    'store/hot.ts',
    'store/cold/disk-store.ts',
    'ingest/import/index.ts',
    'ingest/fake-node/node.ts',
    'export/parquet.ts',
  ]
  const cases: { args: string[]; code: number }[] = [
    { args: ['--version'], code: 0 },
    { args: ['serve', '--port', 'abc'], code: 2 },
    { args: ['import', join(work, 'd'), join(work, 'missing')], code: 2 },
    { args: ['fake-node', '--skip-rate', 'abc'], code: 2 },
  ]
  for (const [i, c] of cases.entries()) {
    const file = join(work, `loaded-${i}`)
    const r = await run(c.args, { LOADED_MODULES_FILE: file }, ['--import', './test/support/loaded-modules.mjs'])
    const what = `solportal ${c.args.join(' ')}: ${JSON.stringify(r)}`
    assert.equal(r.code, c.code, what)
    const loaded = readFileSync(file, 'utf8')
      .split('\n')
      .filter((u) => u.includes('/src/'))
      .map((u) => u.slice(u.lastIndexOf('/src/') + 5))
    assert.ok(loaded.includes('cli/main.ts') && loaded.includes('cli/options.ts'), `${what}: ${loaded.join(' ')}`)
    assert.deepEqual(
      loaded.filter((m) => heavy.includes(m)),
      [],
      what,
    )
  }
})

test('normalize into a pipe closed early (| head -1) ends quietly', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'normalize', 'data/mainnet/blocks/254170887.jsonl.gz', 'data/sample'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d))
  const closed = new Promise<[number | null, string | null]>((r) => child.on('close', (c, s) => r([c, s])))
  // read the first line, then close the pipe like `head -1`
  await new Promise<void>((resolve) => {
    let got = ''
    const onData = (d: Buffer) => {
      got += d
      if (got.includes('\n')) {
        child.stdout.off('data', onData)
        child.stdout.destroy()
        resolve()
      }
    }
    child.stdout.on('data', onData)
  })
  const [code, signal] = await closed
  assert.equal(signal, null)
  assert.equal(code, 0, stderr)
  assert.doesNotMatch(stderr, /EPIPE|Error|\n\s+at /, stderr)
})

/** pids of the processes whose parent is `ppid` (Linux /proc) */
function childrenOf(ppid: number): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      // pid (comm) state ppid ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[1]) === ppid) out.push(Number(name))
    } catch {
      /* gone */
    }
  }
  return out
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test(
  'SIGTERM to `npm start` stops the server (no orphan left running)',
  { skip: process.platform !== 'linux' },
  async () => {
    const npm = spawn('npm', ['start', '--silent', '--', '--quiet'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    const npmExited = new Promise<void>((r) => npm.on('close', () => r()))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d
          const m = /listening on (http:\/\/\S+):\s/.exec(out)
          if (m) resolve(m[1])
        }
        npm.stdout.on('data', onData)
        npm.stderr.on('data', onData)
        npm.on('close', (code) => reject(new Error(`npm start exited with ${code}: ${out}`)))
      })
      assert.equal((await request(`${url}/datasets/solana-mainnet/head`)).status, 200)
      const kids = childrenOf(npm.pid!)
      assert.ok(kids.length >= 1, 'npm started a child')
      npm.kill('SIGTERM')
      await npmExited
      // the server process goes away with npm: wait for it (event-free, so poll with a generous bound)
      const t0 = Date.now()
      while (kids.some(alive) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 50))
      assert.deepEqual(kids.filter(alive), [], `still running after SIGTERM to npm: ${out}`)
      await assert.rejects(request(`${url}/datasets/solana-mainnet/head`), /ECONNREFUSED/)
    } finally {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL')
      await npmExited
    }
  },
)
