/**
 * A consistent copy of a dataset directory (or of a follower's data directory) while its writer
 * keeps running.
 *
 * The cold store's state is its catalogue (the chunk index, src/store/cold/chunk-index/): chunk files are immutable
 * and a writer publishes a new state by appending to the catalogue, deleting the files it dropped
 * some time later. So a backup reads the catalogue once, copies every chunk file it lists
 * (checking each against the catalogue's sha256), then writes a catalogue of that list last: the
 * copy is exactly the state that was read. If a listed file is gone meanwhile (a newer state
 * dropped it long enough ago), the backup starts again from the newer state; files already copied
 * are kept, so a retry, like a later incremental backup, copies only what is new. The hot store (unfinalized blocks) is not copied:
 * a follower refetches those from its node.
 */
import { copyFile, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { coldDir } from './dataset-dir.ts'
import { ChunkIndex, writeChunkIndex } from './cold/chunk-index/chunk-index.ts'
import { sha256File, fsyncDir } from './cold/manifest.ts'

export interface BackupOptions {
  /** states read before giving up when the source keeps dropping listed files (default 5) */
  attempts?: number
  /** fsync the copies (default true) */
  fsync?: boolean
}

export interface BackupResult {
  /** chunk files in the copied state */
  chunks: number
  /** of which copied by this run (the others were already in the destination) */
  copied: number
  bytesCopied: number
  /** chunk files of an older backup that the copied state no longer lists, removed */
  removed: number
  firstBlock: number | null
  lastBlock: number | null
  /** states read (1 unless the writer replaced files under the backup) */
  attempts: number
}

export class BackupError extends Error {}

const DATASET_META = 'dataset.json'

async function sizeOf(path: string): Promise<number | null> {
  try {
    return (await stat(path)).size
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
}

async function syncFile(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** copy `from` to `to` through `to.tmp`; false when `from` does not exist */
async function copyVia(
  from: string,
  to: string,
  fsync: boolean,
  check?: (tmp: string) => Promise<void>,
): Promise<boolean> {
  const tmp = `${to}.tmp`
  try {
    await copyFile(from, tmp)
  } catch (e) {
    await rm(tmp, { force: true })
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw e
  }
  try {
    await check?.(tmp)
    if (fsync) await syncFile(tmp)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
  await rename(tmp, to)
  return true
}

/** Copy the dataset at `src` to `dest` (created when missing; an older backup there is updated). */
export async function backupDataset(src: string, dest: string, opts: BackupOptions = {}): Promise<BackupResult> {
  const attempts = opts.attempts ?? 5
  const fsync = opts.fsync !== false
  const srcCold = coldDir(src)
  const destCold = coldDir(dest)
  const destChunks = join(destCold, 'chunks')
  await mkdir(destChunks, { recursive: true })
  let copied = 0
  let bytesCopied = 0
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const cat = await ChunkIndex.open(srcCold, { readOnly: true })
    if (!cat) throw new BackupError(`${src}: no dataset here (no chunk catalogue in ${join(src, 'cold')})`)
    const snap = cat.snapshot()
    const chunks = snap.all()
    cat.close()
    let vanished: string | null = null
    for (const c of chunks) {
      const to = join(destChunks, c.file)
      // chunk files are immutable and only ever renamed into place after their check: a file of
      // the same name and size is the same file
      if ((await sizeOf(to)) === c.bytes) continue
      const ok = await copyVia(join(srcCold, 'chunks', c.file), to, fsync, async (tmp) => {
        const sum = await sha256File(tmp)
        if (sum !== c.sha256) throw new BackupError(`${src}: chunk ${c.file} does not match its catalogue checksum`)
      })
      if (!ok) {
        vanished = c.file
        break
      }
      copied++
      bytesCopied += c.bytes
    }
    if (vanished) {
      if (attempt === attempts)
        throw new BackupError(
          `${src}: chunk ${vanished} listed by the catalogue is gone, and the source kept changing over ${attempts} attempts`,
        )
      continue
    }
    await copyVia(join(src, DATASET_META), join(dest, DATASET_META), fsync)
    if (fsync) await fsyncDir(destChunks)
    await writeChunkIndex(destCold, chunks, snap.generation, fsync)
    const listed = new Set(chunks.map((c) => c.file))
    let removed = 0
    for (const f of await readdir(destChunks)) {
      if (listed.has(f)) continue
      await rm(join(destChunks, f), { force: true })
      if (f.endsWith('.spc')) removed++
    }
    return {
      chunks: chunks.length,
      copied,
      bytesCopied,
      removed,
      firstBlock: chunks[0]?.firstBlock ?? null,
      lastBlock: chunks.at(-1)?.lastBlock ?? null,
      attempts: attempt,
    }
  }
  throw new BackupError(`${src}: no attempt made (attempts = ${attempts})`)
}
