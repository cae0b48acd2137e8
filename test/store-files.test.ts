// The files of a dataset directory: dataset.json written durably (checked on the system calls with
// strace), the writer LOCK taken once even when several contenders find the same stale lock
// (in one process and across processes), positions exact past 2 GiB and 4 GiB (a sparse file),
// bounded chunk size targets.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync, symlinkSync, writeFileSync, writeSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ColdStoreError, DiskColdStore } from '../src/store/cold/disk-store.ts'
import { align8, pageOf } from '../src/store/cold/offsets.ts'
import { Parts } from '../src/store/cold/raw/parts.ts'
import { openDatasetDir, readDatasetMeta, writeDatasetMeta } from '../src/store/dataset-dir.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CHILD = join(ROOT, 'test', 'support', 'files-child.ts')
const hasStrace = spawnSync('strace', ['-V']).status === 0

/** the pid of a process that has exited */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', ''])
  return r.pid!
}

/**
 * strace's lines, with each call that another thread interrupted (`PID call(args <unfinished ...>`,
 * later `PID <... call resumed>rest`) joined into one line where it finished
 */
function joinedSyscalls(text: string): string[] {
  const open = new Map<string, string>()
  const out: string[] = []
  for (const line of text.split('\n')) {
    const cut = /^(\d+) (.*) <unfinished \.\.\.>$/.exec(line)
    const resumed = /^(\d+) <\.\.\. \w+ resumed>(.*)$/.exec(line)
    if (cut) open.set(cut[1], `${cut[1]} ${cut[2]}`)
    else if (resumed && open.has(resumed[1])) {
      out.push(open.get(resumed[1]) + resumed[2])
      open.delete(resumed[1])
    } else out.push(line)
  }
  return out
}

test('dataset.json: temp file fsynced, renamed over, directory fsynced', { skip: !hasStrace && 'no strace' }, () => {
  const dir = tempDir()
  const trace = join(tempDir(), 'trace')
  const r = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=openat,fsync,fdatasync,rename,renameat,renameat2',
      '-o',
      trace,
      process.execPath,
      '--import',
      'tsx',
      CHILD,
      'meta',
      dir,
    ],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(readDatasetMeta(dir), { format: 'solportal-dataset', version: 1, includeVotes: true })
  const lines = joinedSyscalls(readFileSync(trace, 'utf8'))
  const target = join(dir, 'dataset.json')
  const renameAt = lines.findIndex((l) => /\brename(at2?)?\(/.test(l) && l.includes(`"${target}"`))
  assert.ok(renameAt > 0, 'dataset.json is renamed into place')
  const tmp = /"([^"]+)"/.exec(lines[renameAt])![1]
  assert.notEqual(tmp, target)
  // the temp file: created, then fsynced before the rename
  const created = lines.findIndex((l) => l.includes(`openat(AT_FDCWD, "${tmp}"`) && l.includes('O_CREAT'))
  assert.ok(created >= 0 && created < renameAt)
  const fd = /= (\d+)$/.exec(lines[created].trim())![1]
  assert.ok(
    lines.slice(created, renameAt).some((l) => new RegExp(`\\b(fsync|fdatasync)\\(${fd}\\)`).test(l)),
    'the temp file is fsynced before the rename',
  )
  // the directory: opened and fsynced after the rename
  const after = lines.slice(renameAt)
  const dirOpen = after.findIndex((l) => l.includes(`openat(AT_FDCWD, "${dir}"`))
  assert.ok(dirOpen > 0, 'the directory is opened after the rename')
  const dfd = /= (\d+)$/.exec(after[dirOpen].trim())![1]
  assert.ok(
    after.slice(dirOpen).some((l) => new RegExp(`\\b(fsync|fdatasync)\\(${dfd}\\)`).test(l)),
    'the directory is fsynced after the rename',
  )
})

test('dataset.json damaged by an older version: a clear error, not a JSON parse error', async () => {
  const dir = tempDir()
  writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: false }, false)
  writeFileSync(join(dir, 'dataset.json'), '')
  await assert.rejects(openDatasetDir(dir), /dataset\.json: damaged \(empty\)/)
})

test('stale LOCK found by many contenders in one process: exactly one takes it', async () => {
  for (const legacy of [false, true]) {
    const dir = tempDir()
    await (await DiskColdStore.open(dir, { fsync: false })).close()
    // a lock left by a crashed writer (old versions wrote the bare pid)
    writeFileSync(join(dir, 'LOCK'), legacy ? String(deadPid()) : `${deadPid()} 0123456789abcdef`)
    // different paths to the same directory, so the contenders do not know of each other
    const aliases = Array.from({ length: 8 }, (_, i) => {
      const p = join(tempDir(), `alias${i}`)
      symlinkSync(dir, p)
      return p
    })
    const opened = await Promise.allSettled(aliases.map((a) => DiskColdStore.open(a, { fsync: false })))
    const won = opened.filter((r) => r.status === 'fulfilled')
    assert.equal(won.length, 1, `${won.length} contenders took the lock`)
    for (const r of opened)
      if (r.status === 'rejected') assert.match(String(r.reason), /being written by process|taking over the same/)
    // the loser can open later, after the winner closes
    await (won[0] as PromiseFulfilledResult<DiskColdStore>).value.close()
    assert.ok(!existsSync(join(dir, 'LOCK')))
    await (await DiskColdStore.open(aliases[3], { fsync: false })).close()
  }
})

