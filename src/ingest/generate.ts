/**
 * Deterministic generator of mainnet-shaped blocks for benchmarks (`solportal gen`).
 *
 * Real transactions are the templates: the whole mainnet block data/mainnet/blocks/254170887.jsonl.gz and
 * the litesvm sample data/sample/litesvm.jsonl.gz (real programs executed locally). Each generated
 * transaction is a template whose non-program accounts are re-keyed (deterministic PRNG, Zipf-like
 * popularity: some accounts and fee payers are hot), with fresh unique signatures and a recent blockhash
 * of the generated chain. Everything else (instructions, inner instructions, logs, balances, token
 * balances, compute units, errors) is the template's, so it stays consistent:
 *
 * - a template is serialized once and split at every occurrence of a re-keyed address, a signature or the
 *   recent blockhash, wherever it occurs (account lists, loaded addresses, lookup-table keys, token
 *   balance owners, log lines such as Memo's "Signed by"); an instance is the concatenation of the parts
 *   with its own values, so the same address is replaced by the same new one everywhere in the
 *   transaction;
 * - kept as they are: every program id (anything invoked by any template), sysvars and native ids
 *   (addresses ending in ten or more '1's), and mints (so that USDC stays USDC).
 *
 * Vote transactions (~70 % of the transactions, as on mainnet; the normalizer drops them) come from a
 * fixed set of validators: identity (fee payer) and vote account of the same validator. Leaders are
 * validator identities, 4 slots each, rewarded with the block's fees.
 *
 * Fee payers and other signers come from a pool of 40,000 wallets, other accounts from a pool of 300,000
 * (both Zipf-like: the first ones are hot) or, 15 % of the time, are brand-new addresses.
 *
 * Blocks form a chain (parentSlot / previousBlockhash), with a few skipped slots, 0.4 s per slot.
 * Output is streamed line by line (never all blocks in memory).
 */
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { createGzip, gzip } from 'node:zlib'
import { promisify } from 'node:util'
import type { Writable } from 'node:stream'
import { BASE58_ALPHABET, base58Encode } from '../util/base58.ts'
const gzipAsync = promisify(gzip)

import { Prng } from './generate/prng.ts'
import { Kind, loadTemplates, type Category, type Template, type TemplateSet } from './generate/templates.ts'

export * from './generate/constants.ts'
export { Prng } from './generate/prng.ts'
export { compileTemplate, loadTemplates, type Category, type Template, type TemplateSet } from './generate/templates.ts'

// ------------------------------------------------------------------------------------------ generation
export interface GenOptions {
  blocks: number
  seed?: number
  fromSlot?: number
  /** mean transactions per block (each block varies ±15 %) */
  txsPerBlock?: number
  /** share of vote transactions (default 0.7) */
  voteShare?: number
}

export interface GenStats {
  blocks: number
  firstSlot: number
  lastSlot: number
  txs: number
  votes: number
  /** top-level + inner instructions, all transactions */
  instructions: number
  /** top-level + inner instructions of non-vote transactions (what the normalizer keeps) */
  nonVoteInstructions: number
  bytes: number
}

/**
 * Weights of non-vote categories (DEX-heavy, like mainnet's non-vote traffic; version 1
 * transactions, from the sample, ~13 % of them: ~60 a block of 1,500, as on mainnet since epoch 1035).
 */
export const CATEGORY_WEIGHTS: [Category, number][] = [
  ['jupiter', 25],
  ['whirlpool', 12],
  ['dlmm', 10],
  ['raydium', 10],
  ['mainnet-other', 20],
  ['token', 23],
  ['v1', 15],
]

const BASE_SLOT = 300_000_000
const BASE_TIME = 1_748_736_000 // 2025-06-01T00:00:00Z at BASE_SLOT (as the litesvm sample)
const HEIGHT_OFFSET = 22_000_000
const N_VALIDATORS = 1500
const N_WALLETS = 40_000
const N_ACCOUNTS = 300_000

const ADDRESS_LEN = 44
const SIGNATURE_LEN = 88
const B58_BYTES = Buffer.from(BASE58_ALPHABET, 'latin1')

