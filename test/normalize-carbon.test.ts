/**
 * The log walk on the real `meta` objects of data/mainnet/carbon (bare transaction metas, no
 * message): each is paired with a top-level instruction list rebuilt from its `invoke [1]` lines.
 * Static account slots are placeholders except the program slots the fixtures need; in cpi_tx
 * the inner programs sit in the REAL loaded addresses (indexes 16 and 18), which checks the v0
 * resolution order (static ++ writable ++ readonly). Expected values read off the raw logs.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Block } from '../src/model.ts'
import { parseJsonExact } from '../src/rpc/json.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import type { RpcTransactionMeta } from '../src/rpc/types.ts'
import { DATA } from './fixtures/normalize/blocks.ts'
import { addressOf, sigOf } from './fixtures/normalize/synth.ts'

const CB = 'ComputeBudget111111111111111111111111111111'
const SYS = '11111111111111111111111111111111'
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
const LBUZ = 'LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo'

function meta(name: string): RpcTransactionMeta {
  return parseJsonExact(readFileSync(join(DATA, 'carbon', name), 'utf8')) as RpcTransactionMeta
}

/**
 * A block with one transaction around a carbon meta: `staticKeys` static accounts (placeholders,
 * some set by `slots`), top-level instructions calling `top` (account slot indexes).
 */
function around(
  m: RpcTransactionMeta,
  staticKeys: number,
  slots: Record<number, string>,
  top: number[],
  version: 'legacy' | 0,
): Block {
  const keys = Array.from({ length: staticKeys }, (_, i) => slots[i] ?? addressOf(`Placeholder${i}`))
  const r = normalizeBlock({
    slot: 1,
    block: {
      blockhash: addressOf('h'),
      previousBlockhash: addressOf('p'),
      parentSlot: 0,
      blockTime: null,
      transactions: [
        {
          transaction: {
            signatures: [sigOf('carbon')],
            message: {
              accountKeys: keys,
              header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 },
              recentBlockhash: addressOf('r'),
              instructions: top.map((p) => ({ programIdIndex: p, accounts: [], data: '' })),
            },
          },
          meta: m,
          version,
        },
      ],
    },
  })
  assert.deepStrictEqual(r.warnings, [])
  return r.block
}

const summary = (b: Block) =>
  b.instructions.map((i) => [
    i.instructionAddress.join('.'),
    i.programId,
    i.computeUnitsConsumed === null ? null : Number(i.computeUnitsConsumed),
  ])
const logAt = (b: Block) => b.logs.map((l) => [l.logIndex, l.instructionAddress.join('.'), l.kind])

test('carbon simple_tx: one CPI level under a top-level, logs and CU', () => {
  const MOON = 'MoonCVVNZFSYkqNXP6bxHLPL6QQJiMagDL3qcqUQTrG'
  const b = around(meta('simple_tx.json'), 14, { 7: SYS, 11: TOKEN, 12: CB, 13: MOON }, [12, 13, 7], 'legacy')
  assert.deepStrictEqual(summary(b), [
    ['0', CB, null],
    ['1', MOON, 44550],
    ['1.0', TOKEN, 6147],
    ['1.1', SYS, null],
    ['1.2', SYS, null],
    ['1.3', SYS, null],
    ['2', SYS, null],
  ])
  assert.deepStrictEqual(logAt(b), [
    [3, '1', 'log'],
    [5, '1.0', 'log'],
    [14, '1', 'log'],
    [15, '1', 'data'],
  ])
  assert.equal(b.transactions[0].computeUnitsConsumed, 44850n)
  assert.equal(b.transactions[0].fee, 9000n)
})

test('carbon cpi_tx (v0): inner programs resolved through the real loaded addresses, depth 3', () => {
  const m = meta('cpi_tx.json')
  assert.equal(m.preBalances.length, 20) // 10 static + 7 writable + 3 readonly
  const SPLIT = '6m2CDdhRgxpH4WjvdzxAYbGxwdGUz5MziiL5jek2kBma'
  const ATA = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL'
  const b = around(m, 10, { 7: CB, 8: ATA, 9: SPLIT }, [7, 7, 8, 9], 0)
  assert.deepStrictEqual(summary(b), [
    ['0', CB, null],
    ['1', CB, null],
    ['2', ATA, 4338],
    ['3', SPLIT, 118873],
    ['3.0', LBUZ, 63904], // programIdIndex 16 = loaded writable[6]
    ['3.0.0', TOKEN, 6173], // programIdIndex 18 = loaded readonly[1]
    ['3.0.1', TOKEN, 6147],
    ['3.0.2', LBUZ, 2134],
    ['3.1', TOKEN, 6173],
  ])
  assert.deepStrictEqual(logAt(b), [
    [5, '2', 'log'],
    ...[9, 10, 11, 12, 13, 14, 15, 16, 17].map((i) => [i, '3', 'log']),
    [19, '3.0', 'log'],
    [21, '3.0.0', 'log'],
    [25, '3.0.1', 'log'],
    [33, '3', 'data'],
    [34, '3', 'log'],
    [35, '3', 'log'],
    [36, '3', 'log'],
    [37, '3', 'log'],
    [39, '3.1', 'log'],
    [42, '3', 'log'],
  ])
  assert.equal(b.logs.find((l) => l.logIndex === 19)?.programId, LBUZ)
  // the transaction's loaded addresses come through as they are
  assert.deepStrictEqual(b.transactions[0].loadedAddresses.writable.at(-1), LBUZ)
})

test('carbon nested_cpi_tx: depth-3 CPI with a self-invocation', () => {
  const SMAK = 'smakEnVFKFy2fZG25bESNBgWuR6ZRnW1697qFZk4RTF'
  const b = around(
    meta('nested_cpi_tx.json'),
    18,
    { 11: LBUZ, 12: TOKEN, 13: CB, 14: SMAK, 15: SYS },
    [13, 14, 15],
    'legacy',
  )
  assert.deepStrictEqual(summary(b), [
    ['0', CB, null],
    ['1', SMAK, 64318],
    ['1.0', LBUZ, 55118],
    ['1.0.0', TOKEN, 6147],
    ['1.0.1', TOKEN, 6200],
    ['1.0.2', LBUZ, 2135],
    ['2', SYS, null],
  ])
  assert.deepStrictEqual(logAt(b), [
    [4, '1.0', 'log'],
    [6, '1.0.0', 'log'],
    [10, '1.0.1', 'log'],
  ])
})
