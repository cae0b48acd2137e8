/**
 * The block of an answer decoded in two parts (block-workers.ts, block-decode.ts `DecodePart`),
 * put together in the decoding thread that finished last (block-worker.ts).
 */
import type { DecodedEnvelope, DecodeMarks } from './block-decode.ts'
import type { NormalizationWarning } from '../model.ts'
import { isPackedBlock, type PackedBlock } from '../store/packed-block.ts'

/**
 * The block of an answer decoded in parts: the parts' packed buffers in order (their lists
 * concatenated are the whole block's; the hot store writes them as one, src/store/packed-block.ts
 * `storedBytes`), their warnings in order, with `marks` (the stages of the part
 * that finished last: the block was ready when both were). A part's thread that found anything
 * unusual decoded the whole answer instead (an error, a damaged block, or the whole block): that
 * answer is the result. Null when the parts' transaction positions do not follow each other (the
 * answer is then decoded again whole).
 */
export function joinParts(parts: DecodedEnvelope[], marks?: DecodeMarks): DecodedEnvelope | null {
  const blocks: { block: PackedBlock & { packed: Uint8Array }; warnings: NormalizationWarning[] }[] = []
  let next = 0
  for (const env of parts) {
    const r = env.result
    if (r?.kind !== 'normalized' || !r.part || !isPackedBlock(r.block) || !(r.block.packed instanceof Uint8Array))
      return env
    blocks.push({ block: { header: r.block.header, packed: r.block.packed }, warnings: r.warnings })
    // the parts' transaction positions follow each other (else: decode the answer whole)
    if (r.part.from !== next) return null
    next = r.part.to
  }
  const packed = blocks.map((p) => p.block.packed)
  return {
    result: {
      kind: 'normalized',
      block: { header: blocks[0].block.header, packed },
      warnings: blocks.flatMap((p) => p.warnings),
      ...(marks ? { marks } : {}),
    },
  }
}
