/**
 * A fake Geyser (Yellowstone gRPC) server for tests and the demo: the chain of a `FakeSolanaNode`
 * (src/ingest/fake-node/) streamed through real gRPC on loopback with the same protobuf
 * messages as a validator's plugin: a `SubscribeUpdateBlock` per block (its `getBlock` answer
 * encoded, block.ts; each template transaction's messages encoded once: fake-block.ts) and slot statuses (processed and confirmed with each block, finalized as the
 * node finalizes, dead for the slots a fork abandons), a server ping every `pingIntervalMs`, a pong
 * for every client ping.
 *
 * Blocks go to subscribers at their commitment (processed and confirmed: when produced;
 * finalized: when finalized). `from_slot` replays the blocks kept in a ring of the last
 * `ringSlots` slots (from the ring's first when older, or refused with `refuseOldReplay`). Faults, as servers show them:
 * `disconnect()` ends every subscription; `replaySkip` drops that fraction of replayed blocks and
 * `replayNothing` replays none; `reorder` sends each block's transactions out of order (their
 * `index` tells the order); `incomplete(slot)` sends a block with some transactions left out (its
 * `executed_transaction_count` still counts them); `oversize(slot, bytes)` pads a block's message
 * past `bytes` (an entry with a long hash); a subscriber more than `maxQueued` messages behind is
 * cut (RESOURCE_EXHAUSTED). An `x-token` is required when `token` is set.
 */
import { Server, ServerCredentials, status, type ServerDuplexStream } from '@grpc/grpc-js'
import { mulberry32 } from '../../util/prng.ts'
import { type FakeBlockInfo } from '../fake-node/types.ts'
import { type FakeSolanaNode } from '../fake-node/node.ts'
import { FakeBlockEncoder } from './fake-block.ts'
import { GEYSER_SERVICE } from './client.ts'
import {
  encodeBlockUpdate,
  encodeEncodedBlockUpdate,
  encodeSubscribeUpdate,
  type BlockUpdate,
  type CommitmentLevel,
  type SubscribeRequest,
  type Update,
} from './messages.ts'
import { ProtoWriter } from '../solana-storage/wire.ts'

export interface FakeGeyserOptions {
  /** listen address (default 127.0.0.1, port 0: any free port) */
  host?: string
  port?: number
  /** required `x-token` (default: none) */
  token?: string
  /** slots kept for `from_slot` replays (default 150) */
  ringSlots?: number
  /** fraction of replayed blocks left out (default 0) */
  replaySkip?: number
  /** replay nothing at all (default false) */
  replayNothing?: boolean
  /** refuse a `from_slot` older than the ring (INVALID_ARGUMENT), as Yellowstone does (default false) */
  refuseOldReplay?: boolean
  /** send each block's transactions in a shuffled order (default false) */
  reorder?: boolean
  /** server pings, ms (default 15 000) */
  pingIntervalMs?: number
  /** messages a subscriber may have waiting before it is cut (default 10 000) */
  maxQueued?: number
  /** seed of the faults' PRNG (default 7) */
  seed?: number
}

interface Subscriber {
  call: ServerDuplexStream<SubscribeRequest, Uint8Array>
  commitment: CommitmentLevel
  blocks: string[]
  slots: string[]
  queue: Uint8Array[]
  writing: boolean
  subscribed: boolean
}

interface Sent {
  info: FakeBlockInfo
  /** the SubscribeUpdate message without filters (filters are prepended per subscriber) */
  body: Uint8Array
}

