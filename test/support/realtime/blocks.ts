/** Synthetic normalized blocks for the real-time store tests (bigint values at the u64/i64 limits). */
import type { Block } from '../../../src/model.ts'
import type { HeadInfo } from '../../../src/store/chunk.ts'

export function mkBlock(number: number, hash: string, parent: HeadInfo): Block {
  return {
    header: {
      number,
      hash,
      parentNumber: parent.number,
      parentHash: parent.hash,
      height: number - 1000,
      timestamp: 1_700_000_000 + number,
    },
    transactions: [
      {
        transactionIndex: 3,
        version: 0,
        accountKeys: ['Acc1' + hash, 'Acc2'],
        addressTableLookups: [{ accountKey: 'LUT', writableIndexes: [1], readonlyIndexes: [0, 2] }],
        numReadonlySignedAccounts: 0,
        numReadonlyUnsignedAccounts: 1,
        numRequiredSignatures: 1,
        recentBlockhash: 'RB' + number,
        signatures: ['sig-' + hash],
        err: number % 2 ? null : { InstructionError: [0, { Custom: 6001 }] },
        fee: 5000n + BigInt(number),
        computeUnitsConsumed: 18446744073709551615n,
        loadedAddresses: { writable: ['W'], readonly: [] },
        feePayer: 'Acc1' + hash,
        hasDroppedLogMessages: false,
        transactionConfig: null,
      },
    ],
    instructions: [
      {
        transactionIndex: 3,
        instructionAddress: [0, 1],
        programId: 'Prog',
        accounts: ['Acc2'],
        data: '3Bxs4h24hBtQy9rw',
        d1: '0x01',
        d2: '0x0102',
        d4: '0x01020304',
        d8: null,
        dataPrefix: '0x01020304',
        error: null,
        computeUnitsConsumed: 9007199254740993n,
        isCommitted: true,
        hasDroppedLogMessages: false,
      },
    ],
    logs: [
      {
        transactionIndex: 3,
        logIndex: 2,
        instructionAddress: [0, 1],
        programId: 'Prog',
        kind: 'log',
        message: 'hello ' + hash,
      },
    ],
    balances: [{ transactionIndex: 3, account: 'Acc2', pre: 2n ** 63n, post: 1n }],
    tokenBalances: [
      {
        transactionIndex: 3,
        account: 'TokAcc',
        preMint: null,
        postMint: 'Mint',
        preDecimals: null,
        postDecimals: 6,
        preProgramId: null,
        postProgramId: 'Tok',
        preOwner: null,
        postOwner: 'Own',
        preAmount: null,
        postAmount: 18446744073709551615n,
      },
    ],
    rewards: [
      { pubkey: 'Val', lamports: -9223372036854775808n, postBalance: 123n, rewardType: null, commission: null },
    ],
  }
}

/**
 * `count` linked blocks on branch `branch` above `parent`; slots advance by 1, or by 2 where
 * `skip(slot)` says the slot is skipped.
 */
export function mkChain(
  parent: HeadInfo,
  count: number,
  branch = 'a',
  skip: (slot: number) => boolean = () => false,
): Block[] {
  const out: Block[] = []
  let p = parent
  let slot = parent.number + 1
  while (out.length < count) {
    if (skip(slot)) {
      slot++
      continue
    }
    const b = mkBlock(slot, `${branch}-${slot}`, p)
    out.push(b)
    p = { number: slot, hash: b.header.hash }
    slot++
  }
  return out
}

export const GENESIS: HeadInfo = { number: 999, hash: 'genesis-999' }

export function heads(blocks: readonly Block[]): HeadInfo[] {
  return blocks.map((b) => ({ number: b.header.number, hash: b.header.hash }))
}
