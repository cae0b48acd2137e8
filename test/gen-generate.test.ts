/**
 * `solportal gen` (src/ingest/generate.ts): determinism, structure of the generated blocks, program mix,
 * re-keying consistency, hot accounts, and that the normalizer takes the blocks as it takes mainnet's.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  BlockGenerator,
  loadTemplates,
  writeArchive,
  JUPITER,
  METEORA_DLMM,
  WHIRLPOOL,
  VOTE_PROGRAM,
  Prng,
  type Template,
} from '../src/ingest/generate.ts'
import { validateArchive, newStats, accountList, type Json } from '../scripts/sample/validate.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { base58Encode } from '../src/util/base58.ts'
import { readArchive } from '../src/ingest/archive.ts'
import { deflateRawSync, gunzipSync } from 'node:zlib'
import { spawnSync } from 'node:child_process'

const templates = loadTemplates()
const gen = (seed: number, blocks: number, txsPerBlock?: number) => {
  const g = new BlockGenerator(templates, { blocks, seed, txsPerBlock })
  const out: Buffer[] = []
  for (let i = 0; i < blocks; i++) out.push(g.nextBuffer())
  return { lines: out, stats: g.stats }
}
const BASE58_RUN = /(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{32,88}(?![1-9A-HJ-NP-Za-km-z])/g

test('deterministic: 20 blocks twice with the same seed are byte-identical; another seed differs', () => {
  const a = gen(42, 20, 300).lines
  const b = gen(42, 20, 300).lines
  assert.equal(a.length, 20)
  for (let i = 0; i < 20; i++) assert.ok(a[i].equals(b[i]), `block ${i} differs`)
  const c = gen(43, 2, 300).lines
  assert.ok(!a[0].equals(c[0]))
})

test('writeArchive streams gzip output, identical across runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-gen-'))
  try {
    const s1 = await writeArchive(join(dir, 'a.jsonl.gz'), { blocks: 5, seed: 9, txsPerBlock: 200, templates })
    await writeArchive(join(dir, 'b.jsonl.gz'), { blocks: 5, seed: 9, txsPerBlock: 200, templates })
    await writeArchive(join(dir, 'c.jsonl'), { blocks: 5, seed: 9, txsPerBlock: 200, templates })
    const a = readFileSync(join(dir, 'a.jsonl.gz'))
    assert.equal(a[0], 0x1f)
    assert.ok(a.equals(readFileSync(join(dir, 'b.jsonl.gz'))))
    const plain = readFileSync(join(dir, 'c.jsonl'), 'utf8')
    assert.equal(plain.split('\n').filter(Boolean).length, 5)
    assert.equal(s1.blocks, 5)
    assert.equal(Buffer.byteLength(plain), s1.bytes)
    assert.equal(gunzipSync(a).toString('utf8'), plain)
    // parallel compression: one gzip member per block, same content, deterministic, read by the archive reader
    await writeArchive(join(dir, 'd.jsonl.gz'), { blocks: 5, seed: 9, txsPerBlock: 200, templates, gzipThreads: 3 })
    await writeArchive(join(dir, 'e.jsonl.gz'), { blocks: 5, seed: 9, txsPerBlock: 200, templates, gzipThreads: 3 })
    const d = readFileSync(join(dir, 'd.jsonl.gz'))
    assert.ok(d.equals(readFileSync(join(dir, 'e.jsonl.gz'))))
    assert.equal(gunzipSync(d).toString('utf8'), plain)
    const slots: number[] = []
    for await (const line of readArchive(join(dir, 'd.jsonl.gz'))) slots.push(line.slot)
    assert.deepEqual(
      slots,
      plain
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).slot),
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

const { lines: sampleLines, stats: sampleStats } = gen(7, 20, 600)
const parsed: Json[] = sampleLines.map((b) => JSON.parse(b.toString('utf8')))

test('generated blocks are structurally valid: chain, indexes, log walk, unique signatures and hashes', () => {
  const stats = newStats()
  const problems = validateArchive(parsed, stats)
  assert.deepEqual(problems.slice(0, 20), [])
  assert.equal(stats.txs, sampleStats.txs)
  assert.equal(stats.topLevel + stats.inner, sampleStats.instructions)
  assert.equal(parsed[0].slot, 310_000_000)
  assert.ok(parsed.at(-1).slot > parsed[0].slot + 18)
  for (const l of parsed) {
    assert.match(l.hash, /^[1-9A-HJ-NP-Za-km-z]{43,44}$/)
    assert.equal(l.block.rewards[0].rewardType, 'Fee')
  }
})

test('program mix: ~70% votes, DEX programs (Jupiter, Whirlpool, Meteora DLMM), compute budget, tokens', () => {
  const counts = new Map<string, number>()
  let votes = 0
  let txs = 0
  for (const l of parsed) {
    for (const tx of l.block.transactions) {
      txs++
      const keys = accountList(tx)
      const progs = new Set<string>()
      for (const ix of tx.transaction.message.instructions) progs.add(keys[ix.programIdIndex])
      for (const g of tx.meta.innerInstructions) for (const ix of g.instructions) progs.add(keys[ix.programIdIndex])
      if (tx.transaction.message.instructions.length === 1 && progs.has(VOTE_PROGRAM)) votes++
      for (const p of progs) counts.set(p, (counts.get(p) ?? 0) + 1)
    }
  }
  assert.ok(votes / txs > 0.62 && votes / txs < 0.78, `vote share ${votes / txs}`)
  for (const p of [
    JUPITER,
    WHIRLPOOL,
    METEORA_DLMM,
    'ComputeBudget111111111111111111111111111111',
    'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
  ])
    assert.ok((counts.get(p) ?? 0) > 10, `${p}: ${counts.get(p)}`)
})

test('default size: 1,000+ transactions and 5,000+ instructions per block', () => {
  const { lines, stats } = gen(1, 3)
  assert.equal(lines.length, 3)
  assert.ok(stats.txs / 3 >= 1000, `${stats.txs / 3} txs per block`)
  assert.ok(stats.instructions / 3 >= 5000, `${stats.instructions / 3} instructions per block`)
})

test('fee payers and accounts are Zipf-like: a few hot ones, many distinct', () => {
  const payers = new Map<string, number>()
  let n = 0
  for (const l of parsed) {
    for (const tx of l.block.transactions) {
      if (tx.transaction.message.accountKeys.includes(VOTE_PROGRAM)) continue
      const p = tx.transaction.message.accountKeys[0]
      payers.set(p, (payers.get(p) ?? 0) + 1)
      n++
    }
  }
  const top = Math.max(...payers.values())
  assert.ok(payers.size > n / 10, `${payers.size} distinct payers of ${n}`)
  assert.ok(top > n / 200, `hottest payer ${top} of ${n}`)
})

/** Map template addresses to instance addresses by position; check the instance is the template re-keyed. */
function checkInstance(t: Template, text: string) {
  const tpl = t.tx
  const inst = JSON.parse(text)
  const map = new Map<string, string>()
  const bind = (a: string, b: string) => {
    const prev = map.get(a)
    if (prev !== undefined) assert.equal(prev, b, `${a} mapped to both ${prev} and ${b}`)
    map.set(a, b)
  }
  const ka = accountList(tpl)
  const kb = accountList(inst)
  assert.equal(ka.length, kb.length)
  ka.forEach((a: string, i: number) => bind(a, kb[i]))
  assert.equal(new Set(kb).size, kb.length, 'account list has duplicates')
  tpl.transaction.signatures.forEach((s: string, i: number) => bind(s, inst.transaction.signatures[i]))
  bind(tpl.transaction.message.recentBlockhash, inst.transaction.message.recentBlockhash)
  ;(tpl.transaction.message.addressTableLookups ?? []).forEach((l: Json, i: number) =>
    bind(l.accountKey, inst.transaction.message.addressTableLookups[i].accountKey),
  )
  for (const side of ['preTokenBalances', 'postTokenBalances'])
    tpl.meta[side].forEach((tb: Json, i: number) => {
      bind(tb.owner, inst.meta[side][i].owner)
      assert.equal(tb.mint, inst.meta[side][i].mint, 'mints are kept')
    })
  // program ids are kept
  for (const ix of tpl.transaction.message.instructions) assert.equal(ka[ix.programIdIndex], kb[ix.programIdIndex])
  for (const s of inst.transaction.signatures) assert.ok(!tpl.transaction.signatures.includes(s))
  const rekeyed = JSON.stringify(tpl).replace(BASE58_RUN, (m) => map.get(m) ?? m)
  assert.equal(rekeyed, text)
  return { map, inst }
}

