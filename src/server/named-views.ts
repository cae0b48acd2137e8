/**
 * The names a source is served under, and the default ones of `serve` without a configuration
 * file (`serve` plans its sources with them before loading anything).
 */
import type { View } from './config.ts'

/** a name a source is served under */
export interface NamedView {
  name: string
  aliases: string[]
  view: View
  startBlock?: number
  displayName?: string
  bigintsAsNumbers?: boolean
}

export const DEFAULT_VIEWS: readonly NamedView[] = [
  { name: 'solana-mainnet', aliases: ['solana-beta'], view: 'stable' },
  { name: 'solana-mainnet-complete', aliases: ['solana-complete'], view: 'complete' },
]