test('stale LOCK found by several processes at once: exactly one takes it', async () => {
  const dir = tempDir()
  await (await DiskColdStore.open(dir, { fsync: false })).close()
  writeFileSync(join(dir, 'LOCK'), String(deadPid()))
  const kids = Array.from({ length: 4 }, () => {
    const c = spawn(process.execPath, ['--import', 'tsx', CHILD, 'lock', dir], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    const lines = createInterface({ input: c.stdout! })[Symbol.asyncIterator]()
    const exited = new Promise<number | null>((r) => c.on('exit', r))
    return { c, next: async () => (await lines.next()).value as string, exited }
  })
  for (const k of kids) assert.equal(await k.next(), 'ready')
  for (const k of kids) k.c.stdin!.write('go\n') // all at once
  const answers = await Promise.all(kids.map((k) => k.next()))
  for (const k of kids) k.c.stdin!.end()
  const codes = await Promise.all(kids.map((k) => k.exited))
  assert.deepEqual(codes, [0, 0, 0, 0])
  assert.equal(answers.filter((a) => a === 'won').length, 1, answers.join('\n'))
  for (const a of answers) if (a !== 'won') assert.match(a, /^busy .*(being written by process|taking over the same)/)
  assert.ok(!existsSync(join(dir, 'LOCK')), 'the winner released it')
})

test('a LOCK whose process has exited but was not reaped (a zombie) is stale', async (t) => {
  if (process.platform !== 'linux') return t.skip('process states from /proc are Linux')
  const dir = tempDir()
  await (await DiskColdStore.open(dir, { fsync: false })).close()
  // sh starts a child that exits a second later, then becomes sleep, which never reaps it (a child
  // that exited at once could be reaped by sh itself before the exec: then there is no zombie)
  const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const [line] = (await once(parent.stdout!, 'data')) as [Buffer]
    const zombie = Number(line.toString().trim())
    const state = () => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1][0]
    const until = Date.now() + 10_000
    while (state() !== 'Z' && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
    assert.equal(state(), 'Z')
    process.kill(zombie, 0) // signal 0 still reaches it
    writeFileSync(join(dir, 'LOCK'), `${zombie} 0123456789abcdef`)
    const s = await DiskColdStore.open(dir, { fsync: false })
    assert.match(readFileSync(join(dir, 'LOCK'), 'utf8'), new RegExp(`^${process.pid} `))
    await s.close()
  } finally {
    parent.kill('SIGKILL')
  }
})

test('a live writer keeps its lock', async () => {
  const dir = tempDir()
  const s = await DiskColdStore.open(dir, { fsync: false })
  const alias = join(tempDir(), 'alias')
  symlinkSync(dir, alias)
  await assert.rejects(DiskColdStore.open(alias, { fsync: false }), /being written by process/)
  await assert.rejects(DiskColdStore.open(dir, { fsync: false }), /already open for writing/)
  await s.close()
})

test('positions past 2^31 and 2^32 stay exact', () => {
  for (const n of [2 ** 31 - 3, 2 ** 31, 2 ** 31 + 1, 2 ** 32 - 1, 2 ** 32 + 1, 2 ** 33 + 5, 2 ** 52 + 1]) {
    const a = align8(n)
    assert.ok(a >= n && a - n < 8 && a % 8 === 0, `align8(${n}) = ${a}`)
  }
  assert.equal(align8(2 ** 31 + 1), 2 ** 31 + 8)
  assert.equal(pageOf(2 ** 32 + 16384 * 3 + 5, 16384), 2 ** 18 + 3)
  assert.equal(pageOf(2 ** 31, 16384) * 16384, 2 ** 31)
})

test('reading a blob whose parts lie past 2 GiB and 4 GiB of a (sparse) file', () => {
  const dir = tempDir()
  for (const [start, first] of [
    [8, 2 ** 31 + 5],
    [2 ** 32 + 24, 2 ** 32 + 3],
  ]) {
    // a blob at `start` whose part 0 is `first` bytes (never written: a hole) and part 1 16 bytes
    const path = join(dir, `sparse-${start}`)
    const want = Buffer.from([...Array(16).keys()].map((i) => 200 + i))
    const partAt = start + align8(first)
    const fd = openSync(path, 'w')
    writeSync(fd, want, 0, 16, partAt)
    closeSync(fd)
    const parts = new Parts([first, 16], null, {
      path,
      start,
      length: align8(first) + 16,
      crcs: null,
      checked: null,
    })
    assert.deepEqual([...parts.range(1, 0, 16)], [...want])
    assert.equal(parts.u32(1, 1), want.readUInt32LE(4))
    assert.equal(parts.uw(1, 3, 2), want.readUInt16LE(6))
    assert.deepEqual([...parts.part(1)], [...want])
  }
})

test('chunk size targets are bounded: import --chunk-mb fails with one line', async () => {
  const work = tempDir()
  const archive = join(work, 'a.jsonl')
  await writeArchive(archive, { count: 2, txPerBlock: 1 })
  for (const bad of ['5000', '0', '1.5', 'abc']) {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'import', join(work, 'ds'), archive, '--no-progress', '--chunk-mb', bad],
      { cwd: ROOT, encoding: 'utf8' },
    )
    assert.equal(r.status, 2, `--chunk-mb ${bad}: ${r.stderr}`)
    assert.equal(r.stderr, `solportal: error: --chunk-mb must be an integer in 1..1024, got '${bad}'\n`)
  }
  assert.ok(!existsSync(join(work, 'ds')), 'nothing written')
  await assert.rejects(DiskColdStore.open(tempDir(), { targetBytes: 2 ** 40 }), ColdStoreError)
  await assert.rejects(DiskColdStore.open(tempDir(), { targetBlocks: 0 }), ColdStoreError)
})
