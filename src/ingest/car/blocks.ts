/**
 * The blocks of an Old Faithful CAR file or URL, in one streaming pass, each as the bundle the
 * import hands its workers (bundle.ts) with its slot and hash; the parent's hash is carried from
 * block to block and across files (`Chain`).
 */
import { base58Decode, base58Encode } from '../../util/base58.ts'
import { BlockAssembler } from './assemble.ts'
import { encodeBundle } from './bundle.ts'
import { CarError, readCarBatches } from './reader.ts'
import { sourceBytes, type SourceOptions } from './source.ts'

export { CarError } from './reader.ts'

/** The last block seen (its slot and hash), for the next block's previousBlockhash. */
export class Chain {
  private slot = -1
  private hash: Uint8Array | null = null

  /** start from a block (the dataset's last one) */
  constructor(last?: { number: number; hash: string } | null) {
    if (last && last.hash) {
      try {
        const h = base58Decode(last.hash)
        if (h.length === 32) {
          this.slot = last.number
          this.hash = h
        }
      } catch {
        // no usable hash: unknown
      }
    }
  }

  /** the hash of block `parentSlot` when it is the last one seen, else null */
  parentOf(parentSlot: number): Uint8Array | null {
    return parentSlot === this.slot ? this.hash : null
  }

  seen(slot: number, hash: Uint8Array): void {
    this.slot = slot
    this.hash = hash
  }

  /** a block of an archive line (its base58 hash, when it has a valid one) */
  seenText(slot: number, hash: () => string): void {
    this.slot = slot
    this.hash = null
    try {
      const h = base58Decode(hash())
      if (h.length === 32) this.hash = h
    } catch {
      // no usable hash: the next block's parent hash is unknown
    }
  }
}

export interface CarBlockItem {
  slot: number
  /** base58 */
  hash: string
  bundle: Buffer
  /** byte offset of the Block node */
  offset: number
  /** bytes of the file read so far */
  read: number
}

export interface CarBlocksOptions extends SourceOptions {
  verify?: boolean
}

/** The blocks of one CAR file or URL (throws CarError for damage, naming the byte offset). */
export async function* carBlocks(src: string, chain: Chain, opts: CarBlocksOptions = {}): AsyncGenerator<CarBlockItem> {
  const asm = new BlockAssembler({ verify: opts.verify })
  let read = 0
  let header = false
  for await (const v of readCarBatches(sourceBytes(src, opts), { verify: opts.verify })) {
    if (!Array.isArray(v)) {
      header = true
      continue
    }
    for (const sec of v) {
      read = sec.dataOffset + sec.data.length
      const b = asm.add(sec)
      if (!b) continue
      const bundle = encodeBundle(b, chain.parentOf(b.parentSlot))
      chain.seen(b.slot, b.hash)
      yield { slot: b.slot, hash: base58Encode(b.hash), bundle, offset: b.offset, read }
    }
  }
  if (!header) throw new CarError('no CAR header', 0)
  if (asm.leftover > 0)
    throw new CarError(`file ends with ${asm.leftover} nodes of a block without its Block node`, read)
}
