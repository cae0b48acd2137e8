/**
 * A dataset directory (what `solportal import DIR` writes) opened as a `BlockStore`: every block
 * is finalized, the head is the last stored block. Layout:
 *
 *     DIR/dataset.json   { "format": "solportal-dataset", "version": 1, "includeVotes": bool }
 *     DIR/cold/          the DiskColdStore (src/store/cold/disk-store.ts)
 *
 * Opened read-only by default, so a server can serve a directory while an import (another process)
 * keeps appending to it: `waitFor` and every `chunks()` call pick up what the writer published since.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Chunk, HeadInfo } from './chunk.ts'
import { ColdStoreError, DiskColdStore, type DiskColdStoreOptions } from './cold/disk-store.ts'
import { writeFileAtomicSync } from './durable.ts'
import type { BlockStore } from './types.ts'

export interface DatasetMeta {
  format: 'solportal-dataset'
  version: 1
  /** vote transactions were kept at import */
  includeVotes: boolean
}

export function coldDir(dir: string): string {
  return join(dir, 'cold')
}

export function readDatasetMeta(dir: string): DatasetMeta | null {
  let text: string
  try {
    text = readFileSync(join(dir, 'dataset.json'), 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
  let m: DatasetMeta
  try {
    m = JSON.parse(text) as DatasetMeta
  } catch {
    throw new ColdStoreError(
      `${join(dir, 'dataset.json')}: damaged (${text.length ? 'not JSON' : 'empty'}); a dataset written without --include-votes holds {"format":"solportal-dataset","version":1,"includeVotes":false}`,
    )
  }
  if (!m || m.format !== 'solportal-dataset') throw new ColdStoreError(`${dir}/dataset.json: not a solportal dataset`)
  return m
}

/** Write DIR/dataset.json atomically and durably (temp file, fsync, rename, fsync of DIR). */
export function writeDatasetMeta(dir: string, meta: DatasetMeta, fsync = true): void {
  mkdirSync(dir, { recursive: true })
  writeFileAtomicSync(join(dir, 'dataset.json'), JSON.stringify(meta, null, 2) + '\n', fsync)
}

export interface DatasetDirOptions extends Omit<DiskColdStoreOptions, 'readOnly'> {
  /** open for writing (takes the writer lock); default read-only */
  writable?: boolean
  /** how often waitFor looks for new blocks (default 250 ms) */
  pollMs?: number
}

export class DatasetDirStore implements BlockStore {
  constructor(
    readonly cold: DiskColdStore,
    readonly meta: DatasetMeta | null,
    private readonly pollMs = 250,
  ) {}

  private fresh(): void {
    this.cold.refresh()
  }

  firstBlock(): number | null {
    this.fresh()
    return this.cold.firstBlock()
  }

  head(): HeadInfo | null {
    this.fresh()
    return this.cold.lastBlock()
  }

  finalizedHead(): HeadInfo | null {
    return this.head()
  }

  chunks(from: number, to: number, _finalizedOnly: boolean): AsyncIterable<Chunk> {
    this.fresh()
    return this.cold.chunks(from, to)
  }

  chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    this.fresh()
    return this.cold.chainBefore(n, limit)
  }

  async waitFor(number: number, _finalizedOnly: boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const h = this.head()
      if (h && h.number >= number) return true
      const left = deadline - Date.now()
      if (left <= 0 || signal?.aborted) return false
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, this.pollMs))
        function done() {
          clearTimeout(t)
          signal?.removeEventListener('abort', done)
          resolve()
        }
        signal?.addEventListener('abort', done)
      })
    }
  }

  close(): Promise<void> {
    return this.cold.close()
  }
}

/** Open DIR (written by `solportal import`) as a BlockStore. */
export async function openDatasetDir(dir: string, opts: DatasetDirOptions = {}): Promise<DatasetDirStore> {
  const meta = readDatasetMeta(dir)
  const cold = await DiskColdStore.open(coldDir(dir), { ...opts, readOnly: !opts.writable })
  return new DatasetDirStore(cold, meta, opts.pollMs)
}
