/**
 * A Yellowstone gRPC (Geyser) `Subscribe` client on `@grpc/grpc-js`, with this module's own
 * message codecs (messages.ts) in a generic client (`makeGenericClientConstructor`): no `.proto`
 * file is loaded at run time.
 *
 * `GeyserFeed` keeps one subscription open: TLS for `https://` URLs, plaintext for `http://`, the
 * `x-token` header when a token is given, messages up to `maxMessageBytes` (default 512 MiB: a
 * mainnet block with all its transactions is tens of MB, far above gRPC's default of 4 MB). It
 * writes a ping every `pingIntervalMs` (default 10 s; the server answers with a pong, and load
 * balancers see traffic), answers the server's pings, takes a subscription that received nothing
 * for `idleTimeoutMs` (default 30 s) for dead, and reconnects with exponential backoff (full
 * jitter), asking the server to replay from `fromSlot()` (`from_slot`; not after a subscription that
 * ended before its first message, as one whose replay the server refuses does). Messages are read with
 * backpressure: `pause()` stops reading (HTTP/2 flow control then stops the server) until
 * `resume()`.
 */
import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type Client,
  type ClientDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js'
import {
  decodeSubscribeRequest,
  decodeSubscribeUpdate,
  encodeSubscribeRequest,
  encodeSubscribeUpdate,
  type CommitmentLevel,
  type SubscribeRequest,
  type SubscribeUpdate,
} from './messages.ts'

/**
 * the Geyser service's Subscribe method with this module's codecs (client and fake server);
 * `frames`: block updates are read for their header only (`block-frame`, messages.ts)
 */
function geyserService(frames: boolean): ServiceDefinition {
  return {
    Subscribe: {
      path: '/geyser.Geyser/Subscribe',
      requestStream: true,
      responseStream: true,
      requestSerialize: (r: SubscribeRequest) => Buffer.from(encodeSubscribeRequest(r)),
      requestDeserialize: (b: Buffer) => decodeSubscribeRequest(b),
      responseSerialize: (u: Uint8Array) => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.length)),
      /** the update decoded, with its size on the wire */
      responseDeserialize: (b: Buffer): Received => {
        const update = decodeSubscribeUpdate(b, frames)
        // gRPC reads a message of 4 KiB or more into memory of its own behind its 5-byte frame
        // header (Buffer.concat; smaller ones share Node's buffer pool): that memory may be given
        // to another thread
        if (update.update?.kind === 'block-frame') update.update.frame.own = b.buffer.byteLength <= b.length + 5
        return { update, bytes: b.length }
      },
    },
  }
}

export const GEYSER_SERVICE: ServiceDefinition = geyserService(false)
const GEYSER_FRAMES_SERVICE: ServiceDefinition = geyserService(true)

export interface Received {
  update: SubscribeUpdate
  bytes: number
}

export const DEFAULT_GEYSER_MAX_MESSAGE_BYTES = 512 * 1024 * 1024
const FLOW_CONTROL_WINDOW = 32 * 1024 * 1024

export interface GeyserFeedOptions {
  /** `https://host:port` (TLS) or `http://host:port` (plaintext) */
  url: string
  /** sent as the `x-token` header */
  token?: string
  /** commitment of the blocks streamed (default `confirmed`) */
  commitment?: CommitmentLevel
  /** largest message accepted (default 512 MiB) */
  maxMessageBytes?: number
  /** a ping written every this many ms (default 10 000) */
  pingIntervalMs?: number
  /** a subscription that received nothing for this long is dropped and reopened, ms (default 30 000) */
  idleTimeoutMs?: number
  /** first reconnect delay, ms (default 100); doubles per failure up to `maxBackoffMs` (default 10 000) */
  minBackoffMs?: number
  maxBackoffMs?: number
  /** the slot to replay from on each (re)connect (`from_slot`; undefined: none) */
  fromSlot?: () => number | undefined
  /**
   * block updates read for their header only (`block-frame`), their message left whole for a
   * block decoding thread (default: decoded here, `block`)
   */
  blockFrames?: boolean
  /** every update received, in order */
  onUpdate: (u: SubscribeUpdate, bytes: number) => void
  /** a subscription opened (`n`: 1 for the first) */
  onConnect?: (n: number) => void
  /** a subscription ended (the feed reconnects unless closed) */
  onDisconnect?: (err: Error) => void
}

/** the request of a subscription: blocks with transactions, slot statuses, no accounts */
export function blocksRequest(commitment: CommitmentLevel, fromSlot?: number): SubscribeRequest {
  return {
    slots: { solportal: { filterByCommitment: false, interslotUpdates: false } },
    blocks: {
      solportal: { accountInclude: [], includeTransactions: true, includeAccounts: false, includeEntries: false },
    },
    commitment,
    fromSlot,
  }
}

type GeyserClientStub = Client & {
  Subscribe(metadata: Metadata): ClientDuplexStream<SubscribeRequest, Received>
}

export class GeyserFeed {
  private readonly opts: GeyserFeedOptions
  private readonly client: GeyserClientStub
  private call: ClientDuplexStream<SubscribeRequest, Received> | null = null
  private closed = false
  private paused = false
  private failures = 0
  private pingTimer: NodeJS.Timeout | null = null
  private retryTimer: NodeJS.Timeout | null = null
  private lastMessageAt = 0
  private nextPingId = 1
  /** the last subscription ended before any message: the next one asks for no replay */
  private skipReplay = false
  readonly commitment: CommitmentLevel
  readonly stats = { connects: 0, disconnects: 0, messages: 0, bytes: 0, pings: 0, pongs: 0, serverPings: 0 }

