/** parseJsonExact, archive reading/writing and the `normalize` command. */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import fc from 'fast-check'
import { runNormalize } from '../src/cli/commands/normalize-files.ts'
import { formatArchiveLine, readArchive } from '../src/ingest/archive.ts'
import { parseJsonExact, stringifyExact } from '../src/rpc/json.ts'
import type { ArchiveLine } from '../src/rpc/types.ts'
import { DATA, wholeBlock } from './fixtures/normalize/blocks.ts'

const tmp = mkdtempSync(join(tmpdir(), 'solportal-normalize-'))
after(() => rmSync(tmp, { recursive: true, force: true }))

test('parseJsonExact equals JSON.parse on JSON without big integers (property)', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
      const text = JSON.stringify(v)
      // fc.jsonValue yields only safe integers and doubles; doubles print with '.', 'e' or are small
      const hasBig = /(^|[^\d."\\eE+-])-?\d{16,}(?![\d.eE])/.test(text.replace(/"(?:[^"\\]|\\.)*"/g, '""'))
      if (!hasBig) assert.deepStrictEqual(parseJsonExact(text), JSON.parse(text))
    }),
    { numRuns: 3000 },
  )
})

test('parseJsonExact: big integers anywhere, strings with digits/quotes/escapes untouched (property)', () => {
  const str = fc
    .array(fc.constantFrom('12345678901234567890', ':', ',', '[', ' ', '"', '\\', 'a', '-', '9', '\u00e9', '\n'), {
      maxLength: 8,
    })
    .map((a) => a.join(''))
  const int = fc.oneof(fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), fc.bigInt({ min: -1000n, max: 1000n }))
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, int, str, fc.boolean(), fc.constant(null), tie('arr'), tie('obj')),
    arr: fc.array(tie('value'), { maxLength: 4 }),
    obj: fc.dictionary(str, tie('value'), { maxKeys: 4 }),
  }))
  // expected: integers with more than 15 digits as decimal strings, the others as numbers
  const expect = (v: unknown): unknown => {
    if (typeof v === 'bigint') return (v < 0n ? -v : v).toString().length > 15 ? v.toString() : Number(v)
    if (Array.isArray(v)) return v.map(expect)
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expect(x)]))
    return v
  }
  // a serializer that puts whitespace after every delimiter (outside strings only)
  const ser = (v: unknown, ws: string): string =>
    typeof v === 'bigint'
      ? v.toString()
      : Array.isArray(v)
        ? '[' + ws + v.map((x) => ser(x, ws)).join(',' + ws) + ']'
        : v !== null && typeof v === 'object'
          ? '{' +
            Object.entries(v)
              .map(([k, x]) => JSON.stringify(k) + ':' + ws + ser(x, ws))
              .join(',' + ws) +
            '}'
          : JSON.stringify(v)
  fc.assert(
    fc.property(value, fc.constantFrom('', ' ', '\n\t '), (v, ws) => {
      assert.deepStrictEqual(parseJsonExact(ser(v, ws)), expect(v))
    }),
    { numRuns: 2000 },
  )
  assert.equal(stringifyExact([1n, -(2n ** 70n)]), '[1,' + -(2n ** 70n) + ']')
})

test('parseJsonExact: integers of more than 15 digits become exact decimal strings, nothing else changes', () => {
  const text =
    '{"a":18446744073709551615,"b":-9223372036854775808,"c":123456789012345,"d":1234567890123456,' +
    '"e":1.2345678901234567,"f":12345678901234567e2,"g":"12345678901234567890","h":"q\\"99999999999999999\\\\",' +
    '"i":[0,-0,99999999999999999 , 1e400],"j":{"k":[18446744073709551615]},"l":0.000000000000000001,"m":true,"n":null}'
  assert.deepStrictEqual(parseJsonExact(text), {
    a: '18446744073709551615',
    b: '-9223372036854775808',
    c: 123456789012345,
    d: '1234567890123456',
    e: 1.2345678901234567,
    f: 12345678901234567e2,
    g: '12345678901234567890',
    h: 'q"99999999999999999\\',
    i: [0, -0, '99999999999999999', Infinity],
    j: { k: ['18446744073709551615'] },
    l: 0.000000000000000001,
    m: true,
    n: null,
  })
  assert.equal(parseJsonExact('12345678901234567890'), '12345678901234567890')
  assert.throws(() => parseJsonExact('{"a": 1,}'), SyntaxError)
  assert.throws(() => parseJsonExact('"unterminated'), SyntaxError)
  assert.throws(() => parseJsonExact('[12345678901234567890'), SyntaxError)
  // round trip through stringifyExact with bigints
  assert.equal(
    stringifyExact({ a: 18446744073709551615n, b: [1, 'x', null], c: undefined }),
    '{"a":18446744073709551615,"b":[1,"x",null]}',
  )
})

