/**
 * Resilience scenario: a full disk during `solportal import`. A generated archive (300 blocks of
 * 300 transactions) is imported into a tmpfs of half the dataset's size: the import must stop
 * with one line and status 1; the tmpfs is grown and the same import run again: the dataset must
 * be the one of an uninterrupted import, chunk for chunk, byte for byte, every sha256 checked.
 * Needs root (a tmpfs mount): elsewhere it reports held=false with the reason.
 */
import { diskFullImport } from '../../test/support/disk-full.ts'

export async function run(): Promise<{ scenario: string; held: boolean; detail: string }> {
  const scenario = 'disk full during import (tmpfs ENOSPC, grow, resume)'
  try {
    const o = await diskFullImport({ blocks: 300, txsPerBlock: 300, chunkMb: 8 })
    if (o.skipped) return { scenario, held: false, detail: `not run: ${o.skipped}` }
    const lines = o.full!.stderr.trimEnd().split('\n')
    const problems: string[] = []
    if (o.full!.status !== 1) problems.push(`the full-disk import ended with status ${o.full!.status}, not 1`)
    if (lines.length !== 1 || !/no space left on the device/.test(lines[0]))
      problems.push(`its stderr was not one line naming the full disk: ${JSON.stringify(o.full!.stderr)}`)
    if (o.resumed!.status !== 0) problems.push(`the resumed import failed: ${o.resumed!.stderr.trim()}`)
    if (o.difference) problems.push(o.difference)
    const mib = (x: number) => `${(x / 1048576).toFixed(1)} MiB`
    const detail =
      `dataset ${mib(o.referenceBytes!)} in ${o.chunks} chunks, tmpfs ${mib(o.tmpfsBytes!)}: ` +
      (problems.length ? problems.join('; ') : `stopped with "${lines[0]}", resumed to a byte-identical dataset`)
    return { scenario, held: problems.length === 0, detail }
  } catch (e) {
    return { scenario, held: false, detail: `failed to run: ${(e as Error).message}` }
  }
}
