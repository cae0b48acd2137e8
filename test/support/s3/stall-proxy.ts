/**
 * A TCP proxy on loopback in front of a server that can stall: it accepts connections and forwards
 * both ways; once told to stall, it forwards at most `afterBytes` more bytes of each connection's
 * answers and then holds the rest (the connection stays open, nothing more arrives), as a stalled
 * object-store connection does. Healing cuts the connections that lost bytes; new ones pass.
 */
import net from 'node:net'

interface Link {
  client: net.Socket
  upstream: net.Socket
  /** answer bytes forwarded since the stall began */
  sent: number
  /** answer bytes held back (the connection cannot be used again) */
  held: boolean
}

export class StallProxy {
  private stalled: { afterBytes: number } | null = null
  private readonly links = new Set<Link>()
  /** connections accepted so far */
  accepted = 0

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<StallProxy> {
    let self: StallProxy | null = null
    const server = net.createServer((client) => self!.accept(client, targetPort))
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    self = new StallProxy(server, (server.address() as net.AddressInfo).port)
    return self
  }

  private accept(client: net.Socket, targetPort: number): void {
    this.accepted++
    const upstream = net.connect(targetPort, '127.0.0.1')
    const link: Link = { client, upstream, sent: 0, held: false }
    this.links.add(link)
    const end = () => {
      this.links.delete(link)
      client.destroy()
      upstream.destroy()
    }
    client.on('data', (d: Buffer) => upstream.write(d))
    upstream.on('data', (d: Buffer) => {
      const s = this.stalled
      if (!s) return void client.write(d)
      const room = Math.max(0, s.afterBytes - link.sent)
      if (room > 0) client.write(d.subarray(0, room))
      link.sent += Math.min(room, d.length)
      if (d.length > room) link.held = true
    })
    for (const s of [client, upstream]) {
      s.on('error', end)
      s.on('close', end)
    }
  }

  /** from now on, each connection forwards at most `afterBytes` more answer bytes, then stalls */
  stall(afterBytes = 0): void {
    this.stalled = { afterBytes }
    for (const l of this.links) l.sent = 0
  }

  /** forward everything again; connections that held bytes back are cut */
  heal(): void {
    this.stalled = null
    for (const l of [...this.links])
      if (l.held) {
        l.client.destroy()
        l.upstream.destroy()
      }
  }

  async close(): Promise<void> {
    for (const l of this.links) {
      l.client.destroy()
      l.upstream.destroy()
    }
    await new Promise<void>((ok) => this.server.close(() => ok()))
  }
}
