/**
 * `FakeSolanaNode`: a fake Solana node for tests and the demo, real JSON-RPC over HTTP on loopback
 * serving recorded real blocks re-slotted into a longer chain (see src/ingest/fake-node/ for
 * what it does; the chain model is chain.ts, the answers render.ts and methods.ts, the server and
 * its faults http.ts and faults.ts).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mulberry32 } from '../../util/prng.ts'
import { FakeChain } from './chain.ts'
import { BlockFaults } from './faults.ts'
import { onRequest } from './http.ts'
import type { NodeContext } from './methods.ts'
import { BlockRenderer } from './render.ts'
import { DEFAULT_TEMPLATE, parseTemplate, readArchiveLines } from './templates.ts'
import {
  newStats,
  resolveOptions,
  type BlockFault,
  type FakeBlockInfo,
  type FakeNodeOptions,
  type ResolvedOptions,
} from './types.ts'

export class FakeSolanaNode {
  private readonly opts: ResolvedOptions
  private server: Server | null = null
  private timer: NodeJS.Timeout | null = null
  private readonly sockets = new Set<import('node:net').Socket>()
  private readonly model: FakeChain
  private readonly faults: BlockFaults
  private readonly ctx: NodeContext
  readonly firstSlot: number
  /** counters of what was served / injected */
  readonly stats = newStats()
  /** slots listed as produced by getBlocks but answered as skipped by getBlock (`answerSkipped`) */
  private readonly listedSkipped = new Map<number, number>()
  /** slots whose block holds a transaction of a newer version (`refuseVersion`) */
  private readonly refusedVersions = new Map<number, number>()
  /** the first available block (getFirstAvailableBlock; -32001 below it) */
  private firstAvailable: number | null = null
  /** every block that was ever part of the chain and then replaced by a fork */
  readonly orphans: FakeBlockInfo[]
  private listeners: ((b: FakeBlockInfo) => void)[] = []
  private readonly render: BlockRenderer

  constructor(opts: FakeNodeOptions = {}) {
    const lines = opts.templateLines ?? (opts.templates ?? [DEFAULT_TEMPLATE]).flatMap(readArchiveLines)
    if (lines.length === 0) throw new Error('fake node: no template blocks')
    const templates = lines.map(parseTemplate)
    const o = (this.opts = resolveOptions(opts))
    const rnd = mulberry32(o.seed)
    const faultRnd = mulberry32(o.seed ^ 0x5bd1e995)
    this.firstSlot = o.startSlot
    const render = (this.render = new BlockRenderer(templates, o, this.stats))
    this.model = new FakeChain(o, templates.length, rnd, this.stats, (b) => {
      if (o.prerender) render.blockTexts(b)
    })
    this.orphans = this.model.orphans
    this.faults = new BlockFaults(this.stats)
    const node = this
    this.ctx = {
      opts: o,
      stats: this.stats,
      chain: this.model,
      render,
      faults: this.faults,
      listedSkipped: this.listedSkipped,
      refusedVersions: this.refusedVersions,
      faultRnd,
      get firstAvailableSlot() {
        return node.firstAvailable ?? node.firstSlot
      },
    }
    // the first block is never skipped, so that the chain starts at startSlot
    this.model.genesis()
    for (let i = 1; i < o.initialBlocks; i++) this.produce()
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
    const server = createServer((req, res) => onRequest(this.ctx, req, res))
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

  /** produce the next block (skipping slots at skipRate); scripted forks happen here */
  produce(): FakeBlockInfo {
    const b = this.model.produce()
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
    return this.model.fork(depth, branchLength)
  }

  /** the current chain (ascending) */
  chain(): FakeBlockInfo[] {
    return [...this.model.blocks]
  }

  get tip(): FakeBlockInfo {
    return this.model.tip
  }

  get finalizedSlot(): number {
    return this.model.finalized
  }

  /**
   * make `slot` (a slot between produced blocks) listed by getBlocks but answered `code` (-32007 or
   * -32009) by getBlock, as a node does for a slot it lost to a ledger jump
   */
  answerSkipped(slot: number, code = -32007): void {
    if (this.model.bySlot.has(slot)) throw new Error(`slot ${slot} is a produced block`)
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
    this.faults.inject(slot, fault, times)
  }

  /** forget the faults still pending for `slot` (all slots when omitted) */
  clearBlockFaults(slot?: number): void {
    this.faults.clear(slot)
  }

  /** change the finality lag (e.g. to let finalization catch up at the end of a test) */
  setFinalityLag(lag: number): void {
    this.opts.finalityLag = lag
    this.model.updateFinalized()
  }

  /** the full getBlock answer (json encoding, full transactions, rewards, versions up to 1) of a block, as served */
  blockText(b: FakeBlockInfo): string {
    return this.render.blockText(b)
  }
}
