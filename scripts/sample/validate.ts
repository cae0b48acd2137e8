/**
 * Structural checks of archive lines (`{"slot","hash","height","block"}`, block = getBlock json result), used
 * by the tests of the bundled sample and of `solportal gen`. Returns a list of problems (empty = valid).
 */
import { gunzipSync } from 'node:zlib'
import { readFileSync } from 'node:fs'

/* eslint-disable @typescript-eslint/no-explicit-any */
export type Json = any

export function readArchive(path: string): Json[] {
  const text = gunzipSync(readFileSync(path)).toString('utf8')
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l))
}

const INVOKE = /^Program (\w+) invoke \[(\d+)\]$/
const RESULT = /^Program (\w+) (success|failed: .*)$/
const CONSUMED = /^Program (\w+) consumed (\d+) of (\d+) compute units$/

export interface ArchiveStats {
  blocks: number
  txs: number
  failed: number
  v0: number
  v1: number
  withLoaded: number
  topLevel: number
  inner: number
  maxStackHeight: number
  programs: Map<string, number>
  /** failed transactions whose failing instruction failed inside a CPI (a `failed` line at depth > 1) */
  failedInCpi: number
  /** failed transactions with top-level instructions after the failing one */
  failedWithSkipped: number
}

export function accountList(tx: Json): string[] {
  const la = tx.meta.loadedAddresses ?? { writable: [], readonly: [] }
  return [...tx.transaction.message.accountKeys, ...la.writable, ...la.readonly]
}

