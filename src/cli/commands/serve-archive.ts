/**
 * `serve --archive PATH...`: the archives are imported (`runImport`, what `solportal import` does)
 * into a temporary dataset directory and served from there, so memory stays bounded by the import's
 * batches and the cold store's cache instead of growing with the archive (holding every normalized
 * block in memory took ~10x the archive's decompressed size). Progress is logged while it loads;
 * the directory is removed when the server stops, or when the process exits.
 *
 * Archive files may be given in any order: they are imported in the order of their first blocks.
 * Blocks must ascend inside each file and the files must not overlap (the import's rule).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { orderArchiveFiles } from '../../ingest/archive.ts'
import type { Logger } from '../../log.ts'
import { openDatasetDir, type DatasetDirStore } from '../../store/dataset-dir.ts'
import { ImportError, runImport } from '../../ingest/import/index.ts'
import { errorMessage } from '../../util/errors.ts'

/**
 * Chunk size target of the temporary dataset: a batch of about this many estimated bytes is what
 * each import thread holds at a time (a fraction of the default 32 MB, for a bounded footprint).
 */
export const ARCHIVE_CHUNK_BYTES = 4 * 1024 * 1024

export interface ArchiveDataset {
  store: DatasetDirStore
  /** the temporary dataset directory */
  dir: string
  /** close the store and remove the directory */
  close(): Promise<void>
}

export async function openArchiveDataset(
  paths: readonly string[],
  opts: { includeVotes?: boolean; cacheBytes?: number; signal?: AbortSignal; log: Logger },
): Promise<ArchiveDataset> {
  const { log } = opts
  const dir = mkdtempSync(join(tmpdir(), 'solportal-archive-'))
  const remove = () => rmSync(dir, { recursive: true, force: true })
  // a process.exit (a signal while loading, a failure) removes it too; stopping the server does below
  process.once('exit', remove)
  const cleanup = () => {
    process.off('exit', remove)
    remove()
  }
  try {
    let files: { file: string; first: number }[]
    try {
      files = await orderArchiveFiles(paths)
    } catch (e) {
      throw new ImportError(errorMessage(e))
    }
    if (files.length === 0) throw new ImportError('no archive blocks found (.jsonl / .jsonl.gz files)')
    log.info(`importing ${files.length} archive file(s) into the temporary dataset directory ${dir}`)
    const r = await runImport(
      dir,
      files.map((f) => f.file),
      {
        includeVotes: opts.includeVotes,
        targetBytes: ARCHIVE_CHUNK_BYTES,
        progress: 'lines',
        signal: opts.signal,
        workers: 1,
      },
      (s) => {
        for (const line of s.split('\n')) {
          const text = line.replace(/^\r|\x1b\[K/g, '').trim()
          if (text) (text.startsWith('warning:') ? log.warn : log.info).call(log, `archive import: ${text}`)
        }
      },
    )
    if (r.interrupted) throw new ImportError('interrupted while importing the archives')
    log.info(
      `imported ${r.imported} blocks (${r.firstBlock}..${r.lastBlock}, ${r.warnings} normalization warnings) in ${r.seconds.toFixed(1)} s`,
    )
    const store = await openDatasetDir(dir, { cacheBytes: opts.cacheBytes })
    return {
      store,
      dir,
      close: async () => {
        try {
          await store.close()
        } finally {
          cleanup()
        }
      },
    }
  } catch (e) {
    cleanup()
    throw e
  }
}