test('formatArchiveLine ↔ parseJsonExact round trip of the whole real block', () => {
  const line = wholeBlock()
  const text = formatArchiveLine(line)
  assert.ok(!text.includes('\n'))
  assert.deepStrictEqual(parseJsonExact(text), {
    slot: line.slot,
    hash: line.hash,
    height: line.height,
    block: line.block,
  })
  // defaults: hash and height from the block
  const bare: ArchiveLine = { slot: 7, block: { ...line.block, transactions: [] } }
  assert.deepStrictEqual(JSON.parse(formatArchiveLine(bare)).hash, line.block.blockhash)
  assert.deepStrictEqual(JSON.parse(formatArchiveLine(bare)).height, line.block.blockHeight)
  // decimal strings under u64 keys are written back as bare numbers; token amounts stay strings
  const big: ArchiveLine = {
    slot: 1,
    block: {
      blockhash: 'h',
      previousBlockhash: 'p',
      parentSlot: 0,
      rewards: [{ pubkey: 'r', lamports: '-12345678901234567', postBalance: '12345678901234567' }],
    },
  }
  assert.equal(
    formatArchiveLine(big),
    '{"slot":1,"hash":"h","height":null,"block":{"blockhash":"h","previousBlockhash":"p","parentSlot":0,' +
      '"rewards":[{"pubkey":"r","lamports":-12345678901234567,"postBalance":12345678901234567}]}}',
  )
})

test('formatArchiveLine: bigints outside the u64 fields and marker-like strings fall back to the exact writer', () => {
  const mk = (extra: Record<string, unknown>, meta: Record<string, unknown>): ArchiveLine =>
    ({
      slot: 3,
      block: {
        blockhash: 'h',
        previousBlockhash: 'p',
        parentSlot: 2,
        ...extra,
        transactions: [
          {
            transaction: { signatures: [], message: {} },
            meta: { err: null, preBalances: [], postBalances: [], ...meta },
          },
        ],
      },
    }) as unknown as ArchiveLine
  // a bigint where the fast path does not look (blockTime)
  const a = formatArchiveLine(mk({ blockTime: 12345678901234567890n }, { fee: '18446744073709551615' }))
  assert.match(a, /"blockTime":12345678901234567890,/)
  assert.match(a, /"fee":18446744073709551615}/)
  // a genuine string that looks like the internal marker stays a string
  const b = formatArchiveLine(mk({}, { fee: 12345678901234567890n, logMessages: ['\u0000solportal-u64:7'] }))
  assert.match(b, /"fee":12345678901234567890[,}]/)
  assert.deepStrictEqual((parseJsonExact(b) as ArchiveLine).block.transactions![0].meta!.logMessages, [
    '\u0000solportal-u64:7',
  ])
  // and the fast path output equals the generic one
  const c = formatArchiveLine(mk({}, { fee: 5000, preBalances: [1, '99999999999999999'], postBalances: [2n, 3] }))
  assert.match(c, /"preBalances":\[1,99999999999999999\],"postBalances":\[2,3\]/)
})

async function collect(p: string | string[]): Promise<ArchiveLine[]> {
  const out: ArchiveLine[] = []
  for await (const l of readArchive(p)) out.push(l)
  return out
}

const mini = (slot: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    slot,
    block: { blockhash: `H${slot}`, previousBlockhash: 'P', parentSlot: slot - 1, blockHeight: slot - 100, ...extra },
  })

