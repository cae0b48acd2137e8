/**
 * The log walk (docs/query.md §1) on synthetic transactions: every rule and failure mode, with
 * exact expected outputs.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type { Block, NormalizationWarning } from '../src/model.ts'
import {
  LINE_CONSUMED,
  LINE_DATA,
  LINE_FAILED,
  LINE_INVOKE,
  LINE_LOG,
  LINE_OTHER,
  LINE_SUCCESS,
  LINE_TRUNCATED,
  parseLogLine,
  type ParsedLine,
} from '../src/normalize/logwalk.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import {
  CB,
  PA,
  PB,
  PC,
  consumed,
  data,
  failed,
  invoke,
  log,
  sigOf,
  success,
  synthBlock,
  type SynthTx,
} from './fixtures/normalize/synth.ts'

const short = (p: string) => (p === CB ? 'CB' : p[0])

/** [address, program, error, CU, hasDroppedLogMessages] per instruction */
function insSummary(b: Block): [string, string, string | null, number | null, boolean][] {
  return b.instructions.map((i) => [
    i.instructionAddress.join('.'),
    short(i.programId),
    i.error,
    i.computeUnitsConsumed === null ? null : Number(i.computeUnitsConsumed),
    i.hasDroppedLogMessages,
  ])
}
/** [logIndex, address, kind, message] per log */
function logSummary(b: Block): [number, string, string, string][] {
  return b.logs.map((l) => [l.logIndex, l.instructionAddress.join('.'), l.kind, l.message])
}

function run(t: SynthTx): { block: Block; warnings: NormalizationWarning[] } {
  return normalizeBlock(synthBlock([t]))
}

test('nesting from invoke lines (no stackHeight): addresses, CU, logs with gaps, other/return lines', () => {
  const { block, warnings } = run({
    top: [{ p: PA }, { p: PC }],
    inner: { 0: [{ p: PB }, { p: PC }, { p: PB }] },
    logs: [
      invoke(PA, 1),
      log('a1'),
      invoke(PB, 2),
      invoke(PC, 3),
      data('AQID'),
      consumed(PC, 10),
      success(PC),
      'Program return: BBBB AQ==',
      consumed(PB, 20),
      success(PB),
      invoke(PB, 2),
      success(PB),
      log('a2'),
      consumed(PA, 40),
      success(PA),
      invoke(PC, 1),
      log(''),
      success(PC),
    ],
  })
  assert.deepStrictEqual(warnings, [])
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, 40, false],
    ['0.0', 'B', null, 20, false],
    ['0.0.0', 'C', null, 10, false],
    ['0.1', 'B', null, null, false],
    ['1', 'C', null, null, false],
  ])
  assert.deepStrictEqual(logSummary(block), [
    [1, '0', 'log', 'a1'],
    [4, '0.0.0', 'data', 'AQID'],
    [7, '0.0', 'other', 'Program return: BBBB AQ=='],
    [12, '0', 'log', 'a2'],
    [16, '1', 'log', ''],
  ])
  assert.equal(block.logs[0].programId, PA)
  assert.equal(block.logs[1].programId, PC)
  assert.equal(block.transactions[0].hasDroppedLogMessages, false)
})

test('depth mismatch fails the walk: logs dropped, instructions re-emitted flagged by stackHeight, warning', () => {
  const { block, warnings } = run({
    sig: 'SigDepth',
    top: [{ p: PA }, { p: PB }],
    inner: {
      0: [
        { p: PB, sh: 2 },
        { p: PC, sh: 3 },
      ],
    },
    logs: [invoke(PA, 1), log('x'), invoke(PB, 3), success(PB), success(PA), invoke(PB, 1), success(PB)],
  })
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, true],
    ['0.0', 'B', null, null, true],
    ['0.0.0', 'C', null, null, true],
    ['1', 'B', null, null, true],
  ])
  assert.deepStrictEqual(block.logs, [])
  assert.equal(block.transactions[0].hasDroppedLogMessages, true)
  assert.equal(warnings.length, 1)
  assert.equal(warnings[0].slot, 1000)
  assert.equal(warnings[0].signature, sigOf('SigDepth'))
  assert.equal(warnings[0].transactionIndex, 0)
  assert.match(warnings[0].message, /log walk failed: line 2: invoke \[3\]/)
})