/** Validate one transaction; pushes problems prefixed with `where`. */
export function validateTx(tx: Json, where: string, problems: string[], stats?: ArchiveStats): void {
  const p = (m: string): void => {
    problems.push(`${where}: ${m}`)
  }
  const msg = tx.transaction?.message
  const meta = tx.meta
  if (!msg || !meta) return p('missing transaction.message or meta')
  if (tx.version !== 'legacy' && tx.version !== 0 && tx.version !== 1) p(`bad version ${tx.version}`)
  if (tx.version !== 0 && 'addressTableLookups' in msg) p(`${tx.version} message with addressTableLookups`)
  if (tx.version === 0 && !Array.isArray(msg.addressTableLookups)) p('v0 message without addressTableLookups')
  if ((tx.version === 1) !== 'transactionConfig' in msg) p(`${tx.version} message with(out) transactionConfig`)
  if (tx.version === 1) {
    const c = msg.transactionConfig
    const keys = ['computeUnitLimit', 'heapSize', 'loadedAccountsDataSizeLimit', 'priorityFee']
    if (Object.keys(c).sort().join() !== keys.join()) p(`transactionConfig keys ${Object.keys(c)}`)
    for (const k of keys)
      if (c[k] !== null && !(Number.isInteger(c[k]) && c[k] >= 0)) p(`transactionConfig.${k} ${c[k]}`)
  }
  const h = msg.header
  if (tx.transaction.signatures.length !== h.numRequiredSignatures) p('signature count != numRequiredSignatures')
  const keys = accountList(tx)
  const n = keys.length
  const nLookup = (msg.addressTableLookups ?? []).reduce(
    (a: number, l: Json) => a + l.writableIndexes.length + l.readonlyIndexes.length,
    0,
  )
  if (nLookup !== n - msg.accountKeys.length)
    p(`loaded addresses ${n - msg.accountKeys.length} != lookup indexes ${nLookup}`)
  if (new Set(keys).size !== n) p('duplicate account in the account list')
  if (meta.preBalances.length !== n || meta.postBalances.length !== n)
    p(`balance lists ${meta.preBalances.length}/${meta.postBalances.length} != ${n} accounts`)
  const checkIx = (ix: Json, w: string) => {
    if (!(ix.programIdIndex >= 0 && ix.programIdIndex < n)) p(`${w} programIdIndex ${ix.programIdIndex} out of range`)
    for (const a of ix.accounts) if (!(a >= 0 && a < n)) p(`${w} account index ${a} out of range`)
    if (typeof ix.data !== 'string' || !/^[1-9A-HJ-NP-Za-km-z]*$/.test(ix.data)) p(`${w} data is not base58`)
  }
  msg.instructions.forEach((ix: Json, i: number) => checkIx(ix, `instruction ${i}`))
  let lastIndex = -1
  const innerOf = new Map<number, Json[]>()
  for (const group of meta.innerInstructions ?? []) {
    if (!(group.index > lastIndex && group.index < msg.instructions.length))
      p(`innerInstructions index ${group.index} out of order/range`)
    lastIndex = group.index
    group.instructions.forEach((ix: Json, j: number) => {
      checkIx(ix, `inner ${group.index}.${j}`)
      if (!(Number.isInteger(ix.stackHeight) && ix.stackHeight >= 2))
        p(`inner ${group.index}.${j} stackHeight ${ix.stackHeight}`)
    })
    innerOf.set(group.index, group.instructions)
  }
  for (const side of ['preTokenBalances', 'postTokenBalances']) {
    for (const tb of meta[side] ?? []) {
      if (!(tb.accountIndex >= 0 && tb.accountIndex < n)) p(`${side} accountIndex ${tb.accountIndex} out of range`)
      if (typeof tb.uiTokenAmount?.amount !== 'string' || typeof tb.uiTokenAmount?.decimals !== 'number')
        p(`${side} bad uiTokenAmount`)
    }
  }
  if (JSON.stringify(meta.status) !== JSON.stringify(meta.err === null ? { Ok: null } : { Err: meta.err }))
    p('status does not match err')
  const nSig = BigInt(h.numRequiredSignatures)
  if (BigInt(meta.fee) < 5000n * nSig) p(`fee ${meta.fee} below 5000 per signature`)
  const payerTouched =
    msg.instructions.some((ix: Json) => ix.accounts.includes(0)) ||
    [...innerOf.values()].some((l) => l.some((ix: Json) => ix.accounts.includes(0)))
  if (
    (meta.err !== null || !payerTouched) &&
    BigInt(meta.preBalances[0]) - BigInt(meta.postBalances[0]) !== BigInt(meta.fee)
  )
    p(`fee payer paid ${meta.preBalances[0] - meta.postBalances[0]}, fee ${meta.fee}`)

  // log walk: invoke lines must follow the instructions, their depths the stack heights
  const failedAt: number | undefined = Array.isArray(meta.err?.InstructionError)
    ? meta.err.InstructionError[0]
    : undefined
  const logs: string[] | null = meta.logMessages
  let top = -1
  let innerPos = 0
  const stack: string[] = []
  let truncated = false
  let failedDeep = false
  if (logs) {
    for (const line of logs) {
      if (line === 'Log truncated') {
        truncated = true
        break
      }
      let m = INVOKE.exec(line)
      if (m) {
        const depth = Number(m[2])
        if (depth !== stack.length + 1) {
          p(`invoke depth ${depth} with ${stack.length} open frames: ${line}`)
          break
        }
        if (depth === 1) {
          top++
          innerPos = 0
          const ix = msg.instructions[top]
          if (!ix) {
            p(`invoke [1] beyond the ${msg.instructions.length} instructions`)
            break
          }
          if (keys[ix.programIdIndex] !== m[1])
            p(`invoke [1] of ${m[1]} but instruction ${top} calls ${keys[ix.programIdIndex]}`)
        } else {
          const list = innerOf.get(top) ?? []
          const ix = list[innerPos++]
          if (!ix) p(`invoke [${depth}] of ${m[1]} without an inner instruction of ${top}`)
          else {
            if (keys[ix.programIdIndex] !== m[1])
              p(`invoke [${depth}] of ${m[1]} but inner ${top}.${innerPos - 1} calls ${keys[ix.programIdIndex]}`)
            if (ix.stackHeight !== depth)
              p(`inner ${top}.${innerPos - 1} stackHeight ${ix.stackHeight} but invoke depth ${depth}`)
          }
        }
        stack.push(m[1])
        continue
      }
      m = RESULT.exec(line)
      if (m) {
        if (stack[stack.length - 1] !== m[1]) p(`result line of ${m[1]} while ${stack[stack.length - 1]} is open`)
        if (m[2] !== 'success' && stack.length > 1) failedDeep = true
        stack.pop()
        continue
      }
      m = CONSUMED.exec(line)
      if (m && stack[stack.length - 1] !== m[1]) p(`consumed line of ${m[1]} while ${stack[stack.length - 1]} is open`)
    }
    if (!truncated) {
      if (stack.length !== 0) p(`${stack.length} frames still open at the end of the logs`)
      const ran = failedAt !== undefined ? failedAt + 1 : meta.err === null ? msg.instructions.length : top + 1
      if (top + 1 !== ran) p(`${top + 1} top-level invoke lines, expected ${ran}`)
      if (meta.err === null) {
        let innerTotal = 0
        for (const l of innerOf.values()) innerTotal += l.length
        const seen = logs.filter((l) => {
          const x = INVOKE.exec(l)
          return x && x[2] !== '1'
        }).length
        if (seen !== innerTotal) p(`${seen} nested invoke lines but ${innerTotal} inner instructions`)
      }
    }
  }
  if (failedAt !== undefined) {
    for (const [i] of innerOf) if (i > failedAt) p(`inner instructions under never-run instruction ${i}`)
  }
  if (stats) {
    stats.txs++
    if (meta.err !== null) stats.failed++
    if (tx.version === 0) stats.v0++
    if (tx.version === 1) stats.v1++
    if (n > msg.accountKeys.length) stats.withLoaded++
    stats.topLevel += msg.instructions.length
    if (failedDeep) stats.failedInCpi++
    if (failedAt !== undefined && failedAt < msg.instructions.length - 1) stats.failedWithSkipped++
    const count = (ix: Json) =>
      stats.programs.set(keys[ix.programIdIndex], (stats.programs.get(keys[ix.programIdIndex]) ?? 0) + 1)
    msg.instructions.forEach(count)
    for (const l of innerOf.values()) {
      stats.inner += l.length
      for (const ix of l) {
        count(ix)
        stats.maxStackHeight = Math.max(stats.maxStackHeight, ix.stackHeight)
      }
    }
  }
}

