/**
 * `normalizeArchiveText` (text in, records out, one transaction parsed at a time) must give exactly
 * what `normalizeBlock(toArchiveLine(parseJsonExact(text)))` gives, and throw what it throws.
 */
import assert from 'node:assert/strict'
import { isAscii } from 'node:buffer'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import fc from 'fast-check'
import type { Block } from '../src/model.ts'
import { normalizeBlock, type NormalizeResult } from '../src/normalize/normalize.ts'
import { normalizeArchiveBytesInto, normalizeArchiveText } from '../src/normalize/text.ts'
import { parseJsonExact, stringifyExact } from '../src/rpc/json.ts'
import { toArchiveLine } from '../src/rpc/line.ts'
import { parseElement, splitTransactions } from '../src/rpc/split.ts'
import { splitTransactionBytes } from '../src/rpc/split-bytes.ts'
import { DATA, wholeBlock } from './fixtures/normalize/blocks.ts'
import { CB, PA, PB, consumed, invoke, log, success, synthBlock } from './fixtures/normalize/synth.ts'

function plain(text: string, includeVotes = false): NormalizeResult | { error: string } {
  try {
    return normalizeBlock(toArchiveLine(parseJsonExact(text)), { includeVotes })
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` }
  }
}

function viaText(text: string, includeVotes = false): NormalizeResult | { error: string } {
  try {
    return normalizeArchiveText(text, { includeVotes })
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` }
  }
}

const LISTS = ['transactions', 'instructions', 'logs', 'balances', 'tokenBalances', 'rewards'] as const

