/**
 * The fake node's JSON-RPC methods: getSlot, getBlocks, getBlocksWithLimit, getBlock,
 * getBlockHeight, getBlockTime, getHealth, getVersion, getFirstAvailableBlock, getGenesisHash,
 * getLatestBlockhash, minimumLedgerSlot; each request of a batch answered on its own, errors as
 * JSON-RPC error objects with the node's codes. `getBlock` also serves the injected faults
 * (not yet available, not available, answered skipped, newer version, damaged answers).
 */
import type { BlockRenderer } from './render.ts'
import type { FakeChain } from './chain.ts'
import { damaged, type BlockFaults } from './faults.ts'
import { JsonRpcFault, StallRequest } from './errors.ts'
import type { Commitment, FakeNodeStats, ResolvedOptions } from './types.ts'

/** what the methods read of the node */
export interface NodeContext {
  readonly opts: ResolvedOptions
  readonly stats: FakeNodeStats
  readonly chain: FakeChain
  readonly render: BlockRenderer
  readonly faults: BlockFaults
  /** slots listed as produced by getBlocks but answered as skipped by getBlock (code) */
  readonly listedSkipped: Map<number, number>
  /** slots whose block holds a transaction of a newer version */
  readonly refusedVersions: Map<number, number>
  /** the first available block (-32001 below it) */
  readonly firstAvailableSlot: number
  /** the fault PRNG */
  readonly faultRnd: () => number
}

function commitmentOf(cfg: unknown): Commitment {
  const c = (cfg as { commitment?: string } | undefined)?.commitment ?? 'finalized'
  if (c !== 'processed' && c !== 'confirmed' && c !== 'finalized')
    throw new JsonRpcFault(-32602, `Invalid params: unknown commitment ${c}`)
  return c
}

function slotParam(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new JsonRpcFault(-32602, 'Invalid params: invalid type: expected u64')
  return v
}

