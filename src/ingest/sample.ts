/**
 * The bundled sample: real mainnet blocks (data/mainnet) and the locally executed chain
 * (data/sample, real programs run with litesvm). See data/sample/README.md.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ArchiveLine } from './archive.ts'
import { readArchive } from './archive.ts'
import { parseJsonExact } from '../rpc/json.ts'
import type { RpcBlock } from '../rpc/types.ts'

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Bare getBlock results (trimmed mainnet blocks) that carry no slot: slot = parentSlot + 1. */
const BARE_MAINNET = [
  'data/mainnet/chainstorage/client_solana_block.json', // slot 100000000
  'data/mainnet/chainstorage/parser_solana_block_with_versioned_tx.json', // slot 154808473
]

/** Archive files of the sample, in slot order. */
export function sampleArchives(): string[] {
  const out = [join(REPO_ROOT, 'data/mainnet/blocks')]
  const dir = join(REPO_ROOT, 'data/sample')
  if (existsSync(dir)) {
    for (const f of readdirSync(dir).sort()) if (/\.jsonl(\.gz)?$/.test(f)) out.push(join(dir, f))
  }
  return out
}

/** Every block line of the bundled sample. */
export async function* sampleLines(): AsyncGenerator<ArchiveLine> {
  for (const rel of BARE_MAINNET) {
    const block = parseJsonExact(readFileSync(join(REPO_ROOT, rel), 'utf8')) as RpcBlock
    yield { slot: Number(block.parentSlot) + 1, block }
  }
  yield* readArchive(sampleArchives())
}