test('readArchive: directory recursion sorted by path, gzip by magic bytes, defaults, blank lines', async () => {
  const dir = join(tmp, 'arch')
  mkdirSync(join(dir, 'b'), { recursive: true })
  writeFileSync(join(dir, 'a.jsonl'), mini(1) + '\n\n' + mini(2) + '\n')
  writeFileSync(
    join(dir, 'b', 'c.jsonl.gz'),
    gzipSync(
      mini(3) +
        '\n' +
        '{"slot": 4, "hash": "X", "height": null, "block": {"blockhash": "H4", "fee": 12345678901234567890}}',
    ),
  )
  writeFileSync(join(dir, 'b', 'ignored.json'), 'not an archive')
  // a gzip file without the .gz suffix is still detected
  writeFileSync(join(dir, 'd.jsonl'), gzipSync(mini(5)))
  const lines = await collect(dir)
  assert.deepStrictEqual(
    lines.map((l) => [l.slot, l.hash, l.height]),
    [
      [1, 'H1', -99],
      [2, 'H2', -98],
      [3, 'H3', -97],
      [4, 'X', null],
      [5, 'H5', -95],
    ],
  )
  assert.equal((lines[3].block as unknown as { fee: string }).fee, '12345678901234567890')
  // a file path directly, and a list
  assert.deepStrictEqual(
    (await collect([join(dir, 'd.jsonl'), join(dir, 'a.jsonl')])).map((l) => l.slot),
    [5, 1, 2],
  )
  // the real block archive
  const real = await collect(join(DATA, 'blocks'))
  assert.equal(real.length, 1)
  assert.equal(real[0].slot, 254170887)
  assert.equal(real[0].block.transactions?.length, 602)
})

test('readArchive: errors name file:line', async () => {
  const bad = join(tmp, 'bad.jsonl')
  writeFileSync(bad, mini(1) + '\n{"slot": 2, "block": \n')
  await assert.rejects(collect(bad), (e: Error) => e.message.startsWith(`${bad}:2: `))
  writeFileSync(bad, mini(1) + '\n' + mini(2) + '\n{"block": {}}\n')
  await assert.rejects(collect(bad), (e: Error) => e.message.startsWith(`${bad}:3: "slot" must be`))
  writeFileSync(bad, '{"slot": 3}\n')
  await assert.rejects(collect(bad), (e: Error) => e.message.startsWith(`${bad}:1: "block" must be`))
  const gz = join(tmp, 'trunc.jsonl.gz')
  writeFileSync(gz, gzipSync(mini(1) + '\n' + mini(2) + '\n').subarray(0, 30))
  await assert.rejects(collect(gz), (e: Error) => e.message.startsWith(`${gz}:`))
  await assert.rejects(collect(join(tmp, 'nope.jsonl')), /ENOENT/)
})

test('normalize command (in process): archive and bare getBlock files, --slot, warnings', async () => {
  const out: string[] = []
  const warns: string[] = []
  const file = join(DATA, 'chainstorage', 'parser_solana_block.json')
  const r = await runNormalize(
    [file],
    {},
    (t) => void out.push(t),
    (w) => warns.push(w),
  )
  assert.deepStrictEqual(r, { blocks: 1, warnings: 0 })
  assert.equal(warns.length, 1)
  assert.match(warns[0], /assuming parentSlot\+1 = 100000000/)
  const block = JSON.parse(out[0])
  assert.equal(block.header.number, 100000000)
  assert.deepStrictEqual(Object.keys(block), [
    'header',
    'transactions',
    'instructions',
    'logs',
    'balances',
    'tokenBalances',
    'rewards',
  ])
  assert.equal(block.transactions[0].fee, '5000') // bigints as decimal strings
  assert.equal(block.rewards[0].lamports, '7247500')
  out.length = 0
  warns.length = 0
  await runNormalize(
    [file],
    { slot: '42', includeVotes: true },
    (t) => void out.push(t),
    (w) => warns.push(w),
  )
  assert.equal(JSON.parse(out[0]).header.number, 42)
  assert.equal(JSON.parse(out[0]).transactions.length, 4)
  assert.deepStrictEqual(warns, [])
})

test('solportal normalize (CLI process) on the real archive', () => {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'normalize', join(DATA, 'blocks/254170887.jsonl.gz')],
    {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    },
  )
  assert.equal(r.status, 0, r.stderr)
  const lines = r.stdout.trim().split('\n')
  assert.equal(lines.length, 1)
  const b = JSON.parse(lines[0])
  assert.equal(b.header.number, 254170887)
  assert.equal(b.transactions.length, 444)
  assert.equal(typeof b.instructions[0].dataPrefix, 'string')
  assert.equal(r.stderr, '')
})
