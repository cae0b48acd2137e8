/**
 * A fake Solana node for tests and the demo: real JSON-RPC over HTTP on loopback, serving recorded
 * real blocks re-slotted into a longer chain.
 *
 * Templates are archive files (one `{"slot","hash","height","block"}` line per block, optionally
 * gzip; docs/query.md §1). Each produced block takes a template (round robin), optionally a window
 * of `txPerBlock` of its transactions, and gets its own slot, parentSlot, blockhash,
 * previousBlockhash, blockHeight and blockTime; every transaction's signatures are rewritten so
 * that they are unique per use. Templates are kept as raw JSON text and spliced, so every number
 * (u64 balances included) is served exactly as recorded.
 *
 * The chain grows by one produced block every `intervalMs` (slots may be skipped at `skipRate`),
 * finalization lags the confirmed head by `finalityLag` slots, forks replace the newest confirmed
 * (never finalized) blocks by another branch, and faults (HTTP 429, dropped connections, transient
 * "not available yet" answers) are injected at configurable rates. `injectBlockFault` damages the
 * next full `getBlock` answers of one slot: junk transactions under a valid header, `transactions`
 * not a list, transactions without `meta`, instructions that cannot be normalized, an oversize
 * body, or a stall (headers and a few bytes, then nothing).
 *
 * Methods: getSlot, getBlocks, getBlocksWithLimit, getBlock, getBlockHeight, getBlockTime, getHealth,
 * getVersion, getFirstAvailableBlock, getGenesisHash, getLatestBlockhash, minimumLedgerSlot;
 * JSON-RPC batches; errors as JSON-RPC error objects with the node's codes.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync, gzipSync } from 'node:zlib'
import { base58Encode } from '../util/base58.ts'
import { mulberry32 } from '../util/prng.ts'

export const DEFAULT_TEMPLATE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'data',
  'mainnet',
  'blocks',
  '254170887.jsonl.gz',
)

/** the bundled litesvm sample: legacy, v0 and (from its block 120 on) version 1 transactions */
export const SAMPLE_TEMPLATE = join(dirname(DEFAULT_TEMPLATE), '..', '..', 'sample', 'litesvm.jsonl.gz')

/** the templates of the demo and of `solportal fake-node`: the sample (when present), then the mainnet block */
export function demoTemplates(): string[] {
  return existsSync(SAMPLE_TEMPLATE) ? [SAMPLE_TEMPLATE, DEFAULT_TEMPLATE] : [DEFAULT_TEMPLATE]
}

export interface FakeNodeOptions {
  /** archive files with template blocks (default: the bundled whole mainnet block 254170887) */
  templates?: string[]
  /** raw archive lines instead of files */
  templateLines?: string[]
  /** transactions per produced block, a rotating window over the template's list (default: all) */
  txPerBlock?: number
  /** slot of the first block (default 300 000 000) */
  startSlot?: number
  /** blockHeight of the first block (default 280 000 000) */
  startHeight?: number
  /** blocks produced at creation, before start() (default 1) */
  initialBlocks?: number
  /** produce a block every N ms once started; 0 = only by calling produce() (default 400) */
  intervalMs?: number
  /** probability that a slot is skipped (default 0.1) */
  skipRate?: number
  /** finalized = highest block at or below confirmed − lag (slots; default 32) */
  finalityLag?: number
  /** scripted forks: every N produced blocks (0 = never, default) ... */
  forkEvery?: number
  /** ... replace the newest `forkDepth` unfinalized blocks (default 3) */
  forkDepth?: number
  /** fraction of HTTP requests answered 429 (default 0) */
  rate429?: number
  /** Retry-After of the 429 answers, seconds (default 0) */
  retryAfterSec?: number
  /** fraction of HTTP requests whose connection is dropped (before or in the middle of the answer; default 0) */
  dropRate?: number
  /** fraction of getBlock calls for a produced slot answered -32014 "not available yet" (default 0) */
  notYetRate?: number
  /** PRNG seed (production and faults are deterministic per seed and call order) */
  seed?: number
  /** listen address (default 127.0.0.1, port 0 = any free port) */
  host?: string
  port?: number
  /** seconds between slots in blockTime (default 0.4) */
  slotSeconds?: number
  /**
   * assemble each block's transaction list (signatures, JSON text) when the block is produced
   * instead of on its first full getBlock request (default false): a node serving the block from
   * its store has it at hand; this keeps the fake node's own assembly (~30 ms of JS for 1,500
   * transactions) out of a latency measured from the block's production
   */
  prerender?: boolean
  /**
   * gzip on the wire (default false): answers gzip-compressed when the request accepts it, and
   * gzip-compressed request bodies read (without it they get HTTP 415, as from a node that does
   * not read them)
   */
  gzip?: boolean
  /** with `gzip`: gzip-compressed request bodies refused all the same (HTTP 415), answers still compressed */
  refuseGzipRequests?: boolean
  /** headers every request must carry (name → value), else HTTP 401: a provider's API key */
  requireHeaders?: Record<string, string>
  /** fraction of getBlock calls for a produced slot answered -32004 "not available" (default 0) */
  notAvailableRate?: number
}