  constructor(opts: GeyserFeedOptions) {
    this.opts = opts
    this.commitment = opts.commitment ?? 'confirmed'
    const u = new URL(opts.url)
    if (u.protocol !== 'https:' && u.protocol !== 'http:') {
      throw new Error(`--geyser ${opts.url}: expected an http:// or https:// URL`)
    }
    const port = u.port || (u.protocol === 'https:' ? '443' : '80')
    const Ctor = makeGenericClientConstructor(
      opts.blockFrames ? GEYSER_FRAMES_SERVICE : GEYSER_SERVICE,
      'geyser.Geyser',
    )
    const max = opts.maxMessageBytes ?? DEFAULT_GEYSER_MAX_MESSAGE_BYTES
    this.client = new Ctor(
      `${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${port}`,
      u.protocol === 'https:' ? credentials.createSsl() : credentials.createInsecure(),
      {
        'grpc.max_receive_message_length': max,
        // HTTP/2 flow control windows (stream and connection) of 32 MiB instead of 64 KiB: a block
        // of several MB then arrives without waiting for a window update per 64 KiB, each of which
        // waits for this (busy) thread to read the data before it; a paused feed holds at most
        // this much more
        'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW,
        'grpc.max_send_message_length': 64 * 1024 * 1024,
        // HTTP/2 pings keep idle connections through proxies and detect dead peers
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
        'grpc.keepalive_permit_without_calls': 1,
      },
    ) as unknown as GeyserClientStub
  }

  start(): void {
    if (this.call || this.closed) return
    this.open()
  }

  private request(fromSlot?: number): SubscribeRequest {
    return blocksRequest(this.commitment, fromSlot)
  }

  private open(): void {
    this.retryTimer = null
    if (this.closed) return
    const md = new Metadata()
    if (this.opts.token) md.set('x-token', this.opts.token)
    const call = this.client.Subscribe(md)
    this.call = call
    let ended = false
    let gotMessage = false
    const end = (err: Error) => {
      if (ended) return
      ended = true
      if (this.call === call) this.call = null
      this.stopPings()
      call.removeAllListeners('data')
      call.on('error', () => {})
      call.cancel()
      if (this.closed) return
      this.stats.disconnects++
      if (gotMessage) this.failures = 0
      // a server that refuses the replay (from_slot older than it keeps) ends the subscription at
      // once: the next one goes without (the caller fills what the replay would have sent)
      this.skipReplay = !gotMessage && !this.skipReplay
      this.opts.onDisconnect?.(err)
      const cap = Math.min(this.opts.maxBackoffMs ?? 10_000, (this.opts.minBackoffMs ?? 100) * 2 ** this.failures)
      this.failures = Math.min(this.failures + 1, 16)
      this.retryTimer = setTimeout(() => this.open(), Math.random() * cap)
    }
    call.on('data', (r: Received) => {
      this.lastMessageAt = Date.now()
      if (!gotMessage) {
        gotMessage = true
        this.failures = 0
      }
      this.stats.messages++
      this.stats.bytes += r.bytes
      const k = r.update.update?.kind
      if (k === 'ping') {
        // the server's keep-alive: answered (some proxies close streams that only receive)
        this.stats.serverPings++
        this.writePing()
      } else if (k === 'pong') this.stats.pongs++
      this.opts.onUpdate(r.update, r.bytes)
    })
    call.on('error', (err: Error) => end(err))
    call.on('end', () => end(new Error('the server ended the subscription')))
    call.on('close', () => end(new Error('the subscription closed')))
    this.stats.connects++
    this.lastMessageAt = Date.now()
    call.write(this.request(this.skipReplay ? undefined : this.opts.fromSlot?.()))
    if (this.paused) call.pause()
    this.startPings(call, end)
    this.opts.onConnect?.(this.stats.connects)
  }

  private writePing(): void {
    const call = this.call
    if (!call) return
    this.stats.pings++
    // the filters again (unchanged) with the ping: a request replaces the subscription's filters
    call.write({ ...this.request(), ping: { id: this.nextPingId++ & 0x7fffffff } })
  }

  private startPings(call: ClientDuplexStream<SubscribeRequest, Received>, end: (e: Error) => void): void {
    const every = this.opts.pingIntervalMs ?? 10_000
    const idle = this.opts.idleTimeoutMs ?? 30_000
    this.pingTimer = setInterval(
      () => {
        if (this.call !== call) return
        // a paused feed receives nothing on purpose
        if (!this.paused && Date.now() - this.lastMessageAt > idle) {
          end(new Error(`nothing received for ${idle} ms`))
          return
        }
        this.writePing()
      },
      Math.min(every, idle),
    )
    this.pingTimer.unref?.()
  }

  private stopPings(): void {
    if (this.pingTimer) clearInterval(this.pingTimer)
    this.pingTimer = null
  }

  /** drop the current subscription and open another (as after a failure) */
  reconnect(reason = 'reconnect asked'): void {
    const call = this.call
    if (call) call.emit('error', new Error(reason))
  }

  /** stop reading messages (backpressure) */
  pause(): void {
    if (this.paused) return
    this.paused = true
    this.call?.pause()
  }

  resume(): void {
    if (!this.paused) return
    this.paused = false
    this.lastMessageAt = Date.now()
    this.call?.resume()
  }

  get connected(): boolean {
    return this.call !== null
  }

  close(): void {
    this.closed = true
    this.stopPings()
    if (this.retryTimer) clearTimeout(this.retryTimer)
    const call = this.call
    this.call = null
    if (call) {
      call.removeAllListeners('data')
      call.on('error', () => {})
      call.cancel()
    }
    this.client.close()
  }
}

/** a SubscribeUpdate as the server writes it (fake-server.ts) */
export { encodeSubscribeUpdate }
