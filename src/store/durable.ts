/**
 * Durable small-file writes: a file replaced so that after a crash or a power loss it holds either
 * its old or its new content, never a prefix or nothing. Write a temp file next to it, fsync it,
 * rename it over the target, fsync the directory (the rename itself is durable only then).
 */
import { randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** a temp name next to `path`, unique to this call (two writers never share one) */
function tempOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

/** Replace `path` with `data` atomically and durably (`fsync` false: atomic only; tests and benches). */
export async function writeFileAtomic(path: string, data: string | Uint8Array, fsync = true): Promise<void> {
  const tmp = tempOf(path)
  try {
    const fh = await open(tmp, 'wx')
    try {
      await fh.writeFile(data)
      if (fsync) await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
  if (fsync) await fsyncDir(dirname(path))
}

/** The same, synchronously. */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, fsync = true): void {
  const tmp = tempOf(path)
  try {
    const fd = openSync(tmp, 'wx')
    try {
      const b = typeof data === 'string' ? Buffer.from(data) : data
      let done = 0
      while (done < b.byteLength) done += writeSync(fd, b, done, b.byteLength - done)
      if (fsync) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, path)
  } catch (e) {
    rmSync(tmp, { force: true })
    throw e
  }
  if (fsync) fsyncDirSync(dirname(path))
}

/** leftover temp files of `writeFileAtomic` for `name` in `dir` match this */
export function isAtomicTemp(file: string, name: string): boolean {
  return file.startsWith(`.${name}.`) && file.endsWith('.tmp')
}
