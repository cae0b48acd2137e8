/**
 * Names from a bucket are data, not paths: a replica and an import accept object names from the
 * bucket only as plain file names inside their prefix, and s3:// addresses only with plain
 * segments. Against a real S3 server (s3rver on loopback): a pointer naming `../` files is refused
 * with an error naming the object and the field, and nothing is written (or overwritten) outside
 * the cache and staging directories; `s3://bucket/../victim/x` is refused by the CLI.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { importToS3 } from '../src/ingest/import/index.ts'
import { openS3Replica, parseS3Url, s3ClientFromEnv } from '../src/store/s3.ts'
import { writeArchive } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'
import { s3Env, startS3, stopS3 } from './support/s3/server.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

test('s3:// addresses: only plain bucket names and prefix segments', () => {
  assert.deepEqual(parseS3Url('s3://bucket/solana/main/'), { bucket: 'bucket', prefix: 'solana/main' })
  assert.deepEqual(parseS3Url('s3://my.bucket-1'), { bucket: 'my.bucket-1', prefix: '' })
  for (const bad of [
    's3://bucket/../victim/x',
    's3://bucket/a/../../victim',
    's3://bucket/a/./b',
    's3://bucket/a//b',
    's3://bucket//a',
    's3://../x',
    's3://b/x',
    's3:///x',
    's3://bucket/a\\..\\b',
    's3://bucket/a\nb',
    'http://bucket/x',
  ])
    assert.throws(() => parseS3Url(bad), /not a usable s3:\/\/BUCKET\/PREFIX address/, bad)
})

test('the CLI refuses s3://bucket/../victim/x before touching a staging directory', async () => {
  const work = tempDir('solportal-s3-names-')
  const archive = join(work, 'a.jsonl')
  await writeArchive(archive, { count: 2, txPerBlock: 1 })
  mkdirSync(join(work, 'tmp'))
  // port 9 on loopback: nothing listens; the address must be refused before any request
  const env = { ...s3Env(9), TMPDIR: join(work, 'tmp') }
  const r = await new Promise<{ status: number | null; stderr: string }>((ok, fail) => {
    const p = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'import', 's3://bucket/../victim/x', archive, '--no-progress'],
      { cwd: ROOT, env },
    )
    let stderr = ''
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    p.on('error', fail)
    p.on('close', (status) => ok({ status, stderr }))
  })
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /not a usable s3:\/\/BUCKET\/PREFIX address \(the prefix has a '\.\.' path segment\)/)
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  assert.ok(!existsSync(join(work, 'tmp', 'solportal-s3-staging')))
})

test('a pointer naming ../ files is refused; nothing is written outside the cache or staging directory', async () => {
  const work = tempDir('solportal-s3-names-')
  const archive = join(work, 'a.jsonl')
  await writeArchive(archive, { count: 12, txPerBlock: 2 })
  const { s3, port } = await startS3(join(work, 's3'), 0, true)
  const client = s3ClientFromEnv(s3Env(port))
  const url = 's3://bucket/ds'
  const quiet = () => {}
  try {
    await importToS3(
      url,
      [archive],
      { stagingDir: join(work, 'staging'), targetBlocks: 4, workers: 1, progress: 'none', client },
      quiet,
    )
    const key = 'ds/POINTER.json'
    const got = await client.send(new GetObjectCommand({ Bucket: 'bucket', Key: key }))
    const good = await got.Body!.transformToString()
    const put = (text: string) => client.send(new PutObjectCommand({ Bucket: 'bucket', Key: key, Body: text }))
    type Ptr = {
      log: { file: string; key: string; sha256: string }
      catalogue: { body: { log: string; segments: { file: string; sha256: string }[] } }
    }
    const hostile = (edit: (p: Ptr) => void) => {
      const p = JSON.parse(good) as Ptr
      edit(p)
      return JSON.stringify(p)
    }

    // a replica whose pointer changes to one naming a file outside its cache: the victim (where
    // the log's bytes would have been written, and later deleted from) is left as it was
    const cacheDir = join(work, 'cache')
    const victim = join(work, 'victim.bin')
    writeFileSync(victim, 'precious')
    const escape = '../../../victim.bin' // from <cache>/cold/catalogue
    assert.equal(resolve(cacheDir, 'cold', 'catalogue', escape), victim)
    const escaping = hostile((p) => {
      p.log.file = escape
      p.catalogue.body.log = escape
    })
    const replica = await openS3Replica(url, { cacheDir, client, pollMs: 3_600_000, log: quiet })
    const head = replica.store.head()?.number
    assert.ok(head)
    try {
      await put(escaping)
      await assert.rejects(
        replica.poll(),
        /s3:\/\/bucket\/ds\/POINTER\.json: log\.file "\.\.\/\.\.\/\.\.\/victim\.bin" is not a plain file name/,
      )
      // back to the good pointer: had the hostile one been taken, its log file (the victim) would
      // now be deleted as the log the pointer no longer names
      await put(good)
      await replica.poll()
      assert.equal(replica.store.head()?.number, head)
    } finally {
      await replica.close()
    }
    assert.equal(readFileSync(victim, 'utf8'), 'precious')

    // the same pointer refused at a replica's start and at an import's fetch into empty staging
    await put(escaping)
    const start = openS3Replica(url, { cacheDir: join(work, 'cache2'), client, pollMs: 3_600_000, log: quiet })
    await assert.rejects(start, /POINTER\.json: log\.file .* is not a plain file name/)
    await assert.rejects(
      importToS3(url, [archive], { stagingDir: join(work, 'st2'), workers: 1, progress: 'none', client }, quiet),
      /POINTER\.json: log\.file .* is not a plain file name/,
    )
    assert.ok(!existsSync(join(work, 'victim.bin.tmp')) && readFileSync(victim, 'utf8') === 'precious')

    // other names the pointer gives: segments, the log's key, a name with a separator
    const cases: [(p: Ptr) => void, RegExp][] = [
      [
        (p) => p.catalogue.body.segments.push({ file: '../../seg.bin', sha256: p.log.sha256 }),
        /catalogue\.body\.segments\[0\]\.file "\.\.\/\.\.\/seg\.bin" is not a plain file name/,
      ],
      [(p) => (p.log.key = 'cold/logs/../../POINTER.json'), /log\.key \(cold\/logs\/<name>\) .* not a plain/],
      [(p) => (p.log.file = 'a/b.bin'), /log\.file "a\/b\.bin" is not a plain file name/],
      [(p) => (p.log.file = '..'), /log\.file "\.\." is not a plain file name/],
      [(p) => (p.log.sha256 = 'x'), /log\.sha256 is not a sha256/],
    ]
    for (const [edit, want] of cases) {
      await put(hostile(edit))
      await assert.rejects(
        openS3Replica(url, { cacheDir: join(work, 'cache3'), client, pollMs: 3_600_000, log: quiet }),
        want,
      )
    }
    assert.ok(!existsSync(join(work, 'seg.bin')))
  } finally {
    await stopS3(s3)
  }
})
