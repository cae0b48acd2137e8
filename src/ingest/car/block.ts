/**
 * A bundled CAR block (bundle.ts) to the `getBlock` shapes the normalizer takes, without JSON
 * text: the header as an `ArchiveLine`, the transactions one at a time (`TransactionSource`), each
 * decoded from the wire format (tx-wire.ts) with its metadata decompressed and decoded when the
 * normalizer first reads it. A vote transaction the import drops is recognized from its bytes
 * (`isWireVote`) and neither decoded nor decompressed: the normalizer is given a stand-in that it
 * drops the same way.
 *
 * - blockhash: the hash of the block's last entry; previousBlockhash: the parent's (carried by the
 *   reader across files), absent when unknown; slot 0 has its own hash as previousBlockhash and
 *   height 0, as the RPC gives.
 * - blockTime: absent when the file has 0; blockHeight: absent when the file has none (old epochs).
 * - metadata: none (epochs 0-9, or an empty payload) gives `meta: null`; otherwise zstd of
 *   protobuf `TransactionStatusMeta` or, in older epochs, of legacy bincode (meta.ts).
 */
import type { NormalizeOptions, NormalizeResult, RecordSink, TransactionSource } from '../../normalize/normalize.ts'
import { normalizeBlockInto, VOTE_PROGRAM } from '../../normalize/normalize.ts'
import type { ArchiveLine, RpcBlock, RpcReward, RpcTransaction, RpcTransactionMeta } from '../../rpc/types.ts'
import { base58Encode } from '../../util/base58.ts'
import { decodeBundle, type BundledBlock } from './bundle.ts'
import { decodeMetadata, decodeRewards } from './meta.ts'
import { decodeWireTransaction, isWireVote } from './tx-wire.ts'

/**
 * the normalizer's warnings for a transaction without metadata, expected in epochs 0-9 (whose
 * files hold none): not given for those transactions
 */
const NO_META_WARNINGS = ['transaction has no meta', 'missing invoke line']

/** The block's header fields as an archive line (no transactions) and its rewards. */
export function bundleLine(b: BundledBlock): ArchiveLine {
  const hash = base58Encode(b.hash)
  const block: RpcBlock = {
    blockhash: hash,
    previousBlockhash: b.previousHash ? base58Encode(b.previousHash) : (undefined as unknown as string),
    parentSlot: b.parentSlot,
  }
  if (b.slot === 0) {
    block.previousBlockhash = hash
    block.blockHeight = 0
  } else if (b.blockHeight !== null) block.blockHeight = b.blockHeight
  if (b.previousHash === null && b.slot !== 0) delete (block as Partial<RpcBlock>).previousBlockhash
  if (b.blockTime !== null) block.blockTime = b.blockTime
  block.rewards = b.rewards ? (decodeRewards(b.rewards) as RpcReward[]) : []
  return { slot: b.slot, hash, height: block.blockHeight ?? null, block }
}

/**
 * A transaction of a bundle, its metadata decoded when `meta` is first read. A class, with the
 * getter on its prototype: an object literal with a getter of its own is a dictionary-mode object
 * whose getter closure V8 holds in an accessor pair allocated in old space, so each transaction's
 * decoded objects (reached through the closure) outlived young collections and were promoted
 * until a full one: garbage collection then cost the CAR import about as much as decoding.
 */
class BundleTransaction implements RpcTransaction {
  private decoded: RpcTransactionMeta | null | undefined = undefined

  constructor(
    readonly transaction: RpcTransaction['transaction'],
    readonly version: RpcTransaction['version'],
    private readonly payload: Uint8Array,
    private readonly slot: number,
    private readonly index: number,
    private readonly withDiscriminators: boolean,
  ) {}

  get meta(): RpcTransactionMeta | null {
    if (this.decoded === undefined) {
      try {
        this.decoded = decodeMetadata(this.payload, this.withDiscriminators)
      } catch (e) {
        throw new Error(
          `block ${this.slot} transaction ${this.index} (${this.transaction.signatures[0]}): metadata: ${(e as Error).message}`,
        )
      }
    }
    return this.decoded
  }
}

/**
 * The i-th transaction (its metadata decoded when `meta` is first read). `withDiscriminators`:
 * its instructions, inner ones included, carry their data's d1..d8 / dataPrefix for the normalizer
 * (`DecodedInstruction`); without it, exactly the `getBlock` JSON's members.
 */
export function bundleTransaction(b: BundledBlock, i: number, withDiscriminators = false): RpcTransaction {
  const t = b.transactions[i]
  let wire
  try {
    wire = decodeWireTransaction(t.data, withDiscriminators)
  } catch (e) {
    throw new Error(`block ${b.slot} transaction ${i}: ${(e as Error).message}`)
  }
  return new BundleTransaction(wire.transaction, wire.version, t.metadata, b.slot, i, withDiscriminators)
}

/**
 * What the normalizer is given for a vote transaction it drops (`isVoteTransaction` holds for it:
 * one instruction, of the Vote program); nothing else of it is read.
 */
const DROPPED_VOTE: RpcTransaction = {
  transaction: {
    signatures: [],
    message: {
      header: { numRequiredSignatures: 0, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 },
      accountKeys: [VOTE_PROGRAM],
      recentBlockhash: '',
      instructions: [{ programIdIndex: 0, accounts: [], data: '', stackHeight: null }],
    },
  },
  meta: null,
}

/** The whole `getBlock` result of a bundle (tests, tools: the JSON a CAR block stands for). */
export function bundleToRpcBlock(b: BundledBlock): ArchiveLine {
  const line = bundleLine(b)
  const transactions: RpcTransaction[] = []
  for (let i = 0; i < b.transactions.length; i++) {
    const t = bundleTransaction(b, i)
    transactions.push({ transaction: t.transaction, meta: t.meta, version: t.version })
  }
  line.block.transactions = transactions
  return line
}

/** Normalizes a bundled CAR block (the bytes an import worker is given) into `sink`. */
export function normalizeBundleInto(
  bytes: Uint8Array,
  opts: NormalizeOptions | undefined,
  sink: RecordSink,
): NormalizeResult {
  const b = decodeBundle(bytes)
  const line = bundleLine(b)
  const dropVotes = opts?.includeVotes !== true
  // signatures, account keys and loaded addresses are rendered from bytes of their sizes (wire
  // format, protobuf or bincode metadata): not checked again; instruction data's d1..d8 come from
  // its bytes, not from its base58 decoded back
  const txs: TransactionSource = {
    count: b.transactions.length,
    at: (i) => (dropVotes && isWireVote(b.transactions[i].data) ? DROPPED_VOTE : bundleTransaction(b, i, true)),
    keysRendered: true,
  }
  const r = normalizeBlockInto(line, opts, txs, sink)
  r.warnings = r.warnings.filter(
    (w) =>
      w.transactionIndex === undefined ||
      b.transactions[w.transactionIndex].metadata.length > 0 ||
      !NO_META_WARNINGS.some((m) => w.message.startsWith(m)),
  )
  return r
}