/** `normalizeArchiveBytesInto` of the text's UTF-8 bytes, its slices joined into one result */
function viaBytes(text: string, includeVotes = false): NormalizeResult | { error: string } {
  const slices: Block[] = []
  try {
    const r = normalizeArchiveBytesInto(Buffer.from(text), { includeVotes }, { every: 7, take: (x) => slices.push(x) })
    const block = { header: r.block.header } as Block
    for (const k of LISTS) (block[k] as unknown[]) = slices.flatMap((x) => x[k] as unknown[])
    return { block, warnings: r.warnings }
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` }
  }
}

/** the text path and the bytes path give what the plain path gives (result or error) */
function same(text: string, what: string): void {
  for (const includeVotes of [false, true]) {
    const want = plain(text, includeVotes)
    assert.deepStrictEqual(viaText(text, includeVotes), want, `${what} (includeVotes ${includeVotes})`)
    assert.deepStrictEqual(viaBytes(text, includeVotes), want, `${what}, from bytes (includeVotes ${includeVotes})`)
  }
}

const mainnetText = (): string =>
  gunzipSync(readFileSync(join(DATA, 'blocks/254170887.jsonl.gz')))
    .toString('utf8')
    .trim()

test('the whole mainnet block (votes, big balances, v0 transactions): same records and warnings', () => {
  const text = mainnetText()
  const split = splitTransactions(text, ['block'])
  assert.ok(split, 'the mainnet block splits')
  assert.equal(split.spans.length / 2, wholeBlock().block.transactions!.length)
  // balances above 2^53 in it are found as big integers, outside strings
  assert.ok(split.bigInts.some((b) => b !== null && b.length > 0))
  same(text, 'mainnet block')
})

test('the bundled litesvm sample and compact / pretty-printed re-serializations: same result', () => {
  const sample = gunzipSync(readFileSync(join(DATA, '../sample/litesvm.jsonl.gz')))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
  assert.ok(sample.length > 10)
  for (const t of sample.slice(0, 20)) same(t, 'sample line')
  const line = wholeBlock()
  same(stringifyExact(line), 'compact')
  const pretty = JSON.stringify(JSON.parse(stringifyExact(line)), null, 2)
  assert.ok(splitTransactions(pretty, ['block']))
  same(pretty, 'pretty-printed')
})

/** one synthetic block with a few transactions, as text */
function synthText(): string {
  const line = synthBlock([
    {
      top: [{ p: PA, data: '3Bxs4NPCZMKNg6oy' }],
      logs: [invoke(PA, 1), log('12345678901234567890, "x": 98765432109876543210]'), consumed(PA, 100), success(PA)],
      sig: 'Sa',
    },
    {
      top: [
        { p: CB, data: 'JC3gyu' },
        { p: PB, data: '2' },
      ],
      logs: [invoke(CB, 1), success(CB), invoke(PB, 1), success(PB)],
      sig: 'Sb',
    },
  ])
  const text = stringifyExact(line)
  // balances above 2^53 (exact only as strings) on the first transaction
  return text
    .replace('"preBalances":[10,', '"preBalances":[18446744073709551615,')
    .replace('"postBalances":[5,', '"postBalances":[18446744073709551614,')
}

test('big integers: outside strings quoted exactly, inside log text untouched', () => {
  const text = synthText()
  const r = viaText(text) as NormalizeResult
  assert.ok(!('error' in r))
  const b = r.block.balances.find((x) => x.pre === 18446744073709551615n)
  assert.ok(b, 'the u64 balance is exact')
  assert.equal(b.post, 18446744073709551614n)
  assert.ok(r.block.logs.some((l) => l.message.includes('12345678901234567890, "x": 98765432109876543210]')))
  same(text, 'synthetic')
})

test('shapes the split does not follow fall back to the plain path (same result or same error)', () => {
  const text = synthText()
  const cases: [string, string][] = [
    ['escaped key', text.replace('"transactions":', '"transactio\\u006es":')],
    ['repeated transactions key', text.replace('"transactions":', '"transactions":[],"transactions":')],
    ['repeated block key', text.replace('"block":', '"block":{},"block":')],
    ['transactions not a list', text.replace(/"transactions":\[.*\],"rewards"/, '"transactions":7,"rewards"')],
    ['a number among transactions', text.replace('"transactions":[', '"transactions":[12345678901234567890,')],
    ['a null transaction', text.replace('"transactions":[', '"transactions":[null,')],
    ['invalid JSON inside a transaction', text.replace('"accountKeys":[', '"accountKeys":[,')],
    ['invalid JSON in the header', text.replace('"blockhash":', '"blockhash"')],
    ['trailing garbage', text + ' x'],
    [
      'bad slot and a broken transaction',
      text.replace('"slot":', '"slot":-').replace('"accountKeys":[', '"accountKeys":[,'),
    ],
    ['bad slot', text.replace(/"slot":\d+/, '"slot":"x"')],
    ['not an object', '[' + text + ']'],
    ['truncated', text.slice(0, text.length - 100)],
    ['unterminated string', text.slice(0, text.indexOf('"accountKeys"') + 5)],
    ['an escaped key with a control character', text.replace('"blockTime":', '"blockTim\\u0065\t":')],
  ]
  for (const [what, t] of cases) same(t, what)
  const errored = cases.map(([, t]) => viaText(t)).filter((r) => 'error' in r)
  assert.ok(errored.length >= 6, 'the broken texts throw')
  assert.equal(splitTransactions(cases[1][1], ['block']), null)
})

test('random values anywhere in the block: same result as the plain path (property)', () => {
  const base = JSON.parse(stringifyExact(wholeBlock())) as { block: { transactions: Record<string, unknown>[] } }
  base.block.transactions = base.block.transactions.slice(150, 170)
  const ws = fc.constantFrom('', ' ', '\n', '\t ')
  fc.assert(
    fc.property(
      fc.jsonValue(),
      fc.nat(19),
      fc.string(),
      ws,
      fc.bigInt({ min: 0n, max: 2n ** 64n }),
      (v, k, key, w, big) => {
        const copy = JSON.parse(JSON.stringify(base)) as typeof base
        copy.block.transactions[k][key] = v
        ;(copy.block as Record<string, unknown>)[key] = v
        let text = JSON.stringify(copy).replaceAll(',"', ',' + w + '"')
        text = text.replace('"fee":', `"fee":${w}${big}${w},"fee2":`)
        same(text, 'random')
      },
    ),
    { numRuns: 60 },
  )
})

test('splitTransactions: each element parses to what the whole parse has there', () => {
  const text = synthText()
  const split = splitTransactions(text, ['block'])
  assert.ok(split)
  const whole = parseJsonExact(text) as { block: { transactions: unknown[] } }
  const n = split.spans.length / 2
  assert.equal(n, whole.block.transactions.length)
  for (let i = 0; i < n; i++) assert.deepStrictEqual(parseElement(text, split, i), whole.block.transactions[i])
  assert.deepStrictEqual(parseJsonExact(split.skeleton), { ...whole, block: { ...whole.block, transactions: [] } })
  // a bare getBlock result and a JSON-RPC answer split the same way
  const bare = stringifyExact(whole.block)
  assert.equal(splitTransactions(bare, [])?.spans.length, split.spans.length)
  assert.equal(
    splitTransactions(`{"jsonrpc":"2.0","result":${bare},"id":1}`, ['result'])?.spans.length,
    split.spans.length,
  )
})

/** the text of the first transaction up to its first `:` (what a guessed split looks for) */
function opening(text: string): string {
  const at = text.indexOf('"transactions":[') + '"transactions":['.length
  return text.slice(at, text.indexOf(':', at) + 1)
}

test('guessed split: the exact elements on real blocks, big integers in and out of strings', () => {
  const text = mainnetText()
  const exact = splitTransactions(text, ['block'])!
  const guessed = splitTransactions(text, ['block'], true)!
  assert.equal(guessed.guessed, true)
  assert.equal(exact.guessed, false)
  assert.deepStrictEqual(guessed.spans, exact.spans)
  assert.equal(guessed.skeleton, exact.skeleton)
  // the big balances are found where the exact split finds them
  for (let i = 0; i < exact.bigInts.length; i++) {
    if ((exact.bigInts[i]?.length ?? 0) > 0) assert.deepStrictEqual(guessed.bigInts[i], exact.bigInts[i])
  }
  const synth = synthText()
  const g = splitTransactions(synth, ['block'], true)!
  assert.equal(g.guessed, true)
  // the first transaction has u64 balances outside strings and big-integer-like text in a log line
  assert.ok(g.bigInts[0]!.length >= 6)
  const whole = parseJsonExact(synth) as { block: { transactions: unknown[] } }
  assert.equal(g.spans.length / 2, whole.block.transactions.length)
  for (let i = 0; i < g.spans.length / 2; i++)
    assert.deepStrictEqual(parseElement(synth, g, i), whole.block.transactions[i])
})

test('guessed split: a nested value that looks like the start of a transaction is cut, and the exact split used', () => {
  const synth = synthText()
  const decoy = synth.replace('"accountKeys":[', `"decoy":[{},${opening(synth)}1}],"accountKeys":[`)
  assert.notEqual(decoy, synth)
  const exact = splitTransactions(decoy, ['block'])!
  const guessed = splitTransactions(decoy, ['block'], true)!
  assert.equal(guessed.guessed, true)
  assert.equal(guessed.spans.length / 2, exact.spans.length / 2 + 1, 'the decoy adds a cut')
  assert.throws(() => parseElement(decoy, guessed, 0))
  same(decoy, 'decoy')
  const r = viaText(decoy) as NormalizeResult
  assert.equal(r.block.transactions.length, 2)
  // whitespace between the elements, as pretty printers write it
  const spaced = synth.replaceAll('},{', '},\n  {')
  const s = splitTransactions(spaced, ['block'], true)!
  assert.equal(s.spans.length / 2, 2)
  same(spaced, 'spaced')
})

test('guessed split: u64 edges, rejected number forms, escapes and unicode give what the plain path gives', () => {
  const synth = synthText()
  const forms = [
    '9007199254740991', // 2^53 - 1
    '9007199254740992',
    '9007199254740993', // 2^53 + 1: exact only as a string
    '18446744073709551615', // 2^64 - 1
    '18446744073709551616', // 2^64
    '-1',
    '-9007199254740993',
    '1.5',
    '1e3',
    '2E+20',
    '12345678901234567890.0',
    '-0',
    '"5000"',
    '" 5000"',
  ]
  for (const fee of forms) {
    const text = synth.replace('"fee":5000', `"fee":${fee}`)
    assert.notEqual(text, synth)
    const split = splitTransactions(text, ['block'], true)!
    assert.equal(split.guessed, true, fee)
    same(text, `fee ${fee}`)
  }
  // big balances at the edges, in the second transaction (the one measured exactly)
  const edges = synth.replace(/("preBalances":\[)(\d+)([^\]]*\],)("postBalances":\[)(\d+)/g, (m, a, _b, c, d, _e) =>
    m.includes('18446744073709551615') ? m : `${a}9007199254740993${c}${d}18446744073709551615`,
  )
  assert.notEqual(edges, synth)
  same(edges, 'balance edges')
  const r = viaText(edges) as NormalizeResult
  assert.ok(
    r.block.balances.some((b) => b.pre === 9007199254740993n && b.post === 18446744073709551615n),
    'the balances at the edges are exact',
  )
  // escapes and unicode in log text, and a log line that looks like the start of a transaction
  const logged = synth.replace(
    '"Program log: ',
    `"Program log: caf\\u00e9 \\"q\\" \\\\ \\n ✓ 𝄞 },{\\"transaction\\":{} 18446744073709551615, `,
  )
  assert.notEqual(logged, synth)
  const s = splitTransactions(logged, ['block'], true)!
  assert.equal(s.guessed, true)
  assert.equal(s.spans.length / 2, 2)
  same(logged, 'escapes and unicode')
  const withLog = viaText(logged) as NormalizeResult
  // a line break makes the line `other`: its message is the whole line
  const msg = 'Program log: café "q" \\ \n ✓ 𝄞 },{"transaction":{} 18446744073709551615, '
  assert.ok(
    withLog.block.logs.some((l) => l.kind === 'other' && l.message.startsWith(msg)),
    'the log line with escapes and unicode',
  )
})

