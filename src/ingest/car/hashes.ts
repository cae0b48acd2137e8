/**
 * The checksums of DataFrame payloads: CRC-64/ISO as Go's `hash/crc64` computes it with the ISO
 * table (reflected polynomial 0xD800000000000000, initial value and final xor all ones; current
 * files) and FNV-1a 64 (older files). Both in two 32-bit halves: no bigint per byte.
 */

const CRC_LO = new Uint32Array(256)
const CRC_HI = new Uint32Array(256)
for (let i = 0; i < 256; i++) {
  let lo = i
  let hi = 0
  for (let k = 0; k < 8; k++) {
    const bit = lo & 1
    lo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0
    hi = hi >>> 1
    if (bit) hi = (hi ^ 0xd8000000) >>> 0
  }
  CRC_LO[i] = lo
  CRC_HI[i] = hi
}

function join(hi: number, lo: number): bigint {
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)
}

/** CRC-64/ISO (Go `crc64.Checksum(data, crc64.MakeTable(crc64.ISO))`) of the parts, concatenated. */
export function crc64Iso(parts: readonly Uint8Array[]): bigint {
  let lo = 0xffffffff
  let hi = 0xffffffff
  for (const p of parts) {
    for (let i = 0; i < p.length; i++) {
      const idx = (lo ^ p[i]) & 0xff
      lo = ((lo >>> 8) | ((hi & 0xff) << 24)) ^ CRC_LO[idx]
      hi = (hi >>> 8) ^ CRC_HI[idx]
    }
  }
  return join(~hi, ~lo)
}

/** FNV-1a 64 of the parts, concatenated. */
export function fnv1a64(parts: readonly Uint8Array[]): bigint {
  let lo = 0x84222325
  let hi = 0xcbf29ce4
  for (const p of parts) {
    for (let i = 0; i < p.length; i++) {
      lo = (lo ^ p[i]) >>> 0
      // (hi·2^32 + lo) · (2^40 + 0x1b3) mod 2^64
      const prod = lo * 0x1b3
      const carry = Math.floor(prod / 4294967296)
      hi = (Math.imul(hi, 0x1b3) + carry + (lo << 8)) >>> 0
      lo = prod >>> 0
    }
  }
  return join(hi, lo)
}