export class FakeGeyserServer {
  readonly node: FakeSolanaNode
  private readonly opts: FakeGeyserOptions
  private readonly server = new Server({
    'grpc.max_send_message_length': -1,
    'grpc.max_receive_message_length': 64 << 20,
  })
  private readonly subs = new Set<Subscriber>()
  private readonly rnd: () => number
  /** blocks streamed, by slot (the last streamed at each slot), for replays */
  private readonly ring = new Map<number, Sent>()
  /** the blocks' messages, each template transaction's encoded once (fake-block.ts) */
  private readonly encoder = new FakeBlockEncoder()
  /** hashes streamed at each slot (a fork streams a slot again) */
  private readonly streamed = new Map<number, string>()
  private orphansSeen = 0
  private finalizedSent = -1
  private port = 0
  private pingTimer: NodeJS.Timeout | null = null
  private readonly incompleteSlots = new Map<number, number>()
  private readonly oversizeSlots = new Map<number, number>()
  readonly stats = {
    refused: 0,
    subscribes: 0,
    blocks: 0,
    replayed: 0,
    replaySkipped: 0,
    disconnects: 0,
    pongs: 0,
    cut: 0,
    incomplete: 0,
  }

  constructor(node: FakeSolanaNode, opts: FakeGeyserOptions = {}) {
    this.node = node
    this.opts = { ...opts }
    this.rnd = mulberry32(opts.seed ?? 7)
    this.server.addService(GEYSER_SERVICE, { Subscribe: (call: Subscriber['call']) => this.onSubscribe(call) })
    // the chain as it is now is streamable (replays); later blocks are streamed as produced
    for (const b of node.chain().slice(-(opts.ringSlots ?? 150))) this.keep(b)
    this.finalizedSent = node.finalizedSlot
    this.orphansSeen = node.orphans.length
    node.onBlock(() => this.onChainChanged())
  }

  static async start(node: FakeSolanaNode, opts: FakeGeyserOptions = {}): Promise<FakeGeyserServer> {
    const s = new FakeGeyserServer(node, opts)
    await s.listen()
    return s
  }