test('a stackHeight that disagrees with the invoke nesting fails the walk', () => {
  const { block, warnings } = run({
    top: [{ p: PA }],
    inner: { 0: [{ p: PB, sh: 3 }] },
    logs: [invoke(PA, 1), invoke(PB, 2), success(PB), success(PA)],
  })
  assert.match(warnings[0].message, /stackHeight 3 .* disagrees with the log depth 2/)
  // fallback placement: stackHeight 3 right after [0] cannot nest: clamped to depth 2
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, true],
    ['0.0', 'B', null, null, true],
  ])
})

test('missing invoke line of a never-logging program: flagged, no warning, the walk goes on', () => {
  const { block, warnings } = run({
    top: [{ p: CB }, { p: PA }],
    logs: [invoke(PA, 1), log('hi'), success(PA)],
  })
  assert.deepStrictEqual(warnings, [])
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'CB', null, null, true],
    ['1', 'A', null, null, false],
  ])
  assert.deepStrictEqual(logSummary(block), [[1, '1', 'log', 'hi']])
  assert.equal(block.transactions[0].hasDroppedLogMessages, false)
})

test('missing invoke line of another program: its lines are skipped up to the next invoke; warning', () => {
  const { block, warnings } = run({
    top: [{ p: PB }, { p: PA }],
    logs: [log('orphan'), consumed(PB, 5), 'something else', invoke(PA, 1), success(PA)],
  })
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'B', null, null, true],
    ['1', 'A', null, null, false],
  ])
  assert.deepStrictEqual(block.logs, [])
  assert.equal(block.transactions[0].hasDroppedLogMessages, false)
  assert.equal(warnings.length, 1)
  assert.match(warnings[0].message, /missing invoke line .*\[0\] B/)
})

test('inner instruction without its invoke line: placed after its parent closes, flagged', () => {
  // B is a child of A per stackHeight, but A's frame has no invoke line for it
  const { block, warnings } = run({
    top: [{ p: PA }],
    inner: {
      0: [
        { p: PB, sh: 2 },
        { p: PC, sh: 3 },
      ],
    },
    logs: [invoke(PA, 1), log('a'), consumed(PA, 7), success(PA)],
  })
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, 7, false],
    ['0.0', 'B', null, null, true],
    ['0.0.0', 'C', null, null, true],
  ])
  assert.deepStrictEqual(logSummary(block), [[1, '0', 'log', 'a']])
  assert.equal(warnings.length, 1)
  assert.match(warnings[0].message, /missing invoke line for instruction\(s\) \[0,0\] B+ \[0,0,0\] C+$/)
})

test('left-over inner instructions without stackHeight: depth parent+1 after a failed parent, else 2', () => {
  const ok = run({
    top: [{ p: PA }],
    inner: { 0: [{ p: PB }, { p: PC }, { p: PC }] },
    logs: [invoke(PA, 1), invoke(PB, 2), success(PB), success(PA)],
  })
  assert.deepStrictEqual(
    insSummary(ok.block).map((x) => x[0]),
    ['0', '0.0', '0.1', '0.2'],
  )
  // B failed at depth 2 (the transaction failed at 0): the two C go under B
  const bad = run({
    top: [{ p: PA }],
    inner: { 0: [{ p: PB }, { p: PC }, { p: PC }] },
    err: { InstructionError: [0, { Custom: 1 }] },
    logs: [
      invoke(PA, 1),
      invoke(PB, 2),
      failed(PB, 'custom program error: 0x1'),
      failed(PA, 'custom program error: 0x1'),
    ],
  })
  assert.deepStrictEqual(insSummary(bad.block), [
    ['0', 'A', 'custom program error: 0x1', null, false],
    ['0.0', 'B', 'custom program error: 0x1', null, false],
    ['0.0.0', 'C', null, null, true],
    ['0.0.1', 'C', null, null, true],
  ])
  assert.ok(bad.block.instructions.every((i) => i.isCommitted === false))
})

