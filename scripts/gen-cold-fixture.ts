/**
 * Writes test/fixtures/cold/format3-mainnet.spc: a chunk file in format 3 (the format written
 * before format 4) of the two trimmed real mainnet blocks of the sample (slots 100000000 and
 * 154808473), normalized by today's normalizer. test/cold-schema.test.ts reads it as a chunk
 * written before fields were added to the catalogue. Run: node --import tsx scripts/gen-cold-fixture.ts
 */
import { mkdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { sampleLines, REPO_ROOT } from '../src/ingest/sample.ts'
import type { Block } from '../src/model.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { writeChunkFile } from '../src/store/cold/chunk-file.ts'

export const FIXTURE = join(REPO_ROOT, 'test/fixtures/cold/format3-mainnet.spc')

/** the blocks the fixture holds (the first two lines of the sample: trimmed mainnet blocks) */
export async function fixtureBlocks(): Promise<Block[]> {
  const out: Block[] = []
  for await (const line of sampleLines()) {
    if (out.length === 2) break
    out.push(normalizeBlock(line).block)
  }
  return out
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  mkdirSync(dirname(FIXTURE), { recursive: true })
  rmSync(FIXTURE, { force: true })
  const w = await writeChunkFile(FIXTURE, await fixtureBlocks(), { formatVersion: 3, fsync: false })
  console.log(`wrote ${FIXTURE}: ${w.bytes} bytes, blocks ${w.footer.firstBlock}..${w.footer.lastBlock}`)
}