test('split from the bytes: the guessed split of the text, byte for byte, and the text path for what it does not take', () => {
  const synth = synthText()
  for (const [what, text] of [
    ['mainnet block', mainnetText()],
    ['synthetic', synth],
    ['spaced', synth.replaceAll('},{', '},\n  {')],
  ] as const) {
    const b = Buffer.from(text)
    assert.ok(isAscii(b), `${what} is ASCII`)
    const bytes = splitTransactionBytes(b, ['block'])
    const guessed = splitTransactions(text, ['block'], true)!
    assert.ok(bytes, `${what} splits from its bytes`)
    assert.deepEqual(bytes.spans, guessed.spans, `${what}: the spans of the guessed split`)
    assert.equal(bytes.skeleton, guessed.skeleton, `${what}: the skeleton`)
    assert.equal(bytes.last, text.slice(bytes.spans.at(-2), bytes.spans.at(-1)))
  }
  // a decoy cut: the bytes give the guessed pieces (one does not parse: the text path is taken)
  const decoy = synth.replace('"accountKeys":[', `"decoy":[{},${opening(synth)}1}],"accountKeys":[`)
  assert.equal(splitTransactionBytes(Buffer.from(decoy), ['block'])!.spans.length / 2, 3)
  same(decoy, 'decoy, from bytes')
  // a decoy late in the mainnet block: slices given before the piece fails are not given again
  const main = mainnetText()
  const first = splitTransactions(main, ['block'])!.spans[0]
  const late = [...main.matchAll(/"accountKeys":\s*\[/g)][400].index
  const lateDecoy =
    main.slice(0, late) + `"decoy":[{},${main.slice(first, main.indexOf(':', first) + 1)}1}],` + main.slice(late)
  const parts = splitTransactionBytes(Buffer.from(lateDecoy), ['block'])!
  assert.equal(parts.spans.length, splitTransactions(main, ['block'])!.spans.length + 2)
  same(lateDecoy, 'a decoy in the 400th transaction, from bytes')
  // around the array, checked exactly: a repeated key after it, no array, an empty one
  const repeated = synth.replace(/,"rewards":\[\]\}\}$/, ',"transactions":[],"rewards":[]}}')
  assert.notEqual(repeated, synth)
  same(repeated, 'a repeated transactions key after the array')
  assert.equal(splitTransactionBytes(Buffer.from(repeated), ['block']), null)
  assert.equal(splitTransactionBytes(Buffer.from(synth.replace('"transactions":', '"transactionz":')), ['block']), null)
  const empty = synth.replace(/"transactions":\[.*\],"rewards"/, '"transactions":[],"rewards"')
  assert.equal(splitTransactionBytes(Buffer.from(empty), ['block']), null)
  same(empty, 'no transactions')
  // a line that is not ASCII goes the text way, with its characters decoded as UTF-8
  const accented = synth.replace('"Program log: ', '"Program log: café ✓ ')
  assert.ok(!isAscii(Buffer.from(accented)))
  same(accented, 'not ASCII')
  const r = viaBytes(accented) as NormalizeResult
  assert.ok(r.block.logs.some((l) => l.message.includes('café ✓')))
})
