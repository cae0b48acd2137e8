/**
 * Who may use the server `serve` runs: the API keys of the configuration file and of `--api-keys`
 * (src/server/access.ts), the origins allowed to call from a browser (`--cors`) and the proxies
 * whose forwarding headers name the client (`--trust-proxy`). Loaded once the flags are checked.
 */
import { ApiKeys, loadApiKeys } from '../../server/access.ts'
import type { PortalConfig } from '../../server/config.ts'
import { Cors } from '../../server/cors.ts'
import { TrustedProxies } from '../../server/proxy.ts'
import { UsageError } from '../options.ts'
import { usage, type SourcePlan } from './serve-config.ts'
import type { ServeOptions } from './serve.ts'

/** what a list option builds (null when it is empty); its error names the option */
function optionOf<T>(flag: string, values: string[], make: (v: string[]) => T): T | null {
  if (values.length === 0) return null
  try {
    return make(values)
  } catch (e) {
    throw new UsageError(`--${flag}: ${(e as Error).message}`)
  }
}

/** who may use the server: the API keys of the file and of --api-keys (null: no keys, open) */
export function serveAccess(
  plans: SourcePlan[],
  config: PortalConfig | null,
  opts: ServeOptions,
  limits: { rateLimit: number; maxStreamsPerClient: number },
): { apiKeys: ApiKeys | null; cors: Cors | null; trustProxy: TrustedProxies | null } {
  const header = opts.apiKeyHeader ?? config?.apiKeys?.header
  if (opts.apiKeyHeader !== undefined && !/^[A-Za-z0-9-]{1,64}$/.test(opts.apiKeyHeader))
    throw new UsageError(`--api-key-header must be an HTTP header name, got '${opts.apiKeyHeader}'`)
  const names = new Set(plans.flatMap((p) => p.views.flatMap((v) => [v.name, ...v.aliases])))
  const where = opts.config ? `--config ${opts.config}: ` : ''
  const loaded = usage(where, () =>
    loadApiKeys(config?.apiKeys && { ...config.apiKeys, header }, opts.apiKeys ?? [], names),
  )
  if (!loaded && opts.apiKeyHeader !== undefined) throw new UsageError('--api-key-header needs keys (--api-keys FILE)')
  const apiKeys = loaded
    ? new ApiKeys({
        keys: loaded.keys,
        header,
        rateLimit: limits.rateLimit > 0 ? { perSecond: limits.rateLimit, burst: 2 * limits.rateLimit } : null,
        maxStreamsPerClient: limits.maxStreamsPerClient,
      })
    : null
  // the file's values and the flags' together
  const cors = optionOf('cors', [...(config?.cors ?? []), ...(opts.cors ?? [])], (v) => new Cors(v))
  const proxies = [...(config?.trustProxy ?? []), ...(opts.trustProxy ?? [])]
  const trustProxy = optionOf('trust-proxy', proxies, (v) => new TrustedProxies(v))
  return { apiKeys, cors, trustProxy }
}
