/**
 * The manifest of earlier versions (now read only to open or convert their stores: the catalogue,
 * catalogue.ts, replaced it): the one file saying which chunk files make up the store. Replaced atomically
 * (write MANIFEST.json.tmp, fsync, rename over MANIFEST.json, fsync the directory), so after a
 * crash it is either the old or the new list. It carries a sha256 per chunk file and a sha256 of
 * its own content.
 */
import { createHash } from 'node:crypto'
import { createReadStream, readFileSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fsyncDir } from '../durable.ts'
import type { ChunkEntry } from './chunk-index/chunk-index.ts'

export const MANIFEST = 'MANIFEST.json'
export const FORMAT = 'solportal-cold'

export interface ManifestBody {
  format: typeof FORMAT
  version: 1
  generation: number
  chunks: ChunkEntry[]
}

export class ManifestError extends Error {}

function digest(body: ManifestBody): string {
  return createHash('sha256').update(JSON.stringify(body)).digest('hex')
}

export function readManifest(dir: string): ManifestBody | null {
  let text: string
  try {
    text = readFileSync(join(dir, MANIFEST), 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
  let parsed: { body: ManifestBody; sha256: string }
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ManifestError(`${join(dir, MANIFEST)}: not JSON`)
  }
  if (!parsed || typeof parsed !== 'object' || !parsed.body || parsed.body.format !== FORMAT) {
    throw new ManifestError(`${join(dir, MANIFEST)}: not a solportal cold store manifest`)
  }
  if (digest(parsed.body) !== parsed.sha256) throw new ManifestError(`${join(dir, MANIFEST)}: checksum mismatch`)
  if (parsed.body.version !== 1)
    throw new ManifestError(`${join(dir, MANIFEST)}: unsupported version ${parsed.body.version}`)
  return parsed.body
}

export { fsyncDir }

export async function writeManifest(dir: string, body: ManifestBody, fsync = true): Promise<void> {
  const tmp = join(dir, `${MANIFEST}.tmp`)
  await rm(tmp, { force: true })
  const fh = await open(tmp, 'wx')
  try {
    await fh.writeFile(JSON.stringify({ body, sha256: digest(body) }))
    if (fsync) await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(tmp, join(dir, MANIFEST))
  if (fsync) await fsyncDir(dir)
}

export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256')
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')))
  })
}