/** A damaged answer to a full getBlock request (see `injectBlockFault`). */
export type BlockFault =
  /** a valid header, every transaction replaced by `{"junk":i}` */
  | { kind: 'junk-transactions' }
  /** `"transactions"` an object instead of a list */
  | { kind: 'transactions-not-list' }
  /** every transaction without its `meta` member */
  | { kind: 'no-meta' }
  /** every transaction's `message.instructions` is `[null]` (well-formed shape, not normalizable) */
  | { kind: 'null-instructions' }
  /** the real answer padded (an extra member) to at least `bytes` bytes */
  | { kind: 'oversize'; bytes: number }
  /** headers and the first bytes of the answer, then nothing until the client gives up */
  | { kind: 'stall' }
  /** `blockhash` (or `previousBlockhash`) replaced by `text`, which is not a 32-byte base58 hash */
  | { kind: 'bad-hash'; member: 'blockhash' | 'previousBlockhash'; text: string }

class StallRequest extends Error {}

/** A produced block of the fake chain. */
export interface FakeBlockInfo {
  slot: number
  hash: string
  parentSlot: number
  parentHash: string
  height: number
  time: number
  /** distinguishes re-productions of one slot on different branches */
  variant: number
  template: number
}

interface Template {
  /** raw JSON text of each transaction: [prefix before signatures array, signatures, suffix] */
  /** `version`: the transaction's (-1 for legacy, as for one without a version) */
  txs: { before: string; sigs: string[]; after: string; version: number }[]
  rewards: string | null
}

// --- raw JSON splitting (string-aware) --------------------------------------------------------

function skipWs(t: string, i: number): number {
  while (i < t.length) {
    const c = t.charCodeAt(i)
    if (c === 32 || c === 10 || c === 13 || c === 9) i++
    else break
  }
  return i
}

/** index just after the JSON value starting at i (after whitespace) */
function valueEnd(t: string, i: number): number {
  i = skipWs(t, i)
  const c = t[i]
  if (c === '"') {
    for (let j = i + 1; j < t.length; j++) {
      const d = t.charCodeAt(j)
      if (d === 92) j++
      else if (d === 34) return j + 1
    }
    throw new Error('unterminated string')
  }
  if (c === '{' || c === '[') {
    let depth = 0
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j)
      if (d === 34) {
        j = valueEnd(t, j) - 1
      } else if (d === 123 || d === 91) depth++
      else if (d === 125 || d === 93) {
        depth--
        if (depth === 0) return j + 1
      }
    }
    throw new Error('unterminated object')
  }
  let j = i
  while (j < t.length && !',}] \n\r\t'.includes(t[j])) j++
  return j
}

/** members of the JSON object text, in order, as [key, raw value text, start offset of value] */
function splitObject(t: string): [string, string, number][] {
  const out: [string, string, number][] = []
  let i = skipWs(t, 0)
  if (t[i] !== '{') throw new Error('expected object')
  i = skipWs(t, i + 1)
  if (t[i] === '}') return out
  for (;;) {
    const ke = valueEnd(t, i)
    const key = JSON.parse(t.slice(skipWs(t, i), ke)) as string
    i = skipWs(t, ke)
    if (t[i] !== ':') throw new Error('expected :')
    const vs = skipWs(t, i + 1)
    const ve = valueEnd(t, vs)
    out.push([key, t.slice(vs, ve), vs])
    i = skipWs(t, ve)
    if (t[i] === ',') {
      i = skipWs(t, i + 1)
      continue
    }
    if (t[i] === '}') return out
    throw new Error('expected , or }')
  }
}

function splitArray(t: string): string[] {
  const out: string[] = []
  let i = skipWs(t, 0)
  if (t[i] !== '[') throw new Error('expected array')
  i = skipWs(t, i + 1)
  if (t[i] === ']') return out
  for (;;) {
    const e = valueEnd(t, i)
    out.push(t.slice(skipWs(t, i), e))
    i = skipWs(t, e)
    if (t[i] === ',') {
      i = skipWs(t, i + 1)
      continue
    }
    if (t[i] === ']') return out
    throw new Error('expected , or ]')
  }
}

function member(members: [string, string, number][], key: string): string | undefined {
  return members.find((m) => m[0] === key)?.[1]
}

