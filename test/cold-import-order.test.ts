// `solportal import` of blocks at or below the dataset's last block: held with the same hash they
// are skipped (and counted); older blocks or blocks of a gap refuse the import with one line naming
// the ranges (exit status 1, nothing written); a held block with another hash is an error.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runImport } from '../src/ingest/import/index.ts'
import { coldDir } from '../src/store/dataset-dir.ts'
import { archiveLines } from './support/cold/archive-gen.ts'
import { tempDir } from './support/cold/util.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function slotOf(line: string): number {
  return Number(/^\{"slot":(\d+)/.exec(line)![1])
}

function write(path: string, lines: string[]): string {
  writeFileSync(path, lines.map((l) => l + '\n').join(''))
  return path
}

/** every file of the cold store (chunks and catalogue) with its sha256, but the writer's lock */
function files(dir: string): Record<string, string> {
  const cold = coldDir(dir)
  const out: Record<string, string> = {}
  for (const f of readdirSync(cold, { recursive: true, encoding: 'utf8' }).sort()) {
    const p = join(cold, f)
    if (f !== 'LOCK' && statSync(p).isFile()) out[f] = createHash('sha256').update(readFileSync(p)).digest('hex')
  }
  return out
}

test('import refuses blocks below or inside the dataset that it does not hold; skips held ones', async () => {
  const work = tempDir()
  const chain = [...archiveLines({ count: 60, txPerBlock: 3 })]
  const s = chain.map(slotOf)
  // the dataset: blocks 20..39 and 50..59 of the chain (a gap 40..49, allowed above the head)
  const held = write(join(work, 'held.jsonl'), [...chain.slice(20, 40), ...chain.slice(50)])
  const dir = join(work, 'ds')
  const r0 = await runImport(dir, [held], { targetBlocks: 8, progress: 'none', workers: 1 })
  assert.equal(r0.imported, 30)
  const before = files(dir)

  // older blocks: below the dataset
  const older = write(join(work, 'older.jsonl'), chain.slice(0, 20))
  await assert.rejects(runImport(dir, [older], { progress: 'none', workers: 1 }), (e: Error) => {
    assert.equal(
      e.message,
      `${older}:1: the dataset holds blocks ${s[20]}..${s[59]}; the archive's blocks ${s[0]}..${s[19]} (20 blocks not in the dataset) are below it: ` +
        `blocks can only be appended above ${s[59]} (import older blocks into a new dataset directory, in ascending order)`,
    )
    return true
  })
  // the gap, followed by new blocks: refused too, and the new blocks are not appended
  const more = [...archiveLines({ count: 5, txPerBlock: 3, startSlot: s[59] + 10 })]
  const gap = write(join(work, 'gap.jsonl'), [...chain.slice(40, 50), ...more])
  await assert.rejects(
    runImport(dir, [gap], { progress: 'none', workers: 1 }),
    new RegExp(
      `gap\\.jsonl:1: the dataset holds blocks ${s[20]}..${s[59]}; the archive's blocks ${s[40]}..${s[49]} \\(10 blocks not in the dataset\\) are inside its range`,
    ),
  )
  // the whole chain: starts below and reaches into the gap
  const whole = write(join(work, 'whole.jsonl'), chain)
  await assert.rejects(
    runImport(dir, [whole], { progress: 'none', workers: 1 }),
    /the archive's blocks \d+\.\.\d+ \(30 blocks not in the dataset\) are below it and inside it/,
  )
  assert.deepEqual(files(dir), before, 'nothing written by a refused import')

  // the CLI: one line, exit status 1
  const cli = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'import', dir, older, '--no-progress', '--workers', '1'],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(cli.status, 1)
  assert.match(cli.stderr, /^import failed: .*older\.jsonl:1: the dataset holds blocks \d+\.\.\d+; .* are below it/)
  assert.equal(cli.stderr.trim().split('\n').length, 1, cli.stderr)

  // held blocks with the same hash, then new ones: skipped (said so), the rest appended
  const resume = write(join(work, 'resume.jsonl'), [...chain.slice(50), ...more])
  const r1 = await runImport(dir, [resume], { progress: 'none', workers: 1 })
  assert.deepEqual([r1.skipped, r1.imported, r1.lastBlock], [10, 5, slotOf(more[4])])
  const cli2 = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'import', dir, resume, '--no-progress', '--workers', '1'],
    { cwd: ROOT, encoding: 'utf8' },
  )
  assert.equal(cli2.status, 0, cli2.stderr)
  assert.match(cli2.stderr, /imported 0 blocks, skipped 15 already present \(same hash\)/)

  // a held block with another hash: an error naming both
  const other = chain[25].replace(/"hash":"([^"]+)"/, '"hash":"1111111111111111111111111111111111111111111"')
  const forked = write(join(work, 'forked.jsonl'), [chain[24], other])
  await assert.rejects(
    runImport(dir, [forked], { progress: 'none', workers: 1 }),
    new RegExp(
      `forked\\.jsonl:2: block ${s[25]} has hash 1{43}, but the dataset holds block ${s[25]} with hash ${/"hash":"([^"]+)"/.exec(chain[25])![1]}`,
    ),
  )
})
