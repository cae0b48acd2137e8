/** Base58 text of 32-byte keys, remembered per block. */
import { base58Encode } from '../../util/base58.ts'

/** base58 text of 32-byte keys, remembered (a block repeats its programs and accounts) */
export class KeyText {
  private readonly seen = new Map<string, string>()
  of(b: Uint8Array, start: number): string {
    const k = Buffer.from(b.buffer, b.byteOffset + start, 32).toString('latin1')
    let s = this.seen.get(k)
    if (s === undefined) {
      s = base58Encode(b, start, start + 32)
      if (this.seen.size < 100_000) this.seen.set(k, s)
    }
    return s
  }
}
