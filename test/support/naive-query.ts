/**
 * An independent, deliberately naive evaluator of data queries (docs/query.md §2–§4): row by row
 * over `Block` objects, plain objects rendered with JSON.stringify. Shares nothing with the engine
 * except the field catalogue. The query body must already be valid (parseQuery accepts it).
 */
import { fieldsOf, type SelectorName } from '../../src/catalogue.ts'
import type { Block, Instruction, Log, Transaction } from '../../src/model.ts'

export interface NaiveOptions {
  /** inclusive upper bound (the server's min(toBlock, head)) */
  to: number
  bigintsAsNumbers?: boolean
  /** end the output after this block (as if shouldStop() turned true after processing it) */
  stopAfter?: number
}

export interface NaiveBlock {
  number: number
  hash: string
  line: string
}

type Q = Record<string, any>

function inList(list: unknown, v: unknown): boolean {
  return list === undefined || list === null || (list as unknown[]).includes(v)
}

function addrEq(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}

function isPrefixOf(p: number[], a: number[]): boolean {
  return p.length < a.length && p.every((x, i) => x === a[i])
}

function matchInstruction(ins: Instruction, rq: Q): boolean {
  if (!inList(rq.programId, ins.programId)) return false
  for (const k of ['d1', 'd2', 'd3', 'd4', 'd8', 'discriminator']) {
    const vals = rq[k]
    if (vals === undefined || vals === null) continue
    if (!(vals as string[]).some((v) => ins.dataPrefix.startsWith(v.toLowerCase()))) return false
  }
  for (let i = 0; i < 16; i++) {
    const vals = rq[`a${i}`]
    if (vals === undefined || vals === null) continue
    if (i >= ins.accounts.length || !vals.includes(ins.accounts[i])) return false
  }
  if (rq.mentionsAccount != null && !ins.accounts.some((a) => rq.mentionsAccount.includes(a))) return false
  if (rq.isCommitted != null && ins.isCommitted !== rq.isCommitted) return false
  return true
}

function matchTransaction(tx: Transaction, rq: Q): boolean {
  if (!inList(rq.feePayer, tx.feePayer)) return false
  if (rq.mentionsAccount != null) {
    const all = [...tx.accountKeys, ...tx.loadedAddresses.writable, ...tx.loadedAddresses.readonly]
    if (!all.some((a) => rq.mentionsAccount.includes(a))) return false
  }
  return true
}

function matchLog(log: Log, rq: Q): boolean {
  return inList(rq.programId, log.programId) && inList(rq.kind, log.kind)
}

function matchFields(row: Record<string, unknown>, rq: Q, names: string[]): boolean {
  for (const n of names) {
    const vals = rq[n]
    if (vals === undefined || vals === null) continue
    if (row[n] === null || !vals.includes(row[n])) return false
  }
  return true
}

const BIG = '__naive_bigint__'

function record(sel: SelectorName, row: Record<string, unknown>, fields: Q | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (!fields) return out
  for (const def of fieldsOf(sel)) {
    for (const key of def.selectors) {
      if (fields[key] === true) {
        const v = row[def.name]
        out[key] = v === undefined ? null : v
      }
    }
  }
  return out
}