  async listen(): Promise<void> {
    const host = this.opts.host ?? '127.0.0.1'
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(
        `${host.includes(':') ? `[${host}]` : host}:${this.opts.port ?? 0}`,
        ServerCredentials.createInsecure(),
        (err, port) => (err ? reject(err) : resolve(port)),
      ),
    )
    const every = this.opts.pingIntervalMs ?? 15_000
    this.pingTimer = setInterval(() => this.broadcast({ kind: 'ping' }, 'slots'), every)
    this.pingTimer.unref?.()
  }

  get url(): string {
    const host = this.opts.host ?? '127.0.0.1'
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.port}`
  }

  /**
   * drop every connection (as a restart, a load balancer or the network does): the HTTP/2
   * sessions are destroyed, whatever was still being sent is lost
   */
  disconnect(): void {
    for (const s of this.subs) s.queue.length = 0
    this.subs.clear()
    // grpc-js keeps its HTTP/2 sessions in `sessions` (a status sent on each call would wait for
    // the messages before it)
    const sessions = (this.server as unknown as { sessions?: Map<{ destroy(): void }, unknown> }).sessions
    if (!sessions) throw new Error('fake geyser: this @grpc/grpc-js keeps no sessions map')
    for (const session of [...sessions.keys()]) session.destroy()
    this.stats.disconnects++
  }

  /** change the replay faults at run time */
  setFaults(f: { replaySkip?: number; replayNothing?: boolean }): void {
    if (f.replaySkip !== undefined) this.opts.replaySkip = f.replaySkip
    if (f.replayNothing !== undefined) this.opts.replayNothing = f.replayNothing
  }

  get subscribers(): number {
    return this.subs.size
  }

  /** stream the block of `slot` with `missing` of its transactions left out */
  incomplete(slot: number, missing = 1): void {
    this.incompleteSlots.set(slot, missing)
  }

  /** pad the message of the block of `slot` past `bytes` */
  oversize(slot: number, bytes: number): void {
    this.oversizeSlots.set(slot, bytes)
  }

  async stop(): Promise<void> {
    if (this.pingTimer) clearInterval(this.pingTimer)
    for (const s of this.subs) this.cut(s, status.UNAVAILABLE, 'fake geyser: stopping')
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()))
    this.server.forceShutdown()
  }

  // --- the chain ---------------------------------------------------------------------------------

  private encodeBlock(b: FakeBlockInfo): Uint8Array {
    const m: BlockUpdate = this.encoder.update(b.slot, this.node.blockText(b))
    const missing = this.incompleteSlots.get(b.slot)
    if (missing !== undefined) {
      this.stats.incomplete++
      m.transactions = m.transactions.slice(0, Math.max(0, m.transactions.length - missing))
    }
    if (this.opts.reorder) {
      const t = m.transactions
      for (let i = t.length - 1; i > 0; i--) {
        const j = Math.floor(this.rnd() * (i + 1))
        ;[t[i], t[j]] = [t[j], t[i]]
      }
    }
    let block = encodeBlockUpdate(m)
    const pad = this.oversizeSlots.get(b.slot)
    if (pad !== undefined && block.length < pad) {
      // SubscribeUpdateBlock.entries (13): one entry whose hash is long enough
      const w = new ProtoWriter(pad + 64)
      const at = w.begin()
      w.u64Field(1, b.slot)
      w.bytesPresent(4, new Uint8Array(pad - block.length + 16))
      w.end(13, at)
      block = concat(block, w.finish())
    }
    const body = encodeEncodedBlockUpdate(block, [], Date.now())
    return body
  }

  private keep(b: FakeBlockInfo): Sent {
    const s = { info: b, body: this.encodeBlock(b) }
    this.ring.set(b.slot, s)
    this.streamed.set(b.slot, b.hash)
    const keepFrom = b.slot - (this.opts.ringSlots ?? 150)
    for (const slot of this.ring.keys()) {
      if (slot >= keepFrom) break
      this.ring.delete(slot)
      this.streamed.delete(slot)
    }
    return s
  }

  private onChainChanged(): void {
    const chain = this.node.chain()
    // blocks not streamed yet (new, or a fork's), oldest first
    const fresh: FakeBlockInfo[] = []
    for (let i = chain.length - 1; i >= 0 && this.streamed.get(chain[i].slot) !== chain[i].hash; i--)
      fresh.push(chain[i])
    fresh.reverse()
    // slots a fork abandoned and no block of the chain took again are dead
    const orphans = this.node.orphans.slice(this.orphansSeen)
    this.orphansSeen = this.node.orphans.length
    if (orphans.length) {
      const taken = new Set(chain.slice(-orphans.length - fresh.length - 1).map((b) => b.slot))
      for (const o of orphans) {
        if (taken.has(o.slot)) continue
        this.ring.delete(o.slot)
        this.streamed.delete(o.slot)
        this.broadcast(
          { kind: 'slot', slot: { slot: o.slot, parent: o.parentSlot, status: 'dead', deadError: 'fork abandoned' } },
          'slots',
        )
      }
    }
    for (const b of fresh) {
      // when re-sorted, a fork's blocks come after the dead statuses of the slots they leave
      if (this.ring.size > 0 && [...this.ring.keys()].some((s) => s > b.slot)) {
        for (const s of [...this.ring.keys()]) if (s > b.slot) this.ring.delete(s)
      }
      const sent = this.keep(b)
      this.stats.blocks++
      this.broadcast({ kind: 'slot', slot: { slot: b.slot, parent: b.parentSlot, status: 'processed' } }, 'slots')
      for (const s of this.subs) if (s.subscribed && s.commitment !== 'finalized') this.sendBlock(s, sent)
      this.broadcast({ kind: 'slot', slot: { slot: b.slot, parent: b.parentSlot, status: 'confirmed' } }, 'slots')
    }
    const f = this.node.finalizedSlot
    if (f > this.finalizedSent) {
      for (const b of chain) {
        if (b.slot <= this.finalizedSent || b.slot > f) continue
        const sent = this.ring.get(b.slot)
        if (sent) for (const s of this.subs) if (s.subscribed && s.commitment === 'finalized') this.sendBlock(s, sent)
        this.broadcast({ kind: 'slot', slot: { slot: b.slot, parent: b.parentSlot, status: 'finalized' } }, 'slots')
      }
      this.finalizedSent = f
    }
  }

  // --- subscribers -------------------------------------------------------------------------------

  private onSubscribe(call: Subscriber['call']): void {
    const s: Subscriber = {
      call,
      commitment: 'processed',
      blocks: [],
      slots: [],
      queue: [],
      writing: false,
      subscribed: false,
    }
    const token = this.opts.token
    if (token !== undefined && call.metadata.get('x-token')[0] !== token) {
      call.emit('error', { code: status.UNAUTHENTICATED, details: 'fake geyser: invalid x-token' })
      return
    }
    this.subs.add(s)
    const drop = () => this.subs.delete(s)
    call.on('cancelled', drop)
    call.on('error', drop)
    call.on('close', drop)
    call.on('data', (r: SubscribeRequest) => {
      if (r.ping) {
        this.stats.pongs++
        this.send(s, encodeSubscribeUpdate({ filters: [], update: { kind: 'pong', id: r.ping.id } }))
      }
      s.commitment = r.commitment ?? 'processed'
      s.blocks = Object.keys(r.blocks ?? {})
      s.slots = Object.keys(r.slots ?? {})
      if (!s.subscribed && r.fromSlot !== undefined && this.opts.refuseOldReplay) {
        const oldest = Math.min(...this.ring.keys())
        if (r.fromSlot < oldest) {
          this.stats.refused++
          this.cut(
            s,
            status.INVALID_ARGUMENT,
            `fake geyser: from_slot ${r.fromSlot} is not available, oldest ${oldest}`,
          )
          return
        }
      }
      if (!s.subscribed) {
        s.subscribed = true
        this.stats.subscribes++
        if (r.fromSlot !== undefined) this.replay(s, r.fromSlot)
      }
    })
    call.on('end', () => call.end())
  }

  private replay(s: Subscriber, from: number): void {
    if (this.opts.replayNothing || s.blocks.length === 0) return
    const f = this.node.finalizedSlot
    for (const [slot, sent] of [...this.ring.entries()].sort((a, b) => a[0] - b[0])) {
      if (slot < from || (s.commitment === 'finalized' && slot > f)) continue
      if (this.opts.replaySkip && this.rnd() < this.opts.replaySkip) {
        this.stats.replaySkipped++
        continue
      }
      this.stats.replayed++
      this.sendBlock(s, sent)
    }
  }

  private sendBlock(s: Subscriber, sent: Sent): void {
    if (s.blocks.length === 0) return
    this.send(s, withFilters(s.blocks, sent.body))
  }

  private broadcast(update: Update, filter: 'slots'): void {
    const body = encodeSubscribeUpdate({ update, createdAt: Date.now() })
    for (const s of this.subs) {
      if (!s.subscribed) continue
      if (filter === 'slots' && s.slots.length === 0 && update.kind !== 'ping') continue
      this.send(s, withFilters(update.kind === 'ping' ? [] : s.slots, body))
    }
  }

  private send(s: Subscriber, msg: Uint8Array): void {
    s.queue.push(msg)
    if (s.queue.length > (this.opts.maxQueued ?? 10_000)) {
      this.stats.cut++
      this.cut(s, status.RESOURCE_EXHAUSTED, 'fake geyser: subscriber too slow, lagged behind')
      return
    }
    this.pump(s)
  }

  private pump(s: Subscriber): void {
    if (s.writing) return
    while (s.queue.length) {
      const ok = s.call.write(s.queue.shift()!)
      if (!ok) {
        s.writing = true
        s.call.once('drain', () => {
          s.writing = false
          this.pump(s)
        })
        return
      }
    }
  }

  private cut(s: Subscriber, code: status, details: string): void {
    this.subs.delete(s)
    s.queue.length = 0
    s.call.emit('error', { code, details })
  }
}

/** the filter names (field 1) in front of an encoded SubscribeUpdate without any */
function withFilters(filters: string[], body: Uint8Array): Uint8Array {
  if (filters.length === 0) return body
  const w = new ProtoWriter(64)
  for (const f of filters) w.stringPresent(1, f)
  return concat(w.finish(), body)
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