function parseTemplate(line: string): Template {
  const top = splitObject(line)
  const blockText = member(top, 'block') ?? line
  const block = splitObject(blockText)
  const txsText = member(block, 'transactions')
  const txs: Template['txs'] = []
  if (txsText && txsText !== 'null') {
    for (const tx of splitArray(txsText)) {
      const txm = splitObject(tx)
      const inner = txm.find((m) => m[0] === 'transaction')
      if (!inner) throw new Error('transaction without "transaction"')
      const im = splitObject(inner[1])
      const sig = im.find((m) => m[0] === 'signatures')
      if (!sig) throw new Error('transaction without signatures')
      const sigStart = inner[2] + sig[2]
      const sigEnd = sigStart + sig[1].length
      const version = member(txm, 'version')
      txs.push({
        before: tx.slice(0, sigStart),
        sigs: JSON.parse(sig[1]) as string[],
        after: tx.slice(sigEnd),
        version: version === undefined || version === '"legacy"' ? -1 : Number(version),
      })
    }
  }
  const rewards = member(block, 'rewards')
  return { txs, rewards: rewards && rewards !== 'null' ? rewards : null }
}

export function readArchiveLines(file: string): string[] {
  let buf = readFileSync(file)
  if (file.endsWith('.gz')) buf = gunzipSync(buf)
  return buf
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
}

class JsonRpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

type Commitment = 'processed' | 'confirmed' | 'finalized'

export class FakeSolanaNode {
  private readonly templates: Template[]
  private readonly opts: Required<Omit<FakeNodeOptions, 'templates' | 'templateLines' | 'txPerBlock'>> & {
    txPerBlock: number | undefined
  }
  private readonly rnd: () => number
  private readonly faultRnd: () => number
  private server: Server | null = null
  private timer: NodeJS.Timeout | null = null
  private readonly sockets = new Set<import('node:net').Socket>()
  /** the current (canonical) chain, ascending */
  private chainBlocks: FakeBlockInfo[] = []
  private readonly bySlot = new Map<number, FakeBlockInfo>()
  private nextSlot: number
  private finalized = -1
  private variantCounter = 0
  private producedCount = 0
  private readonly textCache = new Map<string, string>()
  readonly firstSlot: number
  /** counters of what was served / injected */
  readonly stats = {
    requests: 0,
    injected429: 0,
    dropped: 0,
    notYet: 0,
    getBlock: 0,
    forks: 0,
    orphaned: 0,
    blockFaults: 0,
    stalls: 0,
    /** blocks whose transaction list was assembled (signatures and JSON text) */
    assembled: 0,
    /** requests read gzip-compressed, answers sent gzip-compressed, requests refused 401 */
    gzipRequests: 0,
    gzipAnswers: 0,
    /** gzip-compressed requests answered 415 */
    refusedGzip: 0,
    unauthorized: 0,
    /** getBlock answers -32004 injected (`notAvailableRate`), slots answered skipped (`answerSkipped`) */
    notAvailable: 0,
    skippedAnswers: 0,
  }
  /** slots listed as produced by getBlocks but answered as skipped by getBlock (`answerSkipped`) */
  private readonly listedSkipped = new Map<number, number>()
  /** slots whose block holds a transaction of a newer version (`refuseVersion`) */
  private readonly refusedVersions = new Map<number, number>()
  /** the first available block (getFirstAvailableBlock; -32001 below it) */
  private firstAvailable: number | null = null
  private readonly blockFaults = new Map<number, { fault: BlockFault; left: number }[]>()
  /** every block that was ever part of the chain and then replaced by a fork */
  readonly orphans: FakeBlockInfo[] = []
  private listeners: ((b: FakeBlockInfo) => void)[] = []

  constructor(opts: FakeNodeOptions = {}) {
    const lines = opts.templateLines ?? (opts.templates ?? [DEFAULT_TEMPLATE]).flatMap(readArchiveLines)
    if (lines.length === 0) throw new Error('fake node: no template blocks')
    this.templates = lines.map(parseTemplate)
    this.opts = {
      txPerBlock: opts.txPerBlock,
      startSlot: opts.startSlot ?? 300_000_000,
      startHeight: opts.startHeight ?? 280_000_000,
      initialBlocks: opts.initialBlocks ?? 1,
      intervalMs: opts.intervalMs ?? 400,
      skipRate: opts.skipRate ?? 0.1,
      finalityLag: opts.finalityLag ?? 32,
      forkEvery: opts.forkEvery ?? 0,
      forkDepth: opts.forkDepth ?? 3,
      rate429: opts.rate429 ?? 0,
      retryAfterSec: opts.retryAfterSec ?? 0,
      dropRate: opts.dropRate ?? 0,
      notYetRate: opts.notYetRate ?? 0,
      seed: opts.seed ?? 1,
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 0,
      slotSeconds: opts.slotSeconds ?? 0.4,
      prerender: opts.prerender ?? false,
      gzip: opts.gzip ?? false,
      refuseGzipRequests: opts.refuseGzipRequests ?? false,
      requireHeaders: opts.requireHeaders ?? {},
      notAvailableRate: opts.notAvailableRate ?? 0,
    }
    this.rnd = mulberry32(this.opts.seed)
    this.faultRnd = mulberry32(this.opts.seed ^ 0x5bd1e995)
    this.firstSlot = this.opts.startSlot
    this.nextSlot = this.opts.startSlot
    // the first block is never skipped, so that the chain starts at startSlot
    this.appendBlock(this.nextSlot++, null)
    for (let i = 1; i < this.opts.initialBlocks; i++) this.produce()
  }

