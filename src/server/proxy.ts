/**
 * Trusted proxies (`--trust-proxy CIDR...`, `trustProxy` in the configuration file): the client
 * address of a request (its rate limit and stream cap, the access log) is the peer's address,
 * unless the peer is a trusted proxy: then it comes from `Forwarded` (RFC 7239, its `for=`
 * parameters) or, without it, `X-Forwarded-For`. The chain of addresses is walked from the right
 * (the hop nearest to this server) past the trusted proxies; the first address that is not trusted
 * is the client. A client cannot choose its address by sending the header itself: only what
 * trusted hops appended is believed. An entry that is not an address (`unknown`, an obfuscated
 * name) ends the walk at the trusted hop that wrote it.
 */
import { BlockList, isIP } from 'node:net'

/** `::ffff:1.2.3.4` (an IPv4 peer on a dual-stack socket) as `1.2.3.4` */
export function normalizeAddress(a: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a)
  return m ? m[1] : a
}

/** the address of a forwarded-for entry, without quotes, brackets or port; null when it is none */
export function forwardedAddress(entry: string): string | null {
  let v = entry.trim()
  if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1)
  if (v.startsWith('[')) {
    const end = v.indexOf(']')
    v = end > 0 ? v.slice(1, end) : v
  } else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(v)) v = v.slice(0, v.indexOf(':'))
  return isIP(v) ? normalizeAddress(v) : null
}

/** the `for=` values of a Forwarded header, in order (a pair without `for` counts as unknown) */
export function forwardedFor(header: string): string[] {
  const out: string[] = []
  for (const element of header.split(',')) {
    const pair = element
      .split(';')
      .map((p) => p.trim())
      .find((p) => /^for=/i.test(p))
    out.push(pair ? pair.slice(4) : 'unknown')
  }
  return out
}

export class TrustedProxies {
  private readonly list = new BlockList()

  /** addresses or CIDR ranges (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`); throws on a wrong one */
  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const [addr, bits, ...rest] = c.split('/')
      const family = isIP(addr)
      const max = family === 6 ? 128 : 32
      const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
      if (!family || rest.length || !(prefix >= 0 && prefix <= max)) {
        throw new Error(`a trusted proxy is an address or a CIDR range (10.0.0.0/8, fd00::/8), got '${c}'`)
      }
      this.list.addSubnet(addr, prefix, family === 6 ? 'ipv6' : 'ipv4')
    }
  }

  trusts(address: string): boolean {
    const a = normalizeAddress(address)
    const family = isIP(a)
    return family !== 0 && this.list.check(a, family === 6 ? 'ipv6' : 'ipv4')
  }

  /** the client address of a request from `peer` with these headers (see the module's comment) */
  clientOf(peer: string, forwarded?: string | string[], xForwardedFor?: string | string[]): string {
    const p = normalizeAddress(peer)
    if (!this.trusts(p)) return p
    const join = (h: string | string[]) => (Array.isArray(h) ? h.join(',') : h)
    const hops =
      forwarded !== undefined
        ? forwardedFor(join(forwarded))
        : xForwardedFor !== undefined
          ? join(xForwardedFor).split(',')
          : []
    let client = p
    for (let i = hops.length - 1; i >= 0; i--) {
      const a = forwardedAddress(hops[i])
      if (a === null) return client
      client = a
      if (!this.trusts(a)) return a
    }
    return client
  }
}