/**
 * A stateful block generator: `nextBuffer()` returns the next archive line (UTF-8 JSON ending with a
 * newline). Deterministic for a given seed, template set and options. Lines are assembled as bytes: the
 * template parts and the values are copied into one buffer per block (no per-transaction strings).
 */
export class BlockGenerator {
  readonly stats: GenStats
  private readonly rng: Prng
  private readonly seed: number
  private readonly mean: number
  private readonly voteShare: number
  private readonly votes: Template[]
  private readonly pickers: { weight: number; list: Template[] }[]
  private readonly totalWeight: number
  private slot: number
  private height: number
  private parentSlot: number
  /** the last 150 block hashes (ASCII) */
  private readonly recent: Buffer[] = []
  private counter = 0
  /** address pools, ADDRESS_LEN bytes each */
  private readonly wallets: Buffer
  private readonly accounts: Buffer
  private readonly identities: Buffer
  private readonly voteAccounts: Buffer
  private readonly leaderBalance = new Map<number, bigint>()
  private readonly walletsDv: DataView
  private readonly accountsDv: DataView
  private readonly identitiesDv: DataView
  private readonly voteAccountsDv: DataView
  private readonly recentDv: DataView[] = []
  // per-transaction scratch: where each value slot's bytes are (DataView, offset, length), and an identity
  // to keep addresses distinct. Values are base58 ASCII, so copying them as float64 words is exact (their
  // high bytes are <= 0x7a: never NaN) and the fastest copy in JS.
  private slotDv: DataView[] = []
  private slotOff = new Int32Array(0)
  private slotLen = new Int32Array(0)
  private slotId = new Float64Array(0)
  /** fresh values of slot i are written at fresh[i * SIGNATURE_LEN ..] */
  private fresh = Buffer.alloc(0)
  private freshDv = new DataView(new ArrayBuffer(0))

