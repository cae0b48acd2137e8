/**
 * The fake node's template blocks: recorded archive lines (one `{"slot","hash","height","block"}`
 * line per block, optionally gzip; docs/query.md §1) kept as raw JSON text, each transaction split
 * around its signatures (which every produced block rewrites), so that every number (u64 balances
 * included) is served exactly as recorded.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'

export const DEFAULT_TEMPLATE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'data',
  'mainnet',
  'blocks',
  '254170887.jsonl.gz',
)

/** the bundled litesvm sample: legacy, v0 and (from its block 120 on) version 1 transactions */
export const SAMPLE_TEMPLATE = join(dirname(DEFAULT_TEMPLATE), '..', '..', 'sample', 'litesvm.jsonl.gz')

/** the templates of the demo and of `solportal fake-node`: the sample (when present), then the mainnet block */
export function demoTemplates(): string[] {
  return existsSync(SAMPLE_TEMPLATE) ? [SAMPLE_TEMPLATE, DEFAULT_TEMPLATE] : [DEFAULT_TEMPLATE]
}

export interface Template {
  /** raw JSON text of each transaction: [prefix before signatures array, signatures, suffix] */
  /** `version`: the transaction's (-1 for legacy, as for one without a version) */
  txs: { before: string; sigs: string[]; after: string; version: number }[]
  rewards: string | null
}

// --- raw JSON splitting (string-aware) --------------------------------------------------------

function skipWs(t: string, i: number): number {
  while (i < t.length) {
    const c = t.charCodeAt(i)
    if (c === 32 || c === 10 || c === 13 || c === 9) i++
    else break
  }
  return i
}

/** index just after the JSON value starting at i (after whitespace) */
function valueEnd(t: string, i: number): number {
  i = skipWs(t, i)
  const c = t[i]
  if (c === '"') {
    for (let j = i + 1; j < t.length; j++) {
      const d = t.charCodeAt(j)
      if (d === 92) j++
      else if (d === 34) return j + 1
    }
    throw new Error('unterminated string')
  }
  if (c === '{' || c === '[') {
    let depth = 0
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j)
      if (d === 34) {
        j = valueEnd(t, j) - 1
      } else if (d === 123 || d === 91) depth++
      else if (d === 125 || d === 93) {
        depth--
        if (depth === 0) return j + 1
      }
    }
    throw new Error('unterminated object')
  }
  let j = i
  while (j < t.length && !',}] \n\r\t'.includes(t[j])) j++
  return j
}

/** members of the JSON object text, in order, as [key, raw value text, start offset of value] */
function splitObject(t: string): [string, string, number][] {
  const out: [string, string, number][] = []
  let i = skipWs(t, 0)
  if (t[i] !== '{') throw new Error('expected object')
  i = skipWs(t, i + 1)
  if (t[i] === '}') return out
  for (;;) {
    const ke = valueEnd(t, i)
    const key = JSON.parse(t.slice(skipWs(t, i), ke)) as string
    i = skipWs(t, ke)
    if (t[i] !== ':') throw new Error('expected :')
    const vs = skipWs(t, i + 1)
    const ve = valueEnd(t, vs)
    out.push([key, t.slice(vs, ve), vs])
    i = skipWs(t, ve)
    if (t[i] === ',') {
      i = skipWs(t, i + 1)
      continue
    }
    if (t[i] === '}') return out
    throw new Error('expected , or }')
  }
}

function splitArray(t: string): string[] {
  const out: string[] = []
  let i = skipWs(t, 0)
  if (t[i] !== '[') throw new Error('expected array')
  i = skipWs(t, i + 1)
  if (t[i] === ']') return out
  for (;;) {
    const e = valueEnd(t, i)
    out.push(t.slice(skipWs(t, i), e))
    i = skipWs(t, e)
    if (t[i] === ',') {
      i = skipWs(t, i + 1)
      continue
    }
    if (t[i] === ']') return out
    throw new Error('expected , or ]')
  }
}

function member(members: [string, string, number][], key: string): string | undefined {
  return members.find((m) => m[0] === key)?.[1]
}

export function parseTemplate(line: string): Template {
  const top = splitObject(line)
  const blockText = member(top, 'block') ?? line
  const block = splitObject(blockText)
  const txsText = member(block, 'transactions')
  const txs: Template['txs'] = []
  if (txsText && txsText !== 'null') {
    for (const tx of splitArray(txsText)) {
      const txm = splitObject(tx)
      const inner = txm.find((m) => m[0] === 'transaction')
      if (!inner) throw new Error('transaction without "transaction"')
      const im = splitObject(inner[1])
      const sig = im.find((m) => m[0] === 'signatures')
      if (!sig) throw new Error('transaction without signatures')
      const sigStart = inner[2] + sig[2]
      const sigEnd = sigStart + sig[1].length
      const version = member(txm, 'version')
      txs.push({
        before: tx.slice(0, sigStart),
        sigs: JSON.parse(sig[1]) as string[],
        after: tx.slice(sigEnd),
        version: version === undefined || version === '"legacy"' ? -1 : Number(version),
      })
    }
  }
  const rewards = member(block, 'rewards')
  return { txs, rewards: rewards && rewards !== 'null' ? rewards : null }
}

export function readArchiveLines(file: string): string[] {
  let buf = readFileSync(file)
  if (file.endsWith('.gz')) buf = gunzipSync(buf)
  return buf
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
}