test('an instance is its template with accounts re-keyed consistently everywhere (logs, token balances, lookups)', () => {
  const g = new BlockGenerator(templates, { blocks: 0, seed: 3 })
  let checked = 0
  let logsRewritten = 0
  let payerChanged = 0
  for (let i = 0; i < templates.all.length; i += 7) {
    const t = templates.all[i]
    const { map, inst } = checkInstance(t, g.instantiate(t))
    checked++
    if (inst.transaction.message.accountKeys[0] !== t.tx.transaction.message.accountKeys[0]) payerChanged++
    const before = (t.tx.meta.logMessages ?? []).join('\n')
    const after = (inst.meta.logMessages ?? []).join('\n')
    if (before !== after) {
      for (const [a, b] of map) if (a !== b && before.includes(a)) assert.ok(after.includes(b) && !after.includes(a))
      logsRewritten++
    }
  }
  assert.ok(checked > 1000)
  assert.equal(payerChanged, checked)
  assert.ok(logsRewritten > 20, `${logsRewritten} instances with re-keyed log lines`)
})

test("the normalizer takes generated blocks without warnings beyond the templates' own, and drops the votes", () => {
  const g = new BlockGenerator(templates, { blocks: 2, seed: 11, txsPerBlock: 400 })
  for (let i = 0; i < 2; i++) {
    const before = g.stats.nonVoteInstructions
    const line = JSON.parse(g.next())
    const r = normalizeBlock(line)
    const kept = line.block.transactions.filter(
      (tx: Json) =>
        !(
          tx.transaction.message.instructions.length === 1 &&
          accountList(tx)[tx.transaction.message.instructions[0].programIdIndex] === VOTE_PROGRAM
        ),
    )
    assert.equal(r.block.transactions.length, kept.length)
    assert.equal(r.block.instructions.length, g.stats.nonVoteInstructions - before)
    // the only warnings the real templates themselves produce are log truncations and walk failures
    for (const w of r.warnings) assert.match(w.message, /truncat|log walk|logs/i, w.message)
  }
})

