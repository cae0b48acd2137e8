/**
 * Archive files for import tests and the bench: the real mainnet block 254170887
 * (data/mainnet/blocks) re-slotted into a chain. Block i takes a rotating window of `txPerBlock`
 * of the template's transactions, gets its own slot (with skipped slots), parent, blockhash,
 * height and time, and unique signatures, so every block is distinct but has real RPC shapes.
 */
import { createHash } from 'node:crypto'
import { createWriteStream, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync, createGzip } from 'node:zlib'
import { formatArchiveLine } from '../../../src/ingest/archive.ts'
import { parseJsonExact } from '../../../src/rpc/json.ts'
import type { ArchiveLine, RpcBlock } from '../../../src/rpc/types.ts'
import { base58Encode } from '../../../src/util/base58.ts'

export const TEMPLATE = join(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  '..',
  '..',
  'data',
  'mainnet',
  'blocks',
  '254170887.jsonl.gz',
)

let template: ArchiveLine | null = null
export function templateLine(): ArchiveLine {
  if (!template) {
    const text = gunzipSync(readFileSync(TEMPLATE)).toString('utf8').trim()
    template = parseJsonExact(text) as ArchiveLine
  }
  return template
}

function b58hash(...parts: (string | number)[]): string {
  return base58Encode(createHash('sha256').update(parts.join('/')).digest())
}

export interface ArchiveGenOptions {
  count: number
  startSlot?: number
  /** transactions per block (a window of the template's 602); default 30 */
  txPerBlock?: number
  /** every n-th slot is skipped (0 = none); default 7 */
  skipEvery?: number
}

export function* archiveLines(o: ArchiveGenOptions): Generator<string> {
  const t = templateLine()
  const txs = (t.block as RpcBlock & { transactions: unknown[] }).transactions
  const per = o.txPerBlock ?? 30
  const skipEvery = o.skipEvery ?? 7
  let slot = o.startSlot ?? 300_000_000
  let parentSlot = slot - 1
  let parentHash = b58hash('genesis', slot)
  for (let i = 0; i < o.count; i++) {
    const hash = b58hash('block', slot)
    const window: unknown[] = []
    for (let k = 0; k < per; k++) {
      const tx = txs[(i * per + k) % txs.length] as { transaction: { signatures: string[] } }
      window.push({
        ...tx,
        transaction: {
          ...tx.transaction,
          signatures: tx.transaction.signatures.map((_s, j) =>
            base58Encode(createHash('sha512').update(`${slot}/${k}/${j}`).digest()),
          ),
        },
      })
    }
    const block = {
      ...(t.block as object),
      blockhash: hash,
      previousBlockhash: parentHash,
      parentSlot,
      blockHeight: 250_000_000 + i,
      blockTime: 1_710_000_000 + i,
      transactions: window,
    } as unknown as RpcBlock
    yield formatArchiveLine({ slot, hash, height: 250_000_000 + i, block })
    parentSlot = slot
    parentHash = hash
    slot += skipEvery && i % skipEvery === skipEvery - 1 ? 2 : 1
  }
}

/** Write an archive file (gzip when the name ends in .gz). */
export async function writeArchive(path: string, o: ArchiveGenOptions): Promise<void> {
  const file = createWriteStream(path)
  const out = path.endsWith('.gz') ? createGzip({ level: 1 }) : null
  if (out) out.pipe(file)
  const sink: NodeJS.WritableStream = out ?? file
  for (const line of archiveLines(o)) {
    if (!sink.write(line + '\n')) await new Promise<void>((r) => sink.once('drain', () => r()))
  }
  await new Promise<void>((resolve, reject) => {
    file.on('finish', resolve).on('error', reject)
    sink.end()
  })
}
