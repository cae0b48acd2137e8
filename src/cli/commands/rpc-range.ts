/**
 * What `solportal dump` and `solportal import --rpc` share: the fetcher of a slot range built from
 * the command line (src/ingest/rpc-fetch.ts, the provider options of src/cli/options.ts), the
 * range's end (the node's finalized head without `--to`), its progress line and the archive line
 * of a fetched block.
 */
import { BlockFetcher } from '../../ingest/rpc-fetch.ts'
import { RpcClient } from '../../ingest/rpc/client.ts'
import { EventSummary, providerClientOptions, redactUrl } from '../../ingest/rpc-provider.ts'
import { fmtDuration } from '../../util/duration.ts'
import { intOption, rpcProviderSettings, UsageError, type RpcProviderFlags } from '../options.ts'

export interface RangeFlags extends RpcProviderFlags {
  from?: string
  to?: string
  rpcConcurrency?: string
}

export interface RangeFetch {
  fetcher: BlockFetcher
  summary: EventSummary
  from: number
  /** the last slot (`--to`, else the node's finalized head when the fetch began) */
  to: number
  /** the node URL fit for logs */
  node: string
  close(): void
}

/** the fetcher of `--rpc URL --from A [--to B]`; misused options are a UsageError */
export async function openRange(
  url: string,
  o: RangeFlags,
  log: (line: string) => void,
  skipped?: ReadonlySet<number>,
): Promise<RangeFetch> {
  if (o.from === undefined) throw new UsageError('--rpc needs --from SLOT (the first slot to fetch)')
  const from = intOption('from', o.from)
  const toFlag = o.to === undefined ? undefined : intOption('to', o.to)
  if (toFlag !== undefined && toFlag < from) throw new UsageError(`--to ${toFlag} is below --from ${from}`)
  const concurrency = intOption('rpc-concurrency', o.rpcConcurrency ?? '8', 1, 256)
  const provider = rpcProviderSettings(o)
  const summary = new EventSummary(log)
  const client = new RpcClient(providerClientOptions(url, provider, summary))
  const fetcher = new BlockFetcher({
    client,
    concurrency,
    skipped,
    onNotAvailable: (_slot, code) => summary.note(code ? `${code} not available` : 'null results'),
  })
  try {
    const to = toFlag ?? (await fetcher.head())
    return {
      fetcher,
      summary,
      from,
      to,
      node: redactUrl(url),
      close: () => {
        summary.close()
        client.close()
      },
    }
  } catch (e) {
    summary.close()
    client.close()
    throw e
  }
}

/** `slot X of A..B (p %), N slots/s, ETA t; the node: 3 HTTP 429, ...` */
export function rangeProgress(
  r: { from: number; to: number; fetcher: BlockFetcher },
  start: number,
  at: number,
  seconds: number,
): string {
  const done = Math.max(0, at - start + 1)
  const total = Math.max(1, r.to - start + 1)
  const rate = seconds > 0 ? done / seconds : 0
  const eta = rate > 0 ? (total - done) / rate : NaN
  const errors = r.fetcher.errorSummary()
  return (
    `slot ${at} of ${start}..${r.to} (${((100 * done) / total).toFixed(1)} %), ${rate.toFixed(1)} slots/s, ETA ${fmtDuration(eta)}` +
    (errors ? `; the node: ${errors}` : '')
  )
}

const NL = 0x0a
const CR = 0x0d

/**
 * The archive line of a fetched block: `{"slot":S,"hash":H,"height":N,"block":RESULT}` with the
 * result's bytes as the node sent them (a line break in them, which JSON allows only as
 * whitespace, becomes a space). `hash` and `height` are left out when not given (then read from
 * the block).
 */
export function archiveLinePieces(slot: number, result: Buffer, hash?: string, height?: number | null): Buffer[] {
  let body = result
  if (body.includes(NL) || body.includes(CR)) {
    body = Buffer.from(body)
    for (let i = 0; i < body.length; i++) if (body[i] === NL || body[i] === CR) body[i] = 0x20
  }
  const head =
    hash === undefined
      ? `{"slot":${slot},"block":`
      : `{"slot":${slot},"hash":${JSON.stringify(hash)},"height":${height == null ? 'null' : String(height)},"block":`
  return [Buffer.from(head), body, Buffer.from('}')]
}
