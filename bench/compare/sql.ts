/**
 * PostgreSQL side of the comparison bench: the schema (one table per record kind, derived from the
 * field catalogue so that it holds exactly the normalized rows solportal stores), the COPY text
 * encoding of those rows, and a translator from a Portal query (the same JSON body solportal gets)
 * to ONE SQL statement whose result rows are the JSON lines of the response (docs/query.md §2-§3):
 * member order, field selection and order, relations (one hop, deduplicated), row order inside a
 * block, u64 as decimal strings, lists present only when non-empty, the first and the last produced
 * block of the range always present.
 *
 * Supported: every field; instruction requests (programId, d1/d2/d4/d8, a0..a15, mentionsAccount,
 * isCommitted; relations transaction, transactionInstructions, innerInstructions, transactionBalances,
 * transactionTokenBalances, logs); transaction requests (feePayer; relations instructions, balances,
 * tokenBalances, logs); unfiltered requests of the other kinds. Anything else throws (the bench then
 * says so instead of answering something else).
 */
import {
  BLOCK_MEMBERS,
  HEADER_FIELDS,
  RECORD_FIELDS,
  SELECTOR_INDEX,
  type FieldDef,
  type FieldType,
} from '../../src/catalogue.ts'
import type { RecordKind } from '../../src/model.ts'

export const TABLE: Record<RecordKind, string> = {
  transaction: 'transactions',
  instruction: 'instructions',
  log: 'logs',
  balance: 'balances',
  tokenBalance: 'token_balances',
  reward: 'rewards',
}

/** camelCase → "snake_case" (quoted: some names are SQL keywords) */
export function col(name: string): string {
  return '"' + name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase()) + '"'
}

function sqlType(t: FieldType): string {
  switch (t) {
    case 'u32':
      return 'bigint'
    case 'u64':
    case 'i64':
      return 'numeric' // exact, u64 does not fit bigint
    case 'safeAscii':
    case 'string':
      return 'text'
    case 'bool':
      return 'boolean'
    case 'json':
    case 'version':
      return 'json' // json (not jsonb): the text is kept as written, key order included
    case 'address':
      return 'int[]'
    case 'safeAsciiList':
      return 'text[]'
  }
}

/** the SELECT expression rendering a field as JSON (inside json_build_object) */
function renderExpr(def: FieldDef, alias: string): string {
  const c = `${alias}.${col(def.name)}`
  switch (def.type) {
    case 'u64':
    case 'i64':
      return `${c}::text` // "5000"; NULL stays null
    case 'address':
    case 'safeAsciiList':
      return `to_json(${c})`
    default:
      return c
  }
}

export function schemaSql(): string {
  const out: string[] = []
  out.push(
    `CREATE UNLOGGED TABLE blocks (${HEADER_FIELDS.map((f) => `${col(f.name)} ${sqlType(f.type)}${f.nullable ? '' : ' NOT NULL'}`).join(', ')});`,
  )
  for (const kind of Object.keys(TABLE) as RecordKind[]) {
    const cols = [
      `block_number bigint NOT NULL`,
      ...RECORD_FIELDS[kind].map((f) => `${col(f.name)} ${sqlType(f.type)}${f.nullable ? '' : ' NOT NULL'}`),
    ]
    out.push(`CREATE UNLOGGED TABLE ${TABLE[kind]} (${cols.join(', ')});`)
  }
  return out.join('\n')
}

/** Indexes built after the load (documented in the bench output). */
export const INDEXES: string[] = [
  `CREATE UNIQUE INDEX blocks_number ON blocks ("number")`,
  `CREATE INDEX transactions_bt ON transactions (block_number, transaction_index)`,
  `CREATE INDEX transactions_fee_payer ON transactions (fee_payer)`,
  `CREATE INDEX instructions_bt ON instructions (block_number, transaction_index)`,
  `CREATE INDEX instructions_program_d8 ON instructions (program_id, d8)`,
  `CREATE INDEX instructions_accounts ON instructions USING gin (accounts)`,
  `CREATE INDEX logs_bt ON logs (block_number, transaction_index)`,
  `CREATE INDEX balances_bt ON balances (block_number, transaction_index)`,
  `CREATE INDEX token_balances_bt ON token_balances (block_number, transaction_index)`,
  `CREATE INDEX rewards_b ON rewards (block_number)`,
]