test('CLI: solportal gen writes the archive and rejects bad options', () => {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-gen-cli-'))
  try {
    const out = join(dir, 'x.jsonl.gz')
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'gen', ...args], { encoding: 'utf8' })
    const ok = run('--blocks', '3', '--out', out, '--seed', '5', '--from-slot', '400000000', '--txs-per-block', '50')
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stderr, /wrote .*3 blocks, slots 400000000\.\./)
    const lines = gunzipSync(readFileSync(out))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.equal(lines.length, 3)
    assert.equal(lines[0].slot, 400_000_000)
    const direct = new BlockGenerator(templates, { blocks: 3, seed: 5, fromSlot: 400_000_000, txsPerBlock: 50 })
    assert.equal(JSON.stringify(lines[2]), (direct.next(), direct.next(), direct.next()).trim())
    const bad = run('--blocks', 'x', '--out', out)
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /--blocks must be an integer/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('fresh addresses and signatures are random text: they compress no better than random base58', () => {
  // the signatures and fee payers of non-vote transactions (all generated: templates' own are replaced)
  const sigs = new Set<string>()
  const payers = new Set<string>()
  for (const l of parsed)
    for (const tx of l.block.transactions) {
      if (tx.transaction.message.accountKeys.includes(VOTE_PROGRAM)) continue
      for (const s of tx.transaction.signatures) sigs.add(s)
      payers.add(tx.transaction.message.accountKeys[0])
    }
  /** deflated size / raw size of the values sorted and concatenated (as a dictionary of a column) */
  const ratio = (values: Set<string>) => {
    const raw = Buffer.from([...values].sort().join(''), 'latin1')
    return deflateRawSync(raw, { level: 9 }).byteLength / raw.byteLength
  }
  // random 32-byte values in base58: each character carries ~log2(58) = 5.86 bits, about 0.73 of
  // a byte; deflate's Huffman coding gets close to that and finds no repeats (text taken from a
  // small pad of random characters, as the generator once did, deflates to ~0.1)
  const rnd = new Set<string>()
  const r = new Prng(7)
  for (let i = 0; i < 2000; i++) rnd.add(base58Encode(new Uint8Array(new Uint32Array(8).map(() => r.u32()).buffer)))
  const floor = ratio(rnd) - 0.03
  assert.ok(sigs.size > 1000 && payers.size > 100, `${sigs.size} signatures, ${payers.size} payers`)
  assert.ok(
    ratio(sigs) > floor,
    `signatures deflate to ${ratio(sigs).toFixed(3)} of their size (random: ${(floor + 0.03).toFixed(3)})`,
  )
  assert.ok(ratio(payers) > floor, `fee payers deflate to ${ratio(payers).toFixed(3)} of their size`)
})

test('version 1 transactions: ~13 % of the non-vote ones, their transactionConfig kept, normalized as v1', () => {
  const { lines } = gen(9, 3, 1500)
  let v1 = 0
  let nonVote = 0
  for (const buf of lines) {
    const line = JSON.parse(buf.toString('utf8'))
    const txs: Json[] = line.block.transactions
    for (const tx of txs) {
      if (tx.transaction.message.instructions.length === 1 && accountList(tx).includes(VOTE_PROGRAM)) continue
      nonVote++
      if (tx.version !== 1) continue
      v1++
      const c = tx.transaction.message.transactionConfig
      assert.ok(c.computeUnitLimit > 0 && !('addressTableLookups' in tx.transaction.message))
    }
    const r = normalizeBlock(line)
    assert.deepEqual(r.warnings, [])
    const got = r.block.transactions.filter((t) => t.version === 1)
    assert.equal(got.length, txs.filter((t) => t.version === 1).length)
    assert.ok(got.every((t) => t.transactionConfig !== null && t.transactionConfig!.computeUnitLimit! > 0))
  }
  assert.ok(v1 > 0.08 * nonVote && v1 < 0.2 * nonVote, `${v1} v1 of ${nonVote} non-vote transactions`)
})
