/**
 * The bundled whole mainnet block (src/ingest/fake-node/ DEFAULT_TEMPLATE) as a node's getBlock
 * answer: its raw text (u64 values exact), as the bytes of the HTTP body, and the archive line.
 */
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { DEFAULT_TEMPLATE } from '../../src/ingest/fake-node/templates.ts'
import { parseJsonExact } from '../../src/rpc/json.ts'
import type { RpcBlock } from '../../src/rpc/types.ts'

export function mainnetAnswer(): { answer: Buffer; archived: { slot: number; block: RpcBlock } } {
  const line = gunzipSync(readFileSync(DEFAULT_TEMPLATE)).toString('utf8').trim()
  const archived = parseJsonExact(line) as { slot: number; block: RpcBlock }
  const blockText = line
    .slice(line.indexOf('"block"') + '"block"'.length)
    .replace(/^\s*:/, '')
    .replace(/}\s*$/, '')
  return { answer: Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${blockText}}`), archived }
}
