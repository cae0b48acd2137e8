/** `serve` options for in-process servers in tests: port 0 on loopback, no rate limit, then `o`. */
import type { ServeOptions } from '../../src/cli/commands/serve.ts'

export const serveOptions = (o: Partial<ServeOptions> = {}): ServeOptions => ({
  port: '0',
  host: '127.0.0.1',
  commitment: 'confirmed',
  rpcConcurrency: '4',
  responseTimeMs: '10000',
  responseBytes: String(20 * 1024 * 1024),
  headWaitMs: '1000',
  maxStreams: '1024',
  rateLimit: '0',
  ...o,
})
