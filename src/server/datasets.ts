/**
 * Dataset registry: names, aliases, start blocks and the store behind each dataset.
 */
import type { BlockStore } from '../store/types.ts'

export interface DatasetConfig {
  /** canonical name, used in `/datasets/{name}` */
  name: string
  aliases: string[]
  store: BlockStore
  /** lowest slot served; defaults to the store's first block */
  startBlock?: number
  /** true when a live source feeds the store */
  realTime: boolean
  displayName?: string
  /** render u64 amounts as bare integers instead of decimal strings (docs/query.md §3) */
  bigintsAsNumbers?: boolean
  /**
   * directory of the cold store holding the store's finalized blocks (immutable chunk files):
   * worker threads may open it read-only and render finalized ranges (src/server/render-pool.ts)
   */
  coldDir?: string
  /** why the dataset cannot answer now (its object store is unreachable), or null: /ready is 503 meanwhile */
  unavailable?: () => string | null
}

export interface Dataset extends DatasetConfig {
  /** effective start block (configured, else the store's first block, else 0) */
  start(): number
}

export class DatasetRegistry {
  private readonly byName = new Map<string, Dataset>()
  readonly all: Dataset[] = []

  constructor(configs: DatasetConfig[]) {
    for (const c of configs) {
      const ds: Dataset = {
        ...c,
        start: () => c.startBlock ?? c.store.firstBlock() ?? 0,
      }
      for (const n of [c.name, ...c.aliases]) {
        if (this.byName.has(n)) throw new Error(`dataset name or alias '${n}' is used twice`)
        this.byName.set(n, ds)
      }
      this.all.push(ds)
    }
  }

  get(name: string): Dataset | undefined {
    return this.byName.get(name)
  }
}

export function metadataOf(ds: Dataset, expand: boolean): Record<string, unknown> {
  const m: Record<string, unknown> = {
    dataset: ds.name,
    aliases: ds.aliases,
    real_time: ds.realTime,
    start_block: ds.start(),
  }
  if (expand) {
    m.metadata = { kind: 'solana', display_name: ds.displayName ?? ds.name, type: 'solana' }
  }
  return m
}
