/** Archive lines (docs/query.md §1): `{"slot", "hash", "height", "block"}`, checked and completed. */
import type { ArchiveLine, RpcBlock } from './types.ts'

/**
 * Checks and completes one parsed archive line. Throws an Error (without location) when the
 * line is not an object with an integer `slot` and an object `block`.
 */
export function toArchiveLine(value: unknown): ArchiveLine {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('expected an object {"slot", "hash", "height", "block"}')
  }
  const v = value as Record<string, unknown>
  const slot = v.slot
  if (typeof slot !== 'number' || !Number.isSafeInteger(slot) || slot < 0) {
    throw new Error(`"slot" must be a non-negative integer, got ${JSON.stringify(slot) ?? 'nothing'}`)
  }
  const block = v.block
  if (typeof block !== 'object' || block === null || Array.isArray(block)) {
    throw new Error('"block" must be an object (a getBlock result)')
  }
  const b = block as RpcBlock
  const hash = v.hash ?? b.blockhash
  if (typeof hash !== 'string') throw new Error('"hash" must be a string (or block.blockhash present)')
  const height = v.height !== undefined ? v.height : (b.blockHeight ?? null)
  if (height !== null && (typeof height !== 'number' || !Number.isSafeInteger(height))) {
    throw new Error(`"height" must be an integer or null, got ${JSON.stringify(height)}`)
  }
  return { slot, hash, height, block: b }
}
