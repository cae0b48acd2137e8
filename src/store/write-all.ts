/**
 * Writes checked for their length. A write to a file may write fewer bytes than asked: a disk
 * that fills up in the middle of a write writes what fits and fails only on the next write
 * (ENOSPC), and one call writes at most IOV_MAX buffers. Taking such a write for complete
 * published a chunk file shorter than its catalogue entry. Every write here loops until all the
 * bytes are written or a write fails; a full or failing disk becomes a `StorageError` naming the
 * file and the cause, one line. And the unhandled rejection of a failed LMDB commit that repeats
 * what its transactions report (`isLmdbCommitFailure`, plain: no LMDB loaded for it).
 */
import type { FileHandle } from 'node:fs/promises'

/** error codes of a disk that cannot take the write (full, quota, failing, read-only) */
const STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS', 'EFBIG'])

/** A write that failed for lack of space or a failing disk: `code` is the system's (ENOSPC, EIO, ...). */
export class StorageError extends Error {
  constructor(
    readonly path: string,
    readonly code: string,
    cause: unknown,
  ) {
    const what =
      code === 'ENOSPC' || code === 'EDQUOT'
        ? 'no space left on the device'
        : 'a write failed (the disk is full or failing)'
    super(`${path}: ${what} (${code}); free space and run again, nothing written so far is lost`, { cause })
    this.name = 'StorageError'
  }
}

/** whether `e` (or its cause) is a full or failing disk */
export function isStorageError(e: unknown): boolean {
  for (let x = e, k = 0; x instanceof Error && k < 5; x = (x as Error).cause, k++) {
    if (x instanceof StorageError) return true
    const code = (x as NodeJS.ErrnoException).code
    if (typeof code === 'string' && STORAGE_CODES.has(code)) return true
    // by message only: lmdb-js's errors, a StorageError's message passed on by the cold writer process
    if (/no space left on (the )?device|\((ENOSPC|EDQUOT|EIO)\)|input\/output error/i.test(x.message)) return true
  }
  return false
}

/** a full or failing disk's error as a StorageError naming `path`; any other error as it is */
export function storageError(e: unknown, path: string): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code
  return typeof code === 'string' && STORAGE_CODES.has(code) && !(e instanceof StorageError)
    ? new StorageError(path, code, e)
    : e
}

/** buffers per writev call (Linux IOV_MAX) */
const IOV_MAX = 1024

/**
 * Write all of `parts` to `fh` (at `position` and on, or at the file's current position when
 * null), looping over short writes. `path` names the file in errors.
 */
export async function writeAll(
  fh: FileHandle,
  parts: readonly Uint8Array[],
  position: number | null,
  path: string,
): Promise<void> {
  let i = 0
  let off = 0
  let pos = position
  try {
    for (;;) {
      while (i < parts.length && off >= parts[i].byteLength) {
        i++
        off = 0
      }
      if (i >= parts.length) return
      const batch: Uint8Array[] = []
      for (let k = i; k < parts.length && batch.length < IOV_MAX; k++) {
        const p = k === i ? parts[k].subarray(off) : parts[k]
        if (p.byteLength) batch.push(p)
      }
      const { bytesWritten } = await fh.writev(batch, pos ?? undefined)
      if (bytesWritten <= 0) {
        const e = new Error(`a write of ${path} wrote nothing`) as NodeJS.ErrnoException
        e.code = 'ENOSPC'
        throw e
      }
      if (pos !== null) pos += bytesWritten
      let left = bytesWritten
      while (left > 0) {
        const k = Math.min(left, parts[i].byteLength - off)
        off += k
        left -= k
        if (off >= parts[i].byteLength) {
          i++
          off = 0
        }
      }
    }
  } catch (e) {
    throw storageError(e, path)
  }
}

/**
 * lmdb-js starts each event turn's batch of writes with a promise of its own that nobody can
 * await: when the commit fails (a full or failing disk), it is rejected with a generic "Commit
 * failed" error holding the cause in `commitError`, and surfaces as an unhandled rejection. The
 * transactions of that commit reject too and report the cause (`txn`): such a rejection is a
 * duplicate, to be ignored by a process-wide unhandled-rejection handler.
 */
export function isLmdbCommitFailure(e: unknown): boolean {
  const pending = (e as { commitError?: unknown } | null)?.commitError
  if (!(pending instanceof Promise)) return false
  pending.catch(() => undefined)
  return true
}