function notABlock(ctx: NodeContext, slot: number, c: Commitment): JsonRpcFault {
  if (slot <= ctx.chain.headSlot(c)) {
    return new JsonRpcFault(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`)
  }
  return new JsonRpcFault(-32004, `Block not available for slot ${slot}`)
}

/** getBlocks (start, [end], [config]) and getBlocksWithLimit (start, limit, [config]) */
function getBlocks(ctx: NodeContext, method: string, params: unknown[]): string {
  const { chain } = ctx
  const start = slotParam(params[0])
  if (method === 'getBlocksWithLimit') {
    const limit = slotParam(params[1])
    return JSON.stringify(chain.slotsIn(start, chain.headSlot(commitmentOf(params[2])), limit))
  }
  let cfg: unknown
  let end: number
  if (typeof params[1] === 'number') {
    end = slotParam(params[1])
    cfg = params[2]
  } else {
    cfg = params[1]
    end = Number.MAX_SAFE_INTEGER
  }
  end = Math.min(end, chain.headSlot(commitmentOf(cfg)))
  if (end - start > 500_000) throw new JsonRpcFault(-32602, `Slot range too large; max 500000`)
  const out = chain.slotsIn(start, end)
  if (ctx.listedSkipped.size > 0) {
    for (const s of ctx.listedSkipped.keys()) if (s >= start && s <= end) out.push(s)
    out.sort((a, b) => a - b)
  }
  return JSON.stringify(out)
}

/** the errors a node gives for a getBlock of `slot` before looking at the block's transactions */
function checkBlockSlot(ctx: NodeContext, slot: number, c: Commitment): void {
  if (c === 'processed') throw new JsonRpcFault(-32602, 'Method does not support commitment below `confirmed`')
  if (slot < ctx.firstAvailableSlot) {
    throw new JsonRpcFault(
      -32001,
      `Block ${slot} cleaned up, does not exist on node. First available block: ${ctx.firstAvailableSlot}`,
    )
  }
  const skippedCode = ctx.listedSkipped.get(slot)
  if (skippedCode !== undefined && slot <= ctx.chain.headSlot(c)) {
    ctx.stats.skippedAnswers++
    throw new JsonRpcFault(skippedCode, `Slot ${slot} was skipped, or missing in long-term storage`)
  }
}

/** the transient answers drawn at `notYetRate` and `notAvailableRate` */
function transientFault(ctx: NodeContext, slot: number): void {
  const { opts, stats } = ctx
  if (opts.notYetRate > 0 && ctx.faultRnd() < opts.notYetRate) {
    stats.notYet++
    throw new JsonRpcFault(-32014, `Block status not yet available for slot ${slot}`)
  }
  if (opts.notAvailableRate > 0 && ctx.faultRnd() < opts.notAvailableRate) {
    stats.notAvailable++
    throw new JsonRpcFault(-32004, `Block not available for slot ${slot}`)
  }
}

function getBlock(ctx: NodeContext, params: unknown[]): string {
  ctx.stats.getBlock++
  const slot = slotParam(params[0])
  const cfg = (typeof params[1] === 'object' && params[1] ? params[1] : {}) as Record<string, unknown>
  const c = commitmentOf(cfg)
  checkBlockSlot(ctx, slot, c)
  const b = ctx.chain.bySlot.get(slot)
  if (!b || slot > ctx.chain.headSlot(c)) throw notABlock(ctx, slot, c)
  transientFault(ctx, slot)
  const full = ((cfg.transactionDetails as string | undefined) ?? 'full') === 'full'
  const newer = ctx.refusedVersions.get(slot)
  const declared = cfg.maxSupportedTransactionVersion
  if (full && newer !== undefined && (typeof declared !== 'number' || declared < newer)) {
    throw new JsonRpcFault(
      -32015,
      `Transaction version (${newer}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${newer}`,
    )
  }
  const fault = full ? ctx.faults.take(slot) : null
  if (fault?.kind === 'stall') throw new StallRequest()
  const text = ctx.render.renderBlock(b, cfg)
  return fault ? damaged(text, fault) : text
}

/** the result text of one call */
function dispatch(ctx: NodeContext, method: string, params: unknown[]): string {
  const { chain } = ctx
  switch (method) {
    case 'getHealth':
      return '"ok"'
    case 'getVersion':
      return '{"solana-core":"1.18.26-solportal-fake","feature-set":3241752014}'
    case 'getGenesisHash':
      return JSON.stringify(chain.hashOf(0, -7))
    case 'getFirstAvailableBlock':
    case 'minimumLedgerSlot':
      return String(ctx.firstAvailableSlot)
    case 'getSlot':
      return String(chain.headSlot(commitmentOf(params[0])))
    case 'getBlockHeight': {
      const s = chain.headSlot(commitmentOf(params[0]))
      return String(chain.bySlot.get(s)?.height ?? chain.tip.height)
    }
    case 'getLatestBlockhash': {
      const s = chain.headSlot(commitmentOf(params[0]))
      const b = chain.bySlot.get(s) ?? chain.tip
      return `{"context":{"slot":${chain.tip.slot}},"value":{"blockhash":${JSON.stringify(b.hash)},"lastValidBlockHeight":${b.height + 150}}}`
    }
    case 'getBlocks':
    case 'getBlocksWithLimit':
      return getBlocks(ctx, method, params)
    case 'getBlockTime': {
      const slot = slotParam(params[0])
      const b = chain.bySlot.get(slot)
      if (!b) throw notABlock(ctx, slot, 'confirmed')
      return String(b.time)
    }
    case 'getBlock':
      return getBlock(ctx, params)
    default:
      throw new JsonRpcFault(-32601, 'Method not found')
  }
}

/** the answer text of one request (of a batch or alone); a stalled request throws StallRequest */
export function handleOne(ctx: NodeContext, req: unknown): string | null {
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
    const result = dispatch(ctx, r.method, params)
    return `{"jsonrpc":"2.0","result":${result},"id":${idText}}`
  } catch (e) {
    if (e instanceof StallRequest) throw e
    if (e instanceof JsonRpcFault) return err(e.code, e.message)
    return err(-32603, `Internal error: ${(e as Error).message}`)
  }
}
