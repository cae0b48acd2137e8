/**
 * The fake node's block answers: a produced block's header spliced with its template's
 * transactions (a rotating window of `txPerBlock`, every signature rewritten per use; assembled on
 * the first full request, or when produced with `prerender`, and cached for the newest 64 blocks),
 * in the transaction details asked for, with the node's version check (-32015).
 */
import { createHash } from 'node:crypto'
import { base58Encode } from '../../util/base58.ts'
import { JsonRpcFault } from './errors.ts'
import type { Template } from './templates.ts'
import type { FakeBlockInfo, FakeNodeStats, ResolvedOptions } from './types.ts'

export class BlockRenderer {
  private readonly textCache = new Map<string, string>()

  constructor(
    private readonly templates: Template[],
    private readonly opts: ResolvedOptions,
    private readonly stats: FakeNodeStats,
  ) {}

  private sig(orig: string, b: FakeBlockInfo, i: number): string {
    return base58Encode(createHash('sha512').update(`${orig}|${b.slot}|${b.variant}|${i}`).digest())
  }

  /** `firstAbove(v)`: the version of the block's first transaction above version v (-1: legacy), or null */
  blockTexts(b: FakeBlockInfo): {
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

  renderBlock(b: FakeBlockInfo, cfg: Record<string, unknown>): string {
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
}