test('Log truncated mid-frame: open frames and everything unvisited flagged, no error, no CU', () => {
  const { block, warnings } = run({
    top: [{ p: PA }, { p: PB }],
    inner: {
      0: [
        { p: PB, sh: 2 },
        { p: PC, sh: 3 },
        { p: PC, sh: 2 },
      ],
    },
    logs: [
      invoke(PA, 1),
      invoke(PB, 2),
      log('b'),
      // a consumed line before the truncation: the frame is still open, so docs/query.md gives it
      // no CU (the reference normalizer would keep 55 here)
      consumed(PB, 55),
      'Log truncated',
      log('after truncation: ignored'),
    ],
  })
  assert.deepStrictEqual(warnings, [])
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, true],
    ['0.0', 'B', null, null, true],
    ['0.0.0', 'C', null, null, true],
    ['0.1', 'C', null, null, true],
    ['1', 'B', null, null, true],
  ])
  assert.deepStrictEqual(logSummary(block), [[2, '0.0', 'log', 'b']])
  assert.equal(block.transactions[0].hasDroppedLogMessages, true)
})

test('InstructionError k: 0..k walked, later top-level instructions never ran', () => {
  const { block, warnings } = run({
    top: [{ p: PA }, { p: PB }, { p: PC }, { p: PA }],
    err: { InstructionError: [1, { Custom: 6 }] },
    logs: [
      invoke(PA, 1),
      success(PA),
      invoke(PB, 1),
      log('boom'),
      consumed(PB, 9),
      failed(PB, 'custom program error: 0x6'),
    ],
  })
  assert.deepStrictEqual(warnings, [])
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, false],
    ['1', 'B', 'custom program error: 0x6', 9, false],
    ['2', 'C', null, null, false],
    ['3', 'A', null, null, false],
  ])
  assert.ok(block.instructions.every((i) => !i.isCommitted))
})

test('inner instructions under an instruction that never ran fail the walk (never-ran stay unflagged)', () => {
  const { block, warnings } = run({
    top: [{ p: PA }, { p: PB }],
    inner: { 1: [{ p: PC, sh: 2 }] },
    err: { InstructionError: [0, { Custom: 1 }] },
    logs: [invoke(PA, 1), failed(PA, 'custom program error: 0x1')],
  })
  assert.match(warnings[0].message, /top-level instruction 1 never ran but has inner instructions/)
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, true],
    ['1', 'B', null, null, false],
    ['1.0', 'C', null, null, false],
  ])
  assert.equal(block.transactions[0].hasDroppedLogMessages, true)
})

test('failing instruction without its invoke line: no warning for MissingAccount, a warning otherwise', () => {
  const base: SynthTx = { top: [{ p: PA }, { p: PB }], logs: [invoke(PA, 1), success(PA)] }
  const quiet = run({ ...base, err: { InstructionError: [1, 'MissingAccount'] } })
  assert.deepStrictEqual(quiet.warnings, [])
  assert.deepStrictEqual(insSummary(quiet.block), [
    ['0', 'A', null, null, false],
    ['1', 'B', null, null, true],
  ])
  const trace = run({ ...base, err: { InstructionError: [1, 'MaxInstructionTraceLengthExceeded'] } })
  assert.deepStrictEqual(trace.warnings, [])
  const loud = run({ ...base, err: { InstructionError: [1, 'InvalidAccountData'] } })
  assert.equal(loud.warnings.length, 1)
  assert.deepStrictEqual(insSummary(loud.block), insSummary(quiet.block))
})

test('any other err with no logs and no inner instructions: nothing ran', () => {
  const { block, warnings } = run({ top: [{ p: PA }, { p: PB }], err: 'InsufficientFundsForFee', logs: [] })
  assert.deepStrictEqual(warnings, [])
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, false],
    ['1', 'B', null, null, false],
  ])
  assert.equal(block.transactions[0].hasDroppedLogMessages, false)
})

test('InstructionError with a non-integer index: every instruction treated as ran, with a warning', () => {
  const { block, warnings } = run({
    top: [{ p: PA }, { p: PB }],
    err: { InstructionError: ['x', 'Weird'] },
    logs: [invoke(PA, 1), success(PA), invoke(PB, 1), failed(PB, 'weird')],
  })
  assert.match(warnings[0].message, /unrecognized shape/)
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, false],
    ['1', 'B', 'weird', null, false],
  ])
})

