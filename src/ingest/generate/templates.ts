/**
 * The generator's templates (see src/ingest/generate.ts): real transactions of archive files,
 * categorized by the programs they invoke, each serialized once and split around the values an
 * instance replaces (recent blockhash, signatures, fee payer, signers, re-keyed accounts); program
 * ids, sysvars, native ids and mints are kept.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import {
  BASE58_RUN,
  DEFAULT_TEMPLATE_FILES,
  JUPITER,
  METEORA_DLMM,
  RAYDIUM_AMM,
  REPO_ROOT,
  VOTE_PROGRAM,
  WHIRLPOOL,
  type Json,
} from './constants.ts'

export type Category = 'vote' | 'jupiter' | 'whirlpool' | 'dlmm' | 'raydium' | 'mainnet-other' | 'token' | 'v1'

/** slot kinds of a template's values */
export const enum Kind {
  Recent = 0,
  Signature = 1,
  Payer = 2,
  Signer = 3,
  Account = 4,
}

export interface Template {
  category: Category
  /**
   * The serialized transaction (UTF-8) split around its variable values: part 0, value refs[0], part 1, ...
   * Part i is bytes[partStart[i], partEnd[i]).
   */
  bytes: Buffer
  partStart: Int32Array
  partEnd: Int32Array
  /** views of the parts, for fast bulk copies of long parts */
  partViews: Uint8Array[]
  /** DataView over `bytes`, for word-wise copies of short parts */
  dv: DataView
  refs: Uint16Array
  /** kind of each value slot (index = slot) */
  kinds: Uint8Array
  /** bytes of the parts plus the longest possible values: an upper bound of an instance's size */
  maxBytes: number
  fee: bigint
  baseFee: bigint
  /** top-level + inner instructions */
  instructions: number
  /** where it came from: file and transaction position, for diagnostics and tests */
  source: string
  /** the template transaction itself */
  tx: Json
}

export interface TemplateSet {
  byCategory: Map<Category, Template[]>
  all: Template[]
}

function accountList(tx: Json): string[] {
  const la = tx.meta?.loadedAddresses ?? { writable: [], readonly: [] }
  return [...tx.transaction.message.accountKeys, ...la.writable, ...la.readonly]
}

function invokedPrograms(tx: Json): string[] {
  const keys = accountList(tx)
  const out: string[] = []
  for (const ix of tx.transaction.message.instructions) out.push(keys[ix.programIdIndex])
  for (const g of tx.meta?.innerInstructions ?? []) for (const ix of g.instructions) out.push(keys[ix.programIdIndex])
  return out
}

function categorize(tx: Json): Category {
  const msg = tx.transaction.message
  const keys = accountList(tx)
  if (msg.instructions.length === 1 && keys[msg.instructions[0].programIdIndex] === VOTE_PROGRAM) return 'vote'
  const progs = new Set(invokedPrograms(tx))
  // the rarer DEX first (many of their transactions are Jupiter routes through them)
  if (progs.has(METEORA_DLMM)) return 'dlmm'
  if (progs.has(WHIRLPOOL)) return 'whirlpool'
  if (progs.has(JUPITER)) return 'jupiter'
  if (progs.has(RAYDIUM_AMM)) return 'raydium'
  return 'mainnet-other'
}

/** Addresses never re-keyed: native/sysvar ids (ten or more trailing '1's). */
const NATIVE_LIKE = /1{10,}$/