// ------------------------------------------------------------------------------ COPY text encoding
const NEEDS_ESC = /[\\\t\n\r]/
function copyText(s: string): string {
  return NEEDS_ESC.test(s)
    ? s.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
    : s
}
const ARRAY_SAFE = /^[1-9A-HJ-NP-Za-km-z]+$/
function arrayLiteral(v: readonly string[]): string {
  // base58 needs no quoting; anything else is quoted and escaped for the array parser
  let s = '{'
  for (let i = 0; i < v.length; i++) {
    if (i) s += ','
    const x = v[i]
    s += ARRAY_SAFE.test(x) ? x : '"' + x.replace(/["\\]/g, (c) => '\\' + c) + '"'
  }
  return s + '}'
}
function jsonText(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))
}

/** A COPY text encoder of one value of a field type. */
export function encoder(t: FieldType): (v: unknown) => string {
  switch (t) {
    case 'u32':
    case 'u64':
    case 'i64':
      return (v) => (v === null || v === undefined ? '\\N' : String(v))
    case 'safeAscii':
      return (v) => (v === null || v === undefined ? '\\N' : (v as string))
    case 'string':
      return (v) => (v === null || v === undefined ? '\\N' : copyText(v as string))
    case 'bool':
      return (v) => (v ? 't' : 'f')
    case 'json':
    case 'version':
      return (v) => (v === null || v === undefined ? '\\N' : copyText(jsonText(v)))
    case 'address':
      return (v) => '{' + (v as number[]).join(',') + '}'
    case 'safeAsciiList':
      return (v) => copyText(arrayLiteral(v as string[]))
  }
}

// ------------------------------------------------------------------------------ query → SQL
/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any

const KEY_COLS: Record<RecordKind, string[]> = {
  transaction: ['block_number', 'transaction_index'],
  instruction: ['block_number', 'transaction_index', 'instruction_address'],
  log: ['block_number', 'transaction_index', 'log_index'],
  balance: ['block_number', 'transaction_index', 'account'],
  tokenBalance: ['block_number', 'transaction_index', 'account'],
  reward: ['block_number', 'pubkey', 'reward_type'],
}
const ORDER: Record<RecordKind, string> = {
  transaction: 'r.transaction_index',
  instruction: 'r.transaction_index, r.instruction_address',
  log: 'r.transaction_index, r.log_index',
  balance: 'r.transaction_index, r.account',
  tokenBalance: 'r.transaction_index, r.account',
  reward: 'r.pubkey, r.reward_type NULLS FIRST',
}

const lit = (s: string) => `'${String(s).replace(/'/g, "''")}'`
const inList = (c: string, vals: unknown) => {
  if (!Array.isArray(vals)) throw new Error(`filter ${c}: expected a list`)
  return vals.length === 0 ? 'false' : `${c} IN (${vals.map((v) => lit(String(v))).join(', ')})`
}

interface Contribution {
  /** a predicate on `r` of the kind's own table, or */
  where?: string
  /** a SELECT of the kind's key columns */
  keys?: string
}

/** Field definitions selected for `selector` by the query, in catalogue (= output) order. */
function selected(q: Json, selector: 'block' | RecordKind): { def: FieldDef; key: string }[] {
  const sel = q.fields?.[selector] as Record<string, boolean> | undefined
  if (!sel) return []
  const index = SELECTOR_INDEX[selector]
  const defs = selector === 'block' ? HEADER_FIELDS : RECORD_FIELDS[selector]
  const out: { def: FieldDef; key: string }[] = []
  for (const def of defs) {
    for (const [name, on] of Object.entries(sel)) if (on && index.get(name) === def) out.push({ def, key: name })
  }
  return out
}

function buildObject(fields: { def: FieldDef; key: string }[], alias: string): string {
  if (fields.length === 0) return `json_build_object()`
  return `json_build_object(${fields.map((f) => `${lit(f.key)}, ${renderExpr(f.def, alias)}`).join(', ')})`
}