test('absent logMessages: every instruction flagged, transaction flag false', () => {
  const { block } = run({ top: [{ p: PA }], inner: { 0: [{ p: PB, sh: 2 }, { p: PC }] }, logs: null })
  assert.deepStrictEqual(insSummary(block), [
    ['0', 'A', null, null, true],
    ['0.0', 'B', null, null, true],
    ['0.1', 'C', null, null, true],
  ])
  assert.equal(block.transactions[0].hasDroppedLogMessages, false)
})

for (const [name, t, reason] of [
  [
    'lines left over',
    { top: [{ p: PA }], logs: [invoke(PA, 1), success(PA), log('extra')] },
    /left over after the last instruction, from line 2/,
  ],
  [
    'consumed naming another program',
    { top: [{ p: PA }], logs: [invoke(PA, 1), consumed(PB, 3), success(PA)] },
    /consumed line of B+ inside the frame of \[0\]/,
  ],
  [
    'result naming another program',
    { top: [{ p: PA }], logs: [invoke(PA, 1), success(PB)] },
    /result line of B+ closes the frame of \[0\]/,
  ],
  [
    'end of lines inside an open frame',
    { top: [{ p: PA }], inner: { 0: [{ p: PB }] }, logs: [invoke(PA, 1), invoke(PB, 2), success(PB)] },
    /the log ends inside the frame of \[0\]/,
  ],
  [
    'invoke with no instruction left',
    { top: [{ p: PA }], logs: [invoke(PA, 1), invoke(PB, 2), success(PB), success(PA)] },
    /no instruction is left/,
  ],
] as [string, SynthTx, RegExp][]) {
  test(`walk failure: ${name}`, () => {
    const { block, warnings } = run({ ...t, sig: 'SigErr' })
    assert.equal(warnings.length, 1)
    assert.equal(warnings[0].signature, sigOf('SigErr'))
    assert.match(warnings[0].message, reason)
    assert.deepStrictEqual(block.logs, [])
    assert.equal(block.transactions[0].hasDroppedLogMessages, true)
    assert.ok(
      block.instructions.every((i) => i.hasDroppedLogMessages && i.error === null && i.computeUnitsConsumed === null),
    )
  })
}

test('one failed transaction does not disturb the others of the block', () => {
  const good: SynthTx = { top: [{ p: PA }], logs: [invoke(PA, 1), log('ok'), success(PA)] }
  const bad: SynthTx = { top: [{ p: PA }], logs: [invoke(PA, 1), success(PB)] }
  const { block, warnings } = normalizeBlock(synthBlock([good, bad, good]))
  assert.equal(warnings.length, 1)
  assert.equal(warnings[0].transactionIndex, 1)
  assert.deepStrictEqual(
    block.logs.map((l) => [l.transactionIndex, l.logIndex]),
    [
      [0, 1],
      [2, 1],
    ],
  )
  assert.deepStrictEqual(
    block.transactions.map((t) => t.hasDroppedLogMessages),
    [false, true, false],
  )
})

// --- line classification -------------------------------------------------------------------

const B58 = '[123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz]'
/** The anchored patterns of docs/query.md §1, tried in the reference's order. */
function classifyByRegex(line: string): [number, string, number, string] {
  let m = new RegExp(`^Program (${B58}+) invoke \\[(\\d+)]$`).exec(line)
  if (m) return [LINE_INVOKE, m[1], parseInt(m[2], 10), '']
  m = new RegExp(`^Program (${B58}+) success$`).exec(line)
  if (m) return [LINE_SUCCESS, m[1], 0, '']
  m = new RegExp(`^Program (${B58}+) failed: (.*)$`).exec(line)
  if (m) return [LINE_FAILED, m[1], 0, m[2]]
  m = /^Program log: (.*)$/.exec(line)
  if (m) return [LINE_LOG, '', 0, m[1]]
  m = /^Program data: (.*)$/.exec(line)
  if (m) return [LINE_DATA, '', 0, m[1]]
  m = new RegExp(`^Program (${B58}+) consumed (\\d+) of (\\d+) compute units$`).exec(line)
  if (m) return [LINE_CONSUMED, m[1], 0, m[2]]
  if (line === 'Log truncated') return [LINE_TRUNCATED, '', 0, '']
  return [LINE_OTHER, '', 0, line]
}

