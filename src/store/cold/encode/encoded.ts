/**
 * What an encoded column is (`Encoded`: its encoding, its parts and flags, as the chunk file's
 * footer records them) and the small byte helpers every encoder shares.
 */

export type Enc = 'u32' | 'u64' | 'i64' | 'bool' | 'ver' | 'dict' | 'plain' | 'jdict' | 'jplain' | 'addr' | 'list'

export interface Encoded {
  e: Enc
  parts: Uint8Array[]
  /** code / element width in bytes */
  w?: 1 | 2 | 4
  /** validity part present */
  v?: 1
  /**
   * format 2 index parts present: dict / list + codes sorted by value (u32) + dictionary token
   * byte offsets (u32); plain + row token byte offsets (u32)
   */
  x?: 1
  /** format 4: the dictionary is in value order (code order = value order; the sorted codes part is empty) */
  s?: 1
  /** the distinct values (dict, jdict: texts; list: elements) — reused for pruning filters */
  distinct?: string[]
  /** jdict, jplain: one value of each of `distinct` (the same order), for pruning filters */
  objects?: unknown[]
}

export const U32_MAX = 0xffffffff
export const U64_MAX = (1n << 64n) - 1n
export const I64_MIN = -(1n << 63n)
export const I64_MAX = (1n << 63n) - 1n

export function u8(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
}

export function utf8(s: string): Uint8Array {
  return Buffer.from(s, 'utf8')
}

export function widthFor(maxValue: number): 1 | 2 | 4 {
  return maxValue <= 0xff ? 1 : maxValue <= 0xffff ? 2 : 4
}

export function packCodes(codes: Uint32Array, w: 1 | 2 | 4): Uint8Array {
  if (w === 4) return u8(codes)
  if (w === 2) return u8(Uint16Array.from(codes))
  return Uint8Array.from(codes)
}

export function validity(values: ArrayLike<unknown>): Uint8Array | null {
  let any = false
  const v = new Uint8Array(values.length)
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null || values[i] === undefined) any = true
    else v[i] = 1
  }
  return any ? v : null
}

export function fail(name: string, i: number, what: string, value: unknown): never {
  throw new Error(
    `cold store: column ${name} row ${i}: ${what}, got ${typeof value === 'bigint' ? `${value}n` : JSON.stringify(value)}`,
  )
}

export const EMPTY = new Uint8Array(0)