  /** load templates and listen; production starts when intervalMs > 0 */
  static async start(opts: FakeNodeOptions = {}): Promise<FakeSolanaNode> {
    const n = new FakeSolanaNode(opts)
    await n.start()
    return n
  }

  get url(): string {
    if (!this.server) throw new Error('fake node not started')
    const a = this.server.address() as AddressInfo
    return `http://${this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host}:${a.port}`
  }

  async start(): Promise<void> {
    if (this.server) return
    const server = createServer((req, res) => this.onRequest(req, res))
    server.keepAliveTimeout = 5_000
    server.on('connection', (s) => {
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.opts.port, this.opts.host, () => resolve())
    })
    this.server = server
    this.resume()
  }

  /** stop producing blocks (the server keeps answering) */
  pause(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** (re)start producing a block every intervalMs */
  resume(): void {
    if (this.timer || this.opts.intervalMs <= 0) return
    this.timer = setInterval(() => this.produce(), this.opts.intervalMs)
    this.timer.unref?.()
  }

  async stop(): Promise<void> {
    this.pause()
    const s = this.server
    this.server = null
    if (!s) return
    for (const sock of this.sockets) sock.destroy()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }

  /** called after every produced block (the current chain's new tip) */
  onBlock(fn: (b: FakeBlockInfo) => void): void {
    this.listeners.push(fn)
  }

  // --- chain ------------------------------------------------------------------------------------

  private hashOf(slot: number, variant: number): string {
    return base58Encode(createHash('sha256').update(`fake:${this.opts.seed}:${slot}:${variant}`).digest())
  }

  private appendBlock(slot: number, parent: FakeBlockInfo | null, variant = 0): FakeBlockInfo {
    const b: FakeBlockInfo = {
      slot,
      hash: this.hashOf(slot, variant),
      parentSlot: parent ? parent.slot : slot - 1,
      parentHash: parent ? parent.hash : this.hashOf(slot - 1, -1),
      height: parent ? parent.height + 1 : this.opts.startHeight,
      time: Math.floor(1_700_000_000 + (slot - this.opts.startSlot) * this.opts.slotSeconds),
      variant,
      template: (slot - this.opts.startSlot) % this.templates.length,
    }
    if (this.opts.prerender) this.blockTexts(b)
    this.chainBlocks.push(b)
    this.bySlot.set(slot, b)
    this.updateFinalized()
    return b
  }

  private updateFinalized(): void {
    const tip = this.chainBlocks[this.chainBlocks.length - 1]
    const limit = tip.slot - this.opts.finalityLag
    // highest block at or below the limit; never moves back
    for (let i = this.chainBlocks.length - 1; i >= 0; i--) {
      const b = this.chainBlocks[i]
      if (b.slot <= limit) {
        if (b.slot > this.finalized) this.finalized = b.slot
        break
      }
    }
  }

  /** produce the next block (skipping slots at skipRate); scripted forks happen here */
  produce(): FakeBlockInfo {
    while (this.rnd() < this.opts.skipRate) this.nextSlot++
    const parent = this.chainBlocks[this.chainBlocks.length - 1]
    const b = this.appendBlock(this.nextSlot++, parent)
    this.producedCount++
    if (this.opts.forkEvery > 0 && this.producedCount % this.opts.forkEvery === 0) {
      this.fork(this.opts.forkDepth)
    }
    const tip = this.tip
    for (const l of this.listeners) l(tip)
    return b
  }

  /**
   * Replace the newest `depth` blocks (never a finalized one) by another branch of `branchLength`
   * blocks (default: depth) starting at the same slot, with its own skip pattern and hashes.
   * Returns the number of blocks replaced.
   */
  fork(depth: number, branchLength = depth): number {
    let k = 0
    while (
      k < depth &&
      k < this.chainBlocks.length - 1 &&
      this.chainBlocks[this.chainBlocks.length - 1 - k].slot > this.finalized
    )
      k++
    if (k === 0) return 0
    const removed = this.chainBlocks.splice(this.chainBlocks.length - k, k)
    for (const b of removed) {
      this.bySlot.delete(b.slot)
      this.orphans.push(b)
    }
    this.stats.forks++
    this.stats.orphaned += removed.length
    const variant = ++this.variantCounter
    let slot = removed[0].slot
    let parent = this.chainBlocks[this.chainBlocks.length - 1]
    for (let i = 0; i < Math.max(1, branchLength); i++) {
      if (i > 0) while (this.rnd() < this.opts.skipRate) slot++
      parent = this.appendBlock(slot++, parent, variant)
    }
    this.nextSlot = Math.max(this.nextSlot, slot)
    return k
  }

  /** index of the first chain block with slot >= s */
  private lowerBound(s: number): number {
    let lo = 0
    let hi = this.chainBlocks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.chainBlocks[mid].slot < s) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** the current chain (ascending) */
  chain(): FakeBlockInfo[] {
    return [...this.chainBlocks]
  }

  get tip(): FakeBlockInfo {
    return this.chainBlocks[this.chainBlocks.length - 1]
  }

  get finalizedSlot(): number {
    return this.finalized
  }

  /**
   * make `slot` (a slot between produced blocks) listed by getBlocks but answered `code` (-32007 or
   * -32009) by getBlock, as a node does for a slot it lost to a ledger jump
   */
  answerSkipped(slot: number, code = -32007): void {
    if (this.bySlot.has(slot)) throw new Error(`slot ${slot} is a produced block`)
    this.listedSkipped.set(slot, code)
  }

  /**
   * make the block of `slot` hold a transaction of `version` as far as the node's -32015 check
   * goes: a full getBlock declaring a lower `maxSupportedTransactionVersion` (or none) is refused
   */
  refuseVersion(slot: number, version: number): void {
    this.refusedVersions.set(slot, version)
  }

  /** the node's first available block from now on (getFirstAvailableBlock; -32001 below it) */
  setFirstAvailable(slot: number): void {
    this.firstAvailable = slot
  }

  private get firstAvailableSlot(): number {
    return this.firstAvailable ?? this.firstSlot
  }

  /** change the fault injection rates at run time */
  setFaults(f: {
    rate429?: number
    retryAfterSec?: number
    dropRate?: number
    notYetRate?: number
    notAvailableRate?: number
  }): void {
    if (f.notAvailableRate !== undefined) this.opts.notAvailableRate = f.notAvailableRate
    if (f.rate429 !== undefined) this.opts.rate429 = f.rate429
    if (f.retryAfterSec !== undefined) this.opts.retryAfterSec = f.retryAfterSec
    if (f.dropRate !== undefined) this.opts.dropRate = f.dropRate
    if (f.notYetRate !== undefined) this.opts.notYetRate = f.notYetRate
  }

  /**
   * Damage the next `times` full getBlock answers for `slot` (Infinity: all of them); faults
   * injected for one slot are used in order.
   */
  injectBlockFault(slot: number, fault: BlockFault, times = 1): void {
    const list = this.blockFaults.get(slot) ?? []
    list.push({ fault, left: times })
    this.blockFaults.set(slot, list)
  }

  /** forget the faults still pending for `slot` (all slots when omitted) */
  clearBlockFaults(slot?: number): void {
    if (slot === undefined) this.blockFaults.clear()
    else this.blockFaults.delete(slot)
  }

  private takeBlockFault(slot: number): BlockFault | null {
    const list = this.blockFaults.get(slot)
    if (!list?.length) return null
    const f = list[0]
    if (--f.left <= 0) list.shift()
    if (!list.length) this.blockFaults.delete(slot)
    this.stats.blockFaults++
    return f.fault
  }

  /** the faulty text of a full answer */
  private damaged(text: string, fault: BlockFault): string {
    if (fault.kind === 'oversize') {
      const pad = Math.max(0, fault.bytes - text.length)
      return text.slice(0, -1) + `,"padding":"${'x'.repeat(pad)}"}`
    }
    const block = JSON.parse(text) as Record<string, unknown>
    const txs = block.transactions as Record<string, unknown>[]
    if (fault.kind === 'junk-transactions') block.transactions = txs.map((_t, i) => ({ junk: i }))
    else if (fault.kind === 'transactions-not-list') block.transactions = { count: txs.length }
    else if (fault.kind === 'no-meta') for (const t of txs) delete t.meta
    else if (fault.kind === 'bad-hash') block[fault.member] = fault.text
    else if (fault.kind === 'null-instructions') {
      for (const t of txs) (t.transaction as { message: { instructions: unknown } }).message.instructions = [null]
    }
    return JSON.stringify(block)
  }

  /** change the finality lag (e.g. to let finalization catch up at the end of a test) */
  setFinalityLag(lag: number): void {
    this.opts.finalityLag = lag
    this.updateFinalized()
  }

  private headSlot(c: Commitment): number {
    return c === 'finalized' ? this.finalized : this.tip.slot
  }

  // --- block rendering ---------------------------------------------------------------------------

  private sig(orig: string, b: FakeBlockInfo, i: number): string {
    return base58Encode(createHash('sha512').update(`${orig}|${b.slot}|${b.variant}|${i}`).digest())
  }

  /** `firstAbove(v)`: the version of the block's first transaction above version v (-1: legacy), or null */
  private blockTexts(b: FakeBlockInfo): {
    full: string
    txCount: number
    firstAbove: (declared: number) => number | null
  } {
    const tpl = this.templates[b.template]
    const n = tpl.txs.length
    let picked: Template['txs']
    if (this.opts.txPerBlock === undefined || this.opts.txPerBlock >= n) picked = tpl.txs
    else {
      const k = this.opts.txPerBlock
      const off = n === 0 ? 0 : ((b.slot - this.opts.startSlot) * k) % n
      picked = []
      for (let i = 0; i < k; i++) picked.push(tpl.txs[(off + i) % n])
    }
    const key = `${b.slot}:${b.variant}`
    let full = this.textCache.get(key)
    if (!full) {
      const txs = picked.map(
        (tx, i) => tx.before + JSON.stringify(tx.sigs.map((s, j) => this.sig(s, b, i * 64 + j))) + tx.after,
      )
      full = `[${txs.join(',')}]`
      this.stats.assembled++
      this.textCache.set(key, full)
      if (this.textCache.size > 64) this.textCache.delete(this.textCache.keys().next().value!)
    }
    const firstAbove = (declared: number) => picked.find((t) => t.version > declared)?.version ?? null
    return { full, txCount: picked.length, firstAbove }
  }

  /** the full getBlock answer (json encoding, full transactions, rewards, versions up to 1) of a block, as served */
  blockText(b: FakeBlockInfo): string {
    return this.renderBlock(b, {
      encoding: 'json',
      transactionDetails: 'full',
      rewards: true,
      maxSupportedTransactionVersion: 1,
    })
  }

  private renderBlock(b: FakeBlockInfo, cfg: Record<string, unknown>): string {
    const details = (cfg.transactionDetails as string | undefined) ?? 'full'
    const rewards = cfg.rewards === undefined ? true : Boolean(cfg.rewards)
    const encoding = (cfg.encoding as string | undefined) ?? 'json'
    if (encoding !== 'json') throw new JsonRpcFault(-32602, `Invalid params: fake node serves only the json encoding`)
    let out =
      `{"blockHeight":${b.height},"blockTime":${b.time},"blockhash":${JSON.stringify(b.hash)},` +
      `"parentSlot":${b.parentSlot},"previousBlockhash":${JSON.stringify(b.parentHash)}`
    if (rewards) out += `,"rewards":${this.templates[b.template].rewards ?? '[]'}`
    if (details === 'full') {
      const t = this.blockTexts(b)
      // as a node does: the first transaction of a version above the declared one (none declared:
      // legacy only) fails the whole block
      const declared = cfg.maxSupportedTransactionVersion
      if (declared !== undefined && (typeof declared !== 'number' || !Number.isInteger(declared) || declared < 0)) {
        throw new JsonRpcFault(-32602, 'Invalid params: invalid type: expected u8')
      }
      const above = t.firstAbove(declared ?? -1)
      if (above !== null) {
        throw new JsonRpcFault(
          -32015,
          `Transaction version (${above}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${above}`,
        )
      }
      out += `,"transactions":${t.full}`
    } else if (details === 'signatures') {
      const t = this.blockTexts(b)
      const sigs = JSON.parse(
        `[${[...t.full.matchAll(/"signatures":\s*\[("[1-9A-HJ-NP-Za-km-z]+")/g)].map((m) => m[1]).join(',')}]`,
      ) as string[]
      out += `,"signatures":${JSON.stringify(sigs)}`
    } else if (details !== 'none') {
      throw new JsonRpcFault(-32602, `Invalid params: unknown variant \`${details}\``)
    }
    return out + '}'
  }

  // --- JSON-RPC ----------------------------------------------------------------------------------

  private commitmentOf(cfg: unknown): Commitment {
    const c = (cfg as { commitment?: string } | undefined)?.commitment ?? 'finalized'
    if (c !== 'processed' && c !== 'confirmed' && c !== 'finalized')
      throw new JsonRpcFault(-32602, `Invalid params: unknown commitment ${c}`)
    return c
  }

  private slotParam(v: unknown): number {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw new JsonRpcFault(-32602, 'Invalid params: invalid type: expected u64')
    return v
  }

  /** the result text of one call */
  private dispatch(method: string, params: unknown[]): string {
    switch (method) {
      case 'getHealth':
        return '"ok"'
      case 'getVersion':
        return '{"solana-core":"1.18.26-solportal-fake","feature-set":3241752014}'
      case 'getGenesisHash':
        return JSON.stringify(this.hashOf(0, -7))
      case 'getFirstAvailableBlock':
      case 'minimumLedgerSlot':
        return String(this.firstAvailableSlot)
      case 'getSlot':
        return String(this.headSlot(this.commitmentOf(params[0])))
      case 'getBlockHeight': {
        const s = this.headSlot(this.commitmentOf(params[0]))
        return String(this.bySlot.get(s)?.height ?? this.tip.height)
      }
      case 'getLatestBlockhash': {
        const s = this.headSlot(this.commitmentOf(params[0]))
        const b = this.bySlot.get(s) ?? this.tip
        return `{"context":{"slot":${this.tip.slot}},"value":{"blockhash":${JSON.stringify(b.hash)},"lastValidBlockHeight":${b.height + 150}}}`
      }
      case 'getBlocks':
      case 'getBlocksWithLimit': {
        const start = this.slotParam(params[0])
        let cfg: unknown
        let end: number
        const head = (c: Commitment) => this.headSlot(c)
        if (method === 'getBlocks') {
          if (typeof params[1] === 'number') {
            end = this.slotParam(params[1])
            cfg = params[2]
          } else {
            cfg = params[1]
            end = Number.MAX_SAFE_INTEGER
          }
          end = Math.min(end, head(this.commitmentOf(cfg)))
          if (end - start > 500_000) throw new JsonRpcFault(-32602, `Slot range too large; max 500000`)
        } else {
          const limit = this.slotParam(params[1])
          cfg = params[2]
          end = head(this.commitmentOf(cfg))
          const out: number[] = []
          for (
            let i = this.lowerBound(start);
            i < this.chainBlocks.length && this.chainBlocks[i].slot <= end && out.length < limit;
            i++
          ) {
            out.push(this.chainBlocks[i].slot)
          }
          return JSON.stringify(out)
        }
        const out: number[] = []
        for (let i = this.lowerBound(start); i < this.chainBlocks.length && this.chainBlocks[i].slot <= end; i++) {
          out.push(this.chainBlocks[i].slot)
        }
        if (this.listedSkipped.size > 0) {
          for (const s of this.listedSkipped.keys()) if (s >= start && s <= end) out.push(s)
          out.sort((a, b) => a - b)
        }
        return JSON.stringify(out)
      }
      case 'getBlockTime': {
        const slot = this.slotParam(params[0])
        const b = this.bySlot.get(slot)
        if (!b) throw this.notABlock(slot, 'confirmed')
        return String(b.time)
      }
      case 'getBlock': {
        this.stats.getBlock++
        const slot = this.slotParam(params[0])
        const cfg = (typeof params[1] === 'object' && params[1] ? params[1] : {}) as Record<string, unknown>
        const c = this.commitmentOf(cfg)
        if (c === 'processed') throw new JsonRpcFault(-32602, 'Method does not support commitment below `confirmed`')
        if (slot < this.firstAvailableSlot) {
          throw new JsonRpcFault(
            -32001,
            `Block ${slot} cleaned up, does not exist on node. First available block: ${this.firstAvailableSlot}`,
          )
        }
        const skippedCode = this.listedSkipped.get(slot)
        if (skippedCode !== undefined && slot <= this.headSlot(c)) {
          this.stats.skippedAnswers++
          throw new JsonRpcFault(skippedCode, `Slot ${slot} was skipped, or missing in long-term storage`)
        }
        const b = this.bySlot.get(slot)
        if (!b || slot > this.headSlot(c)) throw this.notABlock(slot, c)
        if (this.opts.notYetRate > 0 && this.faultRnd() < this.opts.notYetRate) {
          this.stats.notYet++
          throw new JsonRpcFault(-32014, `Block status not yet available for slot ${slot}`)
        }
        if (this.opts.notAvailableRate > 0 && this.faultRnd() < this.opts.notAvailableRate) {
          this.stats.notAvailable++
          throw new JsonRpcFault(-32004, `Block not available for slot ${slot}`)
        }
        const full = ((cfg.transactionDetails as string | undefined) ?? 'full') === 'full'
        const newer = this.refusedVersions.get(slot)
        const declared = cfg.maxSupportedTransactionVersion
        if (full && newer !== undefined && (typeof declared !== 'number' || declared < newer)) {
          throw new JsonRpcFault(
            -32015,
            `Transaction version (${newer}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${newer}`,
          )
        }
        const fault = full ? this.takeBlockFault(slot) : null
        if (fault?.kind === 'stall') throw new StallRequest()
        const text = this.renderBlock(b, cfg)
        return fault ? this.damaged(text, fault) : text
      }
      default:
        throw new JsonRpcFault(-32601, 'Method not found')
    }
  }

  private notABlock(slot: number, c: Commitment): JsonRpcFault {
    if (slot <= this.headSlot(c)) {
      return new JsonRpcFault(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`)
    }
    return new JsonRpcFault(-32004, `Block not available for slot ${slot}`)
  }

  private handleOne(req: unknown): string | null {
    const r = req as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown }
    const id = r && typeof r === 'object' && 'id' in r ? r.id : null
    const idText = JSON.stringify(id ?? null)
    const err = (code: number, message: string) =>
      `{"jsonrpc":"2.0","error":{"code":${code},"message":${JSON.stringify(message)}},"id":${idText}}`
    if (!r || typeof r !== 'object' || r.jsonrpc !== '2.0' || typeof r.method !== 'string') {
      return err(-32600, 'Invalid request')
    }
    const params = r.params === undefined ? [] : r.params
    if (!Array.isArray(params)) return err(-32602, 'Invalid params: expected an array')
    try {
      const result = this.dispatch(r.method, params)
      return `{"jsonrpc":"2.0","result":${result},"id":${idText}}`
    } catch (e) {
      if (e instanceof StallRequest) throw e
      if (e instanceof JsonRpcFault) return err(e.code, e.message)
      return err(-32603, `Internal error: ${(e as Error).message}`)
    }
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      this.stats.requests++
      if (req.method !== 'POST') {
        if (req.method === 'GET' && req.url === '/health') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
          return
        }
        res
          .writeHead(405, { 'content-type': 'text/plain' })
          .end('Used HTTP Method is not allowed. POST or OPTIONS is required')
        return
      }
      for (const [name, value] of Object.entries(this.opts.requireHeaders)) {
        if (req.headers[name.toLowerCase()] !== value) {
          this.stats.unauthorized++
          res.writeHead(401, { 'content-type': 'text/plain' }).end('Unauthorized: a valid API key is required')
          return
        }
      }
      let raw = Buffer.concat(chunks)
      if (/gzip/i.test(req.headers['content-encoding'] ?? '')) {
        if (!this.opts.gzip || this.opts.refuseGzipRequests) {
          this.stats.refusedGzip++
          res.writeHead(415, { 'content-type': 'text/plain' }).end('Unsupported Content-Encoding')
          return
        }
        try {
          raw = gunzipSync(raw)
        } catch {
          res.writeHead(400, { 'content-type': 'text/plain' }).end('Bad gzip body')
          return
        }
        this.stats.gzipRequests++
      }
      const zipAnswer = this.opts.gzip && /\bgzip\b/i.test(String(req.headers['accept-encoding'] ?? ''))
      if (this.opts.rate429 > 0 && this.faultRnd() < this.opts.rate429) {
        this.stats.injected429++
        res
          .writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(this.opts.retryAfterSec) })
          .end('Too many requests for a specific RPC call')
        return
      }
      const drop = this.opts.dropRate > 0 && this.faultRnd() < this.opts.dropRate
      let body: string
      const text = raw.toString('utf8')
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined
      }
      try {
        if (parsed === undefined) {
          body = '{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}'
        } else if (Array.isArray(parsed)) {
          if (parsed.length === 0)
            body = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request"},"id":null}'
          else body = `[${parsed.map((p) => this.handleOne(p)).join(',')}]`
        } else {
          body = this.handleOne(parsed) ?? ''
        }
      } catch (e) {
        if (!(e instanceof StallRequest)) throw e
        // the answer starts, then nothing: the connection stays open until the client gives up
        this.stats.stalls++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write('{"jsonrpc":"2.0",')
        return
      }
      if (drop) {
        this.stats.dropped++
        if (this.faultRnd() < 0.5) {
          req.socket.destroy()
        } else {
          // headers and part of the body, then the connection dies
          const buf = Buffer.from(body, 'utf8')
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(buf.length) })
          res.write(buf.subarray(0, Math.floor(buf.length / 2)), () => req.socket.destroy())
        }
        return
      }
      if (zipAnswer) {
        this.stats.gzipAnswers++
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(body))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(body)
    })
  }
}
