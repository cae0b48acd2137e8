/**
 * File and blob position arithmetic that stays exact past 2 GiB and 4 GiB: JS bit operators
 * (`& ~7`, `<<`, `>>>`) work on 32-bit integers, so `(n + 7) & ~7` is negative for n >= 2^31 and
 * `k << 14` overflows for pages past 2 GiB. These use division and multiplication, exact for any
 * safe integer.
 */

/** n rounded up to a multiple of 8 */
export function align8(n: number): number {
  return Math.ceil(n / 8) * 8
}

/** index of the `size`-byte page holding byte `pos` */
export function pageOf(pos: number, size: number): number {
  return Math.floor(pos / size)
}