export function newStats(): ArchiveStats {
  return {
    blocks: 0,
    txs: 0,
    failed: 0,
    v0: 0,
    v1: 0,
    withLoaded: 0,
    topLevel: 0,
    inner: 0,
    maxStackHeight: 1,
    programs: new Map(),
    failedInCpi: 0,
    failedWithSkipped: 0,
  }
}

/** Validate a sequence of archive lines forming one chain. */
export function validateArchive(lines: Json[], stats: ArchiveStats = newStats()): string[] {
  const problems: string[] = []
  const signatures = new Set<string>()
  const hashes = new Set<string>()
  let prev: Json | undefined
  for (const line of lines) {
    const b = line.block
    const where = `slot ${line.slot}`
    stats.blocks++
    if (line.hash !== b.blockhash) problems.push(`${where}: line hash != blockhash`)
    if (line.height !== b.blockHeight) problems.push(`${where}: line height != blockHeight`)
    if (hashes.has(b.blockhash)) problems.push(`${where}: duplicate blockhash`)
    hashes.add(b.blockhash)
    if (prev) {
      if (b.parentSlot !== prev.slot)
        problems.push(`${where}: parentSlot ${b.parentSlot} != previous slot ${prev.slot}`)
      if (b.previousBlockhash !== prev.hash) problems.push(`${where}: previousBlockhash != parent's blockhash`)
      if (!(line.slot > prev.slot)) problems.push(`${where}: slot not increasing`)
      if (b.blockHeight !== prev.block.blockHeight + 1) problems.push(`${where}: blockHeight not parent + 1`)
      if (!(b.blockTime >= prev.block.blockTime)) problems.push(`${where}: blockTime decreasing`)
    }
    if (!(b.parentSlot < line.slot)) problems.push(`${where}: parentSlot not below slot`)
    if (!Array.isArray(b.rewards)) problems.push(`${where}: no rewards list`)
    b.transactions.forEach((tx: Json, i: number) => {
      for (const s of tx.transaction.signatures) {
        if (signatures.has(s)) problems.push(`${where} tx ${i}: duplicate signature ${s}`)
        signatures.add(s)
      }
      validateTx(tx, `${where} tx ${i}`, problems, stats)
    })
    prev = line
  }
  return problems
}