  constructor(
    private readonly templates: TemplateSet,
    opts: GenOptions,
  ) {
    this.seed = (opts.seed ?? 1) >>> 0
    this.rng = new Prng(this.seed ^ 0x5eed)
    this.mean = opts.txsPerBlock ?? 1500
    this.voteShare = opts.voteShare ?? 0.7
    this.votes = templates.byCategory.get('vote') ?? []
    this.pickers = CATEGORY_WEIGHTS.map(([c, w]) => ({ weight: w, list: templates.byCategory.get(c) ?? [] })).filter(
      (p) => p.list.length > 0,
    )
    this.totalWeight = this.pickers.reduce((a, p) => a + p.weight, 0)
    if (this.pickers.length === 0) throw new Error('no non-vote templates')
    this.slot = opts.fromSlot ?? 310_000_000
    this.parentSlot = this.slot - 1
    this.height = this.slot - HEIGHT_OFFSET
    for (let i = 0; i < 150; i++) this.recent.push(Buffer.from(this.blockHash(this.parentSlot - 149 + i), 'latin1'))
    const pool = (n: number) => {
      const b = Buffer.alloc(n * ADDRESS_LEN)
      for (let i = 0; i < n; i++) this.writeAddress(b, i * ADDRESS_LEN)
      return b
    }
    this.identities = pool(N_VALIDATORS)
    this.voteAccounts = pool(N_VALIDATORS)
    this.wallets = pool(N_WALLETS)
    this.accounts = pool(N_ACCOUNTS)
    const dv = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.length)
    this.identitiesDv = dv(this.identities)
    this.voteAccountsDv = dv(this.voteAccounts)
    this.walletsDv = dv(this.wallets)
    this.accountsDv = dv(this.accounts)
    for (const r of this.recent) this.recentDv.push(dv(r))
    this.stats = {
      blocks: 0,
      firstSlot: this.slot,
      lastSlot: this.slot,
      txs: 0,
      votes: 0,
      instructions: 0,
      nonVoteInstructions: 0,
      bytes: 0,
    }
  }

  private blockHash(slot: number): string {
    return base58Encode(new Uint8Array(createHash('sha256').update(`solportal-gen/${this.seed}/${slot}`).digest()))
  }

  /**
   * The unique counter in `width` base58 digits at buf[off..off+width), scrambled: digit i (from the
   * least significant) is shifted by a hash of the digits below it, a bijection (the digits are
   * recovered from the lowest up), so values stay unique while consecutive counters share no
   * characters (a plain counter would give every address the same run of leading '1's)
   */
  private writeUnique(buf: Buffer, off: number, width: number): void {
    let n = this.counter++
    let h = 0x2545f491
    for (let i = width - 1; i >= 0; i--) {
      const d = n % 58
      n = Math.floor(n / 58)
      buf[off + i] = B58_BYTES[(d + (h >>> 8)) % 58]
      h = Math.imul(h ^ (d + 1), 0x9e3779b1) ^ (h >>> 15)
    }
  }

  /**
   * `count` random base58 characters at buf[off..): four per 32-bit draw (58^4 divides into 2^32
   * 379.6 times: each character's bias is under 0.3 %). Real addresses and signatures are random
   * bytes, so their base58 text is random: compressors find no matches in it, and neither may they
   * in generated ones (text copied from a small pad of random characters compressed ~7x, where
   * mainnet's compresses ~1.4x).
   */
  private writeRandom(buf: Buffer, off: number, count: number): void {
    for (let i = 0; i < count; i += 4) {
      let r = this.rng.u32()
      const end = Math.min(count, i + 4)
      for (let j = i; j < end; j++) {
        buf[off + j] = B58_BYTES[r % 58]
        r = Math.floor(r / 58)
      }
    }
  }

  /** A new unique 32-byte address: 44 base58 characters, the first in '2'..'H' (always 32 bytes). */
  private writeAddress(buf: Buffer, off: number): void {
    buf[off] = B58_BYTES[1 + this.rng.int(16)]
    this.writeUnique(buf, off + 1, 9)
    this.writeRandom(buf, off + 10, 34)
  }

  /** A new unique 64-byte signature: 88 characters, the first in '2'..'5' (always 64 bytes). */
  private writeSignature(buf: Buffer, off: number): void {
    buf[off] = B58_BYTES[1 + this.rng.int(4)]
    this.writeUnique(buf, off + 1, 10)
    this.writeRandom(buf, off + 11, 77)
  }

  private pickTemplate(): Template {
    if (this.votes.length > 0 && this.rng.next() < this.voteShare) return this.votes[this.rng.int(this.votes.length)]
    let x = this.rng.next() * this.totalWeight
    for (const p of this.pickers) {
      if ((x -= p.weight) < 0) return p.list[this.rng.int(p.list.length)]
    }
    const p = this.pickers[this.pickers.length - 1]
    return p.list[this.rng.int(p.list.length)]
  }

  /** Choose the values of template `t`'s slots (fills the slot scratch). */
  private chooseValues(t: Template): void {
    const kinds = t.kinds
    const n = kinds.length
    if (n > this.slotId.length) {
      this.slotId = new Float64Array(n)
      this.slotOff = new Int32Array(n)
      this.slotLen = new Int32Array(n)
      this.fresh = Buffer.alloc(n * SIGNATURE_LEN)
      this.freshDv = new DataView(this.fresh.buffer, this.fresh.byteOffset, this.fresh.length)
    }
    const rng = this.rng
    const slotDv = this.slotDv
    const slotOff = this.slotOff
    const slotLen = this.slotLen
    const slotId = this.slotId
    const validator = t.category === 'vote' ? rng.int(N_VALIDATORS) : -1
    let accountsSeen = 0
    for (let i = 0; i < n; i++) {
      const kind = kinds[i]
      if (kind === Kind.Recent) {
        const r = this.recent.length - 1 - rng.int(this.recent.length)
        slotDv[i] = this.recentDv[r]
        slotOff[i] = 0
        slotLen[i] = this.recent[r].length
        slotId[i] = -1
        continue
      }
      if (kind === Kind.Signature) {
        this.writeSignature(this.fresh, i * SIGNATURE_LEN)
        slotDv[i] = this.freshDv
        slotOff[i] = i * SIGNATURE_LEN
        slotLen[i] = SIGNATURE_LEN
        slotId[i] = -1
        continue
      }
      let pool: DataView | undefined
      let index = -1
      let id: number
      if (kind === Kind.Payer && validator >= 0) {
        pool = this.identitiesDv
        index = validator
        id = 1e7 + validator
      } else if (kind === Kind.Payer || kind === Kind.Signer) {
        pool = this.walletsDv
        index = rng.hot3(N_WALLETS)
        id = index
      } else if (validator >= 0 && accountsSeen++ === 0) {
        pool = this.voteAccountsDv
        index = validator
        id = 2e7 + validator
      } else if (rng.next() < 0.15) {
        id = -1 // a brand-new account
      } else {
        pool = this.accountsDv
        index = rng.hot25(N_ACCOUNTS)
        id = 1e6 + index
      }
      // addresses of one transaction must be distinct: on a collision, use a brand-new one
      if (id >= 0) {
        for (let j = 0; j < i; j++) {
          if (slotId[j] === id) {
            id = -1
            break
          }
        }
      }
      if (id < 0) {
        this.writeAddress(this.fresh, i * SIGNATURE_LEN)
        slotDv[i] = this.freshDv
        slotOff[i] = i * SIGNATURE_LEN
      } else {
        slotDv[i] = pool!
        slotOff[i] = index * ADDRESS_LEN
      }
      slotLen[i] = ADDRESS_LEN
      slotId[i] = id
    }
  }

  /** Write an instance of template `t` at out[off..] (odv: a DataView over out); returns the new offset. */
  private writeInstance(t: Template, out: Buffer, odv: DataView, off: number): number {
    this.chooseValues(t)
    const tdv = t.dv
    const ps = t.partStart
    const pe = t.partEnd
    const views = t.partViews
    const slotDv = this.slotDv
    const slotOff = this.slotOff
    const slotLen = this.slotLen
    const refs = t.refs
    const nr = refs.length
    for (let i = 0; i <= nr; i++) {
      // a part: arbitrary UTF-8, copied as int32 words when short (exact for any bytes), else in bulk
      const a = ps[i]
      const len = pe[i] - a
      if (len < 96) {
        let k = 0
        for (; k + 4 <= len; k += 4) odv.setInt32(off + k, tdv.getInt32(a + k))
        for (; k < len; k++) odv.setUint8(off + k, tdv.getUint8(a + k))
      } else out.set(views[i], off)
      off += len
      if (i === nr) break
      // a value: base58 ASCII, copied as float64 words
      const r = refs[i]
      const sdv = slotDv[r]
      const so = slotOff[r]
      const sl = slotLen[r]
      let k = 0
      for (; k + 8 <= sl; k += 8) odv.setFloat64(off + k, sdv.getFloat64(so + k))
      for (; k < sl; k++) odv.setUint8(off + k, sdv.getUint8(so + k))
      off += sl
    }
    return off
  }

  /** One transaction instance of template `t` (JSON text). */
  instantiate(t: Template): string {
    const out = Buffer.allocUnsafe(t.maxBytes)
    const odv = new DataView(out.buffer, out.byteOffset, out.length)
    return out.toString('utf8', 0, this.writeInstance(t, out, odv, 0))
  }

  /** The next block's archive line, JSON text ending with a newline. */
  next(): string {
    return this.nextBuffer().toString('utf8')
  }

  /**
   * The next block's archive line as UTF-8 bytes, ending with a newline: a view of `into` when that is
   * large enough (to reuse memory once the previous line has been consumed), else of a new buffer.
   */
  nextBuffer(into?: Buffer): Buffer {
    const rng = this.rng
    if (this.stats.blocks > 0 && rng.next() < 0.05) this.slot += 1 + rng.int(3) // skipped slots
    const slot = this.slot
    const hash = this.blockHash(slot)
    const count = Math.max(1, Math.round(this.mean * (0.85 + 0.3 * rng.next())))
    const chosen: Template[] = new Array(count)
    let size = 0
    let base = 0n
    let priority = 0n
    for (let i = 0; i < count; i++) {
      const t = (chosen[i] = this.pickTemplate())
      size += t.maxBytes + 1
      base += t.baseFee
      priority += t.fee - t.baseFee
      this.stats.txs++
      this.stats.instructions += t.instructions
      if (t.category === 'vote') this.stats.votes++
      else this.stats.nonVoteInstructions += t.instructions
    }
    const leaderIndex = Math.floor(slot / 4) % N_VALIDATORS
    const leader = this.identities.toString('latin1', leaderIndex * ADDRESS_LEN, (leaderIndex + 1) * ADDRESS_LEN)
    const reward = base / 2n + priority
    const balance =
      (this.leaderBalance.get(leaderIndex) ?? 1_000_000_000_000n + BigInt(leaderIndex) * 7_919_000_000n) + reward
    this.leaderBalance.set(leaderIndex, balance)
    const blockTime = BASE_TIME + Math.floor(((slot - BASE_SLOT) * 2) / 5)
    const head =
      `{"slot":${slot},"hash":"${hash}","height":${this.height},"block":{"previousBlockhash":"${this.recent[this.recent.length - 1].toString('latin1')}",` +
      `"blockhash":"${hash}","parentSlot":${this.parentSlot},"transactions":[`
    const tail =
      `],"rewards":[{"pubkey":"${leader}","lamports":${reward},"postBalance":${balance},"rewardType":"Fee","commission":null}],` +
      `"blockTime":${blockTime},"blockHeight":${this.height}}}\n`
    const need = size + head.length + tail.length
    const out = into && into.length >= need ? into : Buffer.allocUnsafe(Math.ceil(need * 1.25))
    const odv = new DataView(out.buffer, out.byteOffset, out.length)
    let off = out.write(head, 0, 'latin1')
    for (let i = 0; i < count; i++) {
      if (i > 0) out[off++] = 44 // ','
      off = this.writeInstance(chosen[i], out, odv, off)
    }
    off += out.write(tail, off, 'latin1')
    const hb = Buffer.from(hash, 'latin1')
    this.recent.push(hb)
    this.recentDv.push(new DataView(hb.buffer, hb.byteOffset, hb.length))
    if (this.recent.length > 150) {
      this.recent.shift()
      this.recentDv.shift()
    }
    this.parentSlot = slot
    this.stats.lastSlot = slot
    this.stats.blocks++
    this.stats.bytes += off
    this.height++
    this.slot++
    return out.subarray(0, off)
  }
}