/** Compile transactions (getBlock json shape) into templates. `keep` = addresses never re-keyed. */
export function compileTemplate(tx: Json, keep: Set<string>, category: Category, source: string): Template {
  const msg = tx.transaction.message
  const keys = accountList(tx)
  const nSig: number = msg.header.numRequiredSignatures
  const slotOf = new Map<string, number>()
  const kinds: Kind[] = []
  const add = (value: string, kind: Kind) => {
    if (!slotOf.has(value)) {
      slotOf.set(value, kinds.length)
      kinds.push(kind)
    }
  }
  add(msg.recentBlockhash, Kind.Recent)
  for (const s of tx.transaction.signatures) add(s, Kind.Signature)
  keys.forEach((k, i) => {
    if (keep.has(k) || NATIVE_LIKE.test(k)) return
    add(k, i === 0 ? Kind.Payer : i < nSig ? Kind.Signer : Kind.Account)
  })
  for (const l of msg.addressTableLookups ?? []) if (!keep.has(l.accountKey)) add(l.accountKey, Kind.Account)
  for (const tb of [...(tx.meta.preTokenBalances ?? []), ...(tx.meta.postTokenBalances ?? [])])
    if (tb.owner && !keep.has(tb.owner) && !NATIVE_LIKE.test(tb.owner)) add(tb.owner, Kind.Account)

  const text = JSON.stringify(tx)
  const parts: Buffer[] = []
  const refs: number[] = []
  let last = 0
  for (const m of text.matchAll(BASE58_RUN)) {
    const slot = slotOf.get(m[0])
    if (slot === undefined) continue
    parts.push(Buffer.from(text.slice(last, m.index), 'utf8'))
    refs.push(slot)
    last = m.index! + m[0].length
  }
  parts.push(Buffer.from(text.slice(last), 'utf8'))
  const bytes = Buffer.concat(parts)
  const partStart = new Int32Array(parts.length)
  const partEnd = new Int32Array(parts.length)
  let o = 0
  parts.forEach((b, i) => {
    partStart[i] = o
    partEnd[i] = o += b.length
  })
  let instructions = msg.instructions.length
  for (const g of tx.meta.innerInstructions ?? []) instructions += g.instructions.length
  const fee = BigInt(tx.meta.fee)
  const baseFee = 5000n * BigInt(nSig)
  return {
    category,
    bytes,
    partStart,
    partEnd,
    partViews: parts.map((_, i) => bytes.subarray(partStart[i], partEnd[i])),
    dv: new DataView(bytes.buffer, bytes.byteOffset, bytes.length),
    refs: Uint16Array.from(refs),
    kinds: Uint8Array.from(kinds),
    maxBytes: bytes.length + refs.length * 88,
    fee,
    baseFee: baseFee < fee ? baseFee : fee,
    instructions,
    source,
    tx,
  }
}

function readLines(path: string): Json[] {
  const buf = readFileSync(path)
  const text = (buf[0] === 0x1f && buf[1] === 0x8b ? gunzipSync(buf) : buf).toString('utf8')
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l))
}

/** Load the template transactions of archive files (default: the real mainnet block and the litesvm sample). */
export function loadTemplates(files: string[] = DEFAULT_TEMPLATE_FILES.map((f) => join(REPO_ROOT, f))): TemplateSet {
  const txs: { tx: Json; category: Category; source: string }[] = []
  const keep = new Set<string>()
  for (const file of files) {
    const isSample = file.includes('litesvm')
    for (const line of readLines(file)) {
      line.block.transactions.forEach((tx: Json, i: number) => {
        const category = tx.version === 1 ? 'v1' : isSample ? 'token' : categorize(tx)
        txs.push({ tx, category, source: `${file}#${line.slot}/${i}` })
        for (const p of invokedPrograms(tx)) keep.add(p)
        for (const tb of [...(tx.meta.preTokenBalances ?? []), ...(tx.meta.postTokenBalances ?? [])]) keep.add(tb.mint)
      })
    }
  }
  const byCategory = new Map<Category, Template[]>()
  const all: Template[] = []
  for (const { tx, category, source } of txs) {
    const t = compileTemplate(tx, keep, category, source)
    all.push(t)
    let list = byCategory.get(category)
    if (!list) byCategory.set(category, (list = []))
    list.push(t)
  }
  return { byCategory, all }
}