test('parseLogLine with known program ids equals the anchored regular expressions (property)', () => {
  const frag = fc.constantFrom(
    'Program ',
    'invoke [1]',
    ' success',
    'success',
    ' failed: x',
    ' consumed 5 of 9 compute units',
    ' ',
    'Tokenkeg',
    '11111',
    'Tokenkeg11111',
    'x',
    '0',
    '\n',
  )
  const line = fc.array(frag, { maxLength: 6 }).map((a) => a.join(''))
  // known ids must be non-empty base58 strings
  const known = fc.array(fc.constantFrom('Tokenkeg', '11111', 'Tokenkeg11111', 'T', '1'), { maxLength: 4 })
  const out: ParsedLine = { kind: LINE_OTHER, programId: '', depth: 0, text: '' }
  fc.assert(
    fc.property(line, known, (s, ids) => {
      parseLogLine(s, out, ids)
      assert.deepStrictEqual([out.kind, out.programId, out.depth, out.text], classifyByRegex(s))
    }),
    { numRuns: 5000 },
  )
  const id = 'TokenkegQfeYrjzdFBBzFuwEBxDSfRt4nP3CE4bkXS2fKJ'
  for (const s of [
    `Program ${id} invoke [2]`,
    `Program ${id} success`,
    `Program ${id} consumed 4645 of 200000 compute units`,
    `Program ${id} failed: custom program error: 0x1`,
    `Program ${id}x success`,
    `Program ${id.slice(1)} success`,
  ]) {
    parseLogLine(s, out, [id])
    assert.deepStrictEqual([out.kind, out.programId, out.depth, out.text], classifyByRegex(s), s)
  }
  // the known ids are trusted, not checked again: the path that takes the id from the list
  // (a caller breaking the contract with a non-base58 id gets it back)
  parseLogLine('Program Tok0n success', out, ['Tok0n'])
  assert.deepStrictEqual([out.kind, out.programId], [LINE_SUCCESS, 'Tok0n'])
  parseLogLine('Program Tok0n success', out)
  assert.equal(out.kind, LINE_OTHER)
})

test('parseLogLine equals the anchored regular expressions (property)', () => {
  const frag = fc.constantFrom(
    'Program ',
    'log: ',
    'data: ',
    'invoke [',
    ']',
    'success',
    'failed: ',
    'consumed ',
    ' of ',
    ' compute units',
    'Log truncated',
    'Tokenkeg',
    '11111',
    '0',
    '12',
    ' ',
    '\n',
    '\r',
    '\u2028',
    'l',
    'O',
    'ü',
    ':',
    '[',
    'x',
  )
  const line = fc.array(frag, { maxLength: 9 }).map((a) => a.join(''))
  const out: ParsedLine = { kind: LINE_OTHER, programId: '', depth: 0, text: '' }
  fc.assert(
    fc.property(fc.oneof(line, fc.string()), (s) => {
      parseLogLine(s, out)
      assert.deepStrictEqual([out.kind, out.programId, out.depth, out.text], classifyByRegex(s))
    }),
    { numRuns: 20000 },
  )
  for (const s of [
    'Program Vote111111111111111111111111111111111111111 invoke [1]',
    'Program ZETAxsqBRek56DhiGXrn75yj2NHU3aYUnxvHXpkf3aD consumed 93823 of 768113 compute units',
    'Program log: multi\nline',
    'Program log: ',
    'Program data: ',
    'Program 11111111111111111111111111111111 failed: ',
    'Program return: ZETAxsqBRek56DhiGXrn75yj2NHU3aYUnxvHXpkf3aD AQ==',
    'Program X invoke [1] ',
    'Log truncated ',
  ]) {
    parseLogLine(s, out)
    assert.deepStrictEqual([out.kind, out.programId, out.depth, out.text], classifyByRegex(s), s)
  }
})