export interface WriteOptions extends GenOptions {
  /** gzip level 0-9 (default 1) when `out` ends in .gz */
  gzipLevel?: number
  /**
   * Compress on this many threads (default 1: one gzip stream). Above 1, every block line is its own gzip
   * member (a valid gzip file, read by any gunzip; still deterministic), compressed in parallel.
   */
  gzipThreads?: number
  templates?: TemplateSet
}

/** Write `opts.blocks` blocks to `out` (gzip when it ends in .gz), streaming. */
export async function writeArchive(out: string, opts: WriteOptions): Promise<GenStats> {
  const gen = new BlockGenerator(opts.templates ?? loadTemplates(), opts)
  const file = createWriteStream(out)
  const level = opts.gzipLevel ?? 1
  const threads = Math.max(1, opts.gzipThreads ?? 1)
  const gzipped = out.endsWith('.gz')
  const stream = gzipped && threads === 1 ? createGzip({ level }) : undefined
  stream?.pipe(file)
  const sink: Writable = stream ?? file
  const done = new Promise<void>((resolve, reject) => {
    file.on('finish', resolve)
    file.on('error', reject)
    sink.on('error', reject)
  })
  // output buffers are reused once their line has been consumed (less allocation and GC)
  const free: Buffer[] = []
  const release = (chunk: Buffer) => () =>
    free.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.buffer.byteLength - chunk.byteOffset))
  const write = async (chunk: Buffer, owned = true) => {
    const ok = owned ? sink.write(chunk, release(chunk)) : sink.write(chunk)
    if (!ok) await new Promise((r) => sink.once('drain', r))
  }
  if (gzipped && threads > 1) {
    // members compressed on the libuv thread pool, written in order
    const pending: Promise<Buffer>[] = []
    for (let i = 0; i < opts.blocks; i++) {
      const line = gen.nextBuffer(free.pop())
      pending.push(gzipAsync(line, { level }).then((z) => (release(line)(), z)))
      if (pending.length >= threads) await write(await pending.shift()!, false)
    }
    while (pending.length > 0) await write(await pending.shift()!, false)
  } else {
    for (let i = 0; i < opts.blocks; i++) await write(gen.nextBuffer(free.pop()))
  }
  sink.end()
  await done
  return gen.stats
}