export function querySql(q: Json): string {
  const from = Number(q.fromBlock)
  const to = Number(q.toBlock)
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) throw new Error('fromBlock and toBlock are required')
  const range = `r.block_number BETWEEN ${from} AND ${to}`
  const ctes: string[] = []
  const contrib: Record<RecordKind, Contribution[]> = {
    transaction: [],
    instruction: [],
    log: [],
    balance: [],
    tokenBalance: [],
    reward: [],
  }
  const txOf = (m: string) => `SELECT DISTINCT block_number, transaction_index FROM ${m}`
  const byTx = (kind: RecordKind, m: string) =>
    `SELECT ${KEY_COLS[kind].map((c) => 'r.' + c).join(', ')} FROM ${TABLE[kind]} r JOIN (${txOf(m)}) m USING (block_number, transaction_index)`

  const known = new Set([
    'type',
    'fromBlock',
    'toBlock',
    'includeAllBlocks',
    'fields',
    'instructions',
    'transactions',
    'logs',
    'balances',
    'tokenBalances',
    'rewards',
  ])
  for (const k of Object.keys(q)) if (!known.has(k)) throw new Error(`querySql: unsupported member ${k}`)

  ;(q.instructions ?? []).forEach((req: Json, i: number) => {
    const conds: string[] = [range]
    const rels = new Set<string>()
    for (const [k, v] of Object.entries(req)) {
      if (k === 'programId') conds.push(inList('r.program_id', v))
      else if (/^d(1|2|4|8)$/.test(k))
        conds.push(
          inList(
            `r.${k}`,
            (v as string[]).map((x) => x.toLowerCase()),
          ),
        )
      else if (/^a([0-9]|1[0-5])$/.test(k)) conds.push(inList(`r.accounts[${Number(k.slice(1)) + 1}]`, v))
      else if (k === 'mentionsAccount')
        conds.push(
          (v as string[]).length ? `r.accounts && ARRAY[${(v as string[]).map(lit).join(', ')}]::text[]` : 'false',
        )
      else if (k === 'isCommitted') conds.push(`r.is_committed = ${v ? 'true' : 'false'}`)
      else if (
        [
          'transaction',
          'transactionInstructions',
          'innerInstructions',
          'transactionBalances',
          'transactionTokenBalances',
          'logs',
        ].includes(k)
      ) {
        if (v) rels.add(k)
      } else throw new Error(`querySql: unsupported instruction request member ${k}`)
    }
    const where = conds.join(' AND ')
    if (rels.size === 0) {
      contrib.instruction.push({ where })
      return
    }
    const m = `m_ins${i}`
    ctes.push(
      `${m} AS MATERIALIZED (SELECT r.block_number, r.transaction_index, r.instruction_address FROM instructions r WHERE ${where})`,
    )
    contrib.instruction.push({ keys: `SELECT block_number, transaction_index, instruction_address FROM ${m}` })
    if (rels.has('transaction')) contrib.transaction.push({ keys: txOf(m) })
    if (rels.has('transactionInstructions')) contrib.instruction.push({ keys: byTx('instruction', m) })
    if (rels.has('transactionBalances')) contrib.balance.push({ keys: byTx('balance', m) })
    if (rels.has('transactionTokenBalances')) contrib.tokenBalance.push({ keys: byTx('tokenBalance', m) })
    if (rels.has('innerInstructions'))
      contrib.instruction.push({
        keys:
          `SELECT r.block_number, r.transaction_index, r.instruction_address FROM instructions r JOIN ${m} m USING (block_number, transaction_index) ` +
          `WHERE cardinality(r.instruction_address) > cardinality(m.instruction_address) AND r.instruction_address[1:cardinality(m.instruction_address)] = m.instruction_address`,
      })
    if (rels.has('logs'))
      contrib.log.push({
        keys: `SELECT r.block_number, r.transaction_index, r.log_index FROM logs r JOIN ${m} m USING (block_number, transaction_index, instruction_address)`,
      })
  })

  ;(q.transactions ?? []).forEach((req: Json, i: number) => {
    const conds: string[] = [range]
    const rels = new Set<string>()
    for (const [k, v] of Object.entries(req)) {
      if (k === 'feePayer') conds.push(inList('r.fee_payer', v))
      else if (['instructions', 'balances', 'tokenBalances', 'logs'].includes(k)) {
        if (v) rels.add(k)
      } else throw new Error(`querySql: unsupported transaction request member ${k}`)
    }
    const where = conds.join(' AND ')
    if (rels.size === 0) {
      contrib.transaction.push({ where })
      return
    }
    const m = `m_tx${i}`
    ctes.push(`${m} AS MATERIALIZED (SELECT r.block_number, r.transaction_index FROM transactions r WHERE ${where})`)
    contrib.transaction.push({ keys: `SELECT block_number, transaction_index FROM ${m}` })
    if (rels.has('instructions')) contrib.instruction.push({ keys: byTx('instruction', m) })
    if (rels.has('balances')) contrib.balance.push({ keys: byTx('balance', m) })
    if (rels.has('tokenBalances')) contrib.tokenBalance.push({ keys: byTx('tokenBalance', m) })
    if (rels.has('logs')) contrib.log.push({ keys: byTx('log', m) })
  })

  for (const [member, kind] of [
    ['logs', 'log'],
    ['balances', 'balance'],
    ['tokenBalances', 'tokenBalance'],
    ['rewards', 'reward'],
  ] as const) {
    for (const req of (q[member] ?? []) as Json[]) {
      if (Object.keys(req).length > 0)
        throw new Error(`querySql: filters/relations of ${member} requests are not supported`)
      contrib[kind].push({ where: range })
    }
  }

  // per kind: the rendered rows of each block
  const joins: string[] = []
  const members: string[] = []
  const present: string[] = []
  for (const { kind, member } of BLOCK_MEMBERS) {
    const cs = contrib[kind]
    if (cs.length === 0) continue
    const obj = buildObject(selected(q, kind), 'r')
    const o = `o_${kind}`
    let body: string
    if (cs.every((c) => c.where)) {
      body = `SELECT r.block_number, json_agg(${obj} ORDER BY ${ORDER[kind]}) AS j FROM ${TABLE[kind]} r WHERE ${cs.map((c) => `(${c.where})`).join(' OR ')} GROUP BY r.block_number`
    } else {
      const keys = cs.map(
        (c) =>
          c.keys ?? `SELECT ${KEY_COLS[kind].map((k) => 'r.' + k).join(', ')} FROM ${TABLE[kind]} r WHERE ${c.where}`,
      )
      ctes.push(`k_${kind} AS MATERIALIZED (${keys.join('\nUNION\n')})`)
      body =
        `SELECT r.block_number, json_agg(${obj} ORDER BY ${ORDER[kind]}) AS j FROM ${TABLE[kind]} r ` +
        `JOIN k_${kind} k USING (${KEY_COLS[kind].join(', ')}) GROUP BY r.block_number`
      if (kind === 'reward')
        body = body.replace(
          `USING (${KEY_COLS.reward.join(', ')})`,
          `ON k.block_number = r.block_number AND k.pubkey = r.pubkey AND k.reward_type IS NOT DISTINCT FROM r.reward_type`,
        )
    }
    ctes.push(`${o} AS (${body})`)
    joins.push(`LEFT JOIN ${o} ON ${o}.block_number = b."number"`)
    members.push(`coalesce(',"${member}":' || ${o}.j::text, '')`)
    present.push(`${o}.j IS NOT NULL`)
  }
  ctes.push(
    `bounds AS (SELECT min("number") AS lo, max("number") AS hi FROM blocks WHERE "number" BETWEEN ${from} AND ${to})`,
  )
  const header = buildObject(selected(q, 'block'), 'b')
  const keep = q.includeAllBlocks
    ? 'true'
    : ['b."number" = bounds.lo', 'b."number" = bounds.hi', ...present].join(' OR ')
  return (
    `WITH ${ctes.join(',\n')}\n` +
    `SELECT '{"header":' || ${header}::text${members.map((m) => ' || ' + m).join('')} || '}'\n` +
    `FROM blocks b CROSS JOIN bounds ${joins.join(' ')}\n` +
    `WHERE b."number" BETWEEN ${from} AND ${to} AND (${keep})\n` +
    `ORDER BY b."number"`
  )
}