/** Evaluate a (valid) query over blocks; returns the lines the service must produce. */
export function naiveQuery(allBlocks: Block[], query: Q, opts: NaiveOptions): NaiveBlock[] {
  const from: number = query.fromBlock
  let to = opts.to
  if (query.toBlock != null && query.toBlock < to) to = query.toBlock
  const blocks = allBlocks
    .filter((b) => b.header.number >= from && b.header.number <= to)
    .sort((a, b) => a.header.number - b.header.number)
  if (opts.stopAfter !== undefined) {
    const i = blocks.findIndex((b) => b.header.number === opts.stopAfter)
    if (i >= 0) blocks.length = i + 1
  }
  const F: Q = query.fields ?? {}
  const out: NaiveBlock[] = []
  blocks.forEach((block, bi) => {
    const txs = new Set<Transaction>()
    const ins = new Set<Instruction>()
    const logs = new Set<Log>()
    const bals = new Set<object>()
    const toks = new Set<object>()
    const rews = new Set<object>()
    const txOf = (ti: number) => block.transactions.filter((t) => t.transactionIndex === ti)
    const insOf = (ti: number) => block.instructions.filter((t) => t.transactionIndex === ti)
    const add = <T>(s: Set<T>, rows: T[]) => rows.forEach((r) => s.add(r))

    for (const rq of (query.instructions ?? []) as Q[]) {
      for (const i of block.instructions) {
        if (!matchInstruction(i, rq)) continue
        ins.add(i)
        const ti = i.transactionIndex
        if (rq.transaction) add(txs, txOf(ti))
        if (rq.transactionBalances)
          add(
            bals,
            block.balances.filter((b) => b.transactionIndex === ti),
          )
        if (rq.transactionTokenBalances)
          add(
            toks,
            block.tokenBalances.filter((b) => b.transactionIndex === ti),
          )
        if (rq.transactionInstructions) add(ins, insOf(ti))
        if (rq.innerInstructions)
          add(
            ins,
            insOf(ti).filter((x) => isPrefixOf(i.instructionAddress, x.instructionAddress)),
          )
        if (rq.parentInstructions)
          add(
            ins,
            insOf(ti).filter((x) => isPrefixOf(x.instructionAddress, i.instructionAddress)),
          )
        if (rq.logs)
          add(
            logs,
            block.logs.filter((l) => l.transactionIndex === ti && addrEq(l.instructionAddress, i.instructionAddress)),
          )
      }
    }
    for (const rq of (query.transactions ?? []) as Q[]) {
      for (const t of block.transactions) {
        if (!matchTransaction(t, rq)) continue
        txs.add(t)
        const ti = t.transactionIndex
        if (rq.instructions) add(ins, insOf(ti))
        if (rq.balances)
          add(
            bals,
            block.balances.filter((b) => b.transactionIndex === ti),
          )
        if (rq.tokenBalances)
          add(
            toks,
            block.tokenBalances.filter((b) => b.transactionIndex === ti),
          )
        if (rq.logs)
          add(
            logs,
            block.logs.filter((l) => l.transactionIndex === ti),
          )
      }
    }
    for (const rq of (query.logs ?? []) as Q[]) {
      for (const l of block.logs) {
        if (!matchLog(l, rq)) continue
        logs.add(l)
        if (rq.instruction) {
          add(
            ins,
            insOf(l.transactionIndex).filter((x) => addrEq(x.instructionAddress, l.instructionAddress)),
          )
        }
        if (rq.transaction) add(txs, txOf(l.transactionIndex))
      }
    }
    for (const rq of (query.balances ?? []) as Q[]) {
      for (const b of block.balances) {
        if (!matchFields(b as unknown as Record<string, unknown>, rq, ['account'])) continue
        bals.add(b)
        if (rq.transaction) add(txs, txOf(b.transactionIndex))
        if (rq.transactionInstructions) add(ins, insOf(b.transactionIndex))
      }
    }
    for (const rq of (query.tokenBalances ?? []) as Q[]) {
      for (const b of block.tokenBalances) {
        const names = ['account', 'preProgramId', 'postProgramId', 'preMint', 'postMint', 'preOwner', 'postOwner']
        if (!matchFields(b as unknown as Record<string, unknown>, rq, names)) continue
        toks.add(b)
        const ti = b.transactionIndex
        if (rq.transaction) add(txs, txOf(ti))
        if (rq.transactionInstructions) add(ins, insOf(ti))
        if (rq.transactionBalances)
          add(
            bals,
            block.balances.filter((x) => x.transactionIndex === ti),
          )
        if (rq.transactionTokenBalances)
          add(
            toks,
            block.tokenBalances.filter((x) => x.transactionIndex === ti),
          )
      }
    }
    for (const rq of (query.rewards ?? []) as Q[]) {
      for (const w of block.rewards)
        if (matchFields(w as unknown as Record<string, unknown>, rq, ['pubkey'])) rews.add(w)
    }

    const obj: Record<string, unknown> = { header: record('block', block.header as any, F.block) }
    const lists: [string, SelectorName, unknown[], Set<unknown>][] = [
      ['transactions', 'transaction', block.transactions, txs],
      ['instructions', 'instruction', block.instructions, ins],
      ['logs', 'log', block.logs, logs],
      ['balances', 'balance', block.balances, bals],
      ['tokenBalances', 'tokenBalance', block.tokenBalances, toks],
      ['rewards', 'reward', block.rewards, rews],
    ]
    let any = false
    for (const [member, sel, rows, set] of lists) {
      const chosen = rows.filter((r) => set.has(r)) // stored order = output order
      if (chosen.length) {
        any = true
        obj[member] = chosen.map((r) => record(sel, r as Record<string, unknown>, F[sel]))
      }
    }
    const isFirst = bi === 0
    const isLast = bi === blocks.length - 1
    if (!any && !query.includeAllBlocks && !isFirst && !isLast) return
    let line = JSON.stringify(obj, (_k, v) =>
      typeof v === 'bigint' ? (opts.bigintsAsNumbers ? BIG + v : v.toString()) : v,
    )
    if (opts.bigintsAsNumbers) line = line.replace(new RegExp(`"${BIG}(-?[0-9]+)"`, 'g'), '$1')
    out.push({ number: block.header.number, hash: block.header.hash, line })
  })
  return out
}
