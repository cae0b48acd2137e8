/**
 * The disk-full scenario of `solportal import` (test/store-disk-full.test.ts and the resilience
 * bench): a generated archive imported once into a plain directory (the reference), then into a
 * tmpfs too small for it (the import must fail with one line and status 1), the tmpfs grown and
 * the same import run again: the dataset must then be the reference's, chunk for chunk, byte for
 * byte (file names aside: they carry the catalogue generation that wrote them).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DiskColdStore } from '../../src/store/cold/disk-store.ts'
import { mountTmpfs, resizeTmpfs, unmountTmpfs } from './tmpfs.ts'

const CLI = fileURLToPath(new URL('../../bin/solportal.js', import.meta.url))

export interface CliRun {
  status: number | null
  stderr: string
}

export function cli(args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    p.on('error', reject)
    p.on('close', (status) => resolve({ status, stderr }))
  })
}

function duBytes(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    n += e.isDirectory() ? duBytes(p) : statSync(p).size
  }
  return n
}

/** the chunks of a dataset's cold store as [first, last, sha256, bytes] with each file's bytes */
async function chunksOf(dataset: string): Promise<{ meta: string[]; files: Buffer[] }> {
  const cold = join(dataset, 'cold')
  // every listed file exists with its size and sha256 (what serve and a later import check)
  const s = await DiskColdStore.open(cold, { readOnly: true, verify: 'full' })
  try {
    const entries = s.entries
    const listed = new Set(entries.map((e) => e.file))
    const stray = readdirSync(join(cold, 'chunks')).filter((f) => !listed.has(f))
    if (stray.length) throw new Error(`${dataset}: chunk files the catalogue does not list: ${stray.join(', ')}`)
    return {
      meta: entries.map((e) => `${e.firstBlock}-${e.lastBlock} ${e.blockCount} ${e.sha256} ${e.bytes} ${e.sealed}`),
      files: entries.map((e) => readFileSync(join(cold, 'chunks', e.file))),
    }
  } finally {
    await s.close()
  }
}

export interface DiskFullOutcome {
  /** why the scenario could not run (no tmpfs mount), else null */
  skipped: string | null
  /** the import into the full filesystem */
  full?: CliRun
  /** the same import again after the filesystem grew */
  resumed?: CliRun
  /** the datasets' chunks differ from the reference's: how (null when identical) */
  difference?: string | null
  referenceBytes?: number
  tmpfsBytes?: number
  chunks?: number
}

/** Run the scenario with a generated archive of `blocks` blocks (`txsPerBlock` transactions each). */
export async function diskFullImport(opts: {
  blocks: number
  txsPerBlock: number
  chunkMb: number
  /** tmpfs size as a share of the reference dataset's bytes */
  share?: number
}): Promise<DiskFullOutcome> {
  const work = mkdtempSync(join(tmpdir(), 'solportal-diskfull-'))
  const mnt = join(work, 'mnt')
  let mounted = false
  try {
    const archive = join(work, 'a.jsonl.gz')
    const gen = await cli([
      'gen',
      '--blocks',
      String(opts.blocks),
      '--txs-per-block',
      String(opts.txsPerBlock),
      '--out',
      archive,
    ])
    if (gen.status !== 0) throw new Error(`gen failed: ${gen.stderr}`)
    const importArgs = (dir: string) => [
      'import',
      dir,
      archive,
      '--chunk-mb',
      String(opts.chunkMb),
      '--workers',
      '1',
      '--no-progress',
    ]
    const ref = join(work, 'ref')
    const r = await cli(importArgs(ref))
    if (r.status !== 0) throw new Error(`reference import failed: ${r.stderr}`)
    const referenceBytes = duBytes(ref)
    const tmpfsBytes = Math.floor(referenceBytes * (opts.share ?? 0.5))
    const why = mountTmpfs(mnt, tmpfsBytes)
    if (why) return { skipped: `cannot mount a tmpfs to fill (${why})` }
    mounted = true
    const ds = join(mnt, 'ds')
    const full = await cli(importArgs(ds))
    resizeTmpfs(mnt, referenceBytes * 4)
    const resumed = await cli(importArgs(ds))
    let difference: string | null = null
    const a = await chunksOf(ref)
    if (resumed.status === 0) {
      const b = await chunksOf(ds)
      if (a.meta.join('\n') !== b.meta.join('\n'))
        difference = `catalogues differ:\n${a.meta.join('\n')}\n--- resumed:\n${b.meta.join('\n')}`
      else {
        const k = a.files.findIndex((f, i) => !f.equals(b.files[i]))
        if (k >= 0) difference = `chunk ${a.meta[k]} differs in its bytes`
      }
    } else difference = 'the resumed import failed'
    return { skipped: null, full, resumed, difference, referenceBytes, tmpfsBytes, chunks: a.meta.length }
  } finally {
    if (mounted) unmountTmpfs(mnt)
    rmSync(work, { recursive: true, force: true })
  }
}
