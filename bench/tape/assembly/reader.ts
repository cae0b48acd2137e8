// AssemblyScript (compiled by scripts/build-wasm.mjs into ../reader.wasm; not TypeScript for tsc).
//
// A strict JSON reader for one text at a time, written to measure what reading a block's JSON in
// compiled code costs (bench/tape/reader.ts, `npm run bench -- normalize`). It refuses what
// JSON.parse refuses, and also texts nested deeper than MAX_DEPTH (which JSON.parse reads), and
// writes a tape of i32 entries instead of values:
//
//   1 OBJ end | 2 ARR end   a container; `end` is the index of its END entry
//   3 END
//   4 STR id                a string without escapes or bytes above 0x7f, interned: the same
//                           bytes get the same id in every text read by this instance
//   5 ESC at len            any other string: its bytes (between the quotes) in the input
//   6 INT v                 an integer of at most 9 digits (but -0)
//   7 NUM at len            any other number: its bytes in the input
//   8 TRUE | 9 FALSE | 10 NULL
//
// Object members are their key (STR or ESC) followed by their value. Interned strings are kept,
// with their hashes, in tables that grow as needed and live as long as the instance.

// containers nested at most this deep (the outermost value is level 1)
const MAX_DEPTH = 256

let inp: usize = 0
let inpCap: i32 = 0
let tape: usize = 0
let tapeCap: i32 = 0

// interned strings: their bytes one after another in `arena`; per id its hash, offset and length;
// `table` (open addressing, linear probing, at most half full) holds id + 1, 0 when empty
let arena: usize = 0
let arenaCap: i32 = 0
let arenaLen: i32 = 0
let table: usize = 0
let mask: i32 = 0
let hashes: usize = 0
let offs: usize = 0
let lens: usize = 0
let idCap: i32 = 0
let nIds: i32 = 0
let interning = true

// the text being read: bytes [0, N) of `inp`, the next byte P, the next tape entry T
let P: i32 = 0
let N: i32 = 0
let T: i32 = 0

/** Room for a text of n bytes (and its tape): where to copy it. */
export function input(n: i32): usize {
  if (n > inpCap) {
    inpCap = n * 2
    inp = heap.alloc(inpCap)
  }
  // at most 3 entries per 2 bytes (`[]`: OBJ/ARR, end, END)
  if (n * 2 + 64 > tapeCap) {
    tapeCap = n * 4 + 64
    tape = heap.alloc((<usize>tapeCap) << 2)
  }
  if (table == 0) {
    mask = (1 << 16) - 1
    table = heap.alloc((<usize>(mask + 1)) << 2)
    memory.fill(table, 0, (<usize>(mask + 1)) << 2)
    idCap = 1 << 15
    hashes = heap.alloc((<usize>idCap) << 2)
    offs = heap.alloc((<usize>idCap) << 2)
    lens = heap.alloc((<usize>idCap) << 2)
    arenaCap = 1 << 20
    arena = heap.alloc(arenaCap)
  }
  return inp
}

export function tapePtr(): usize {
  return tape
}
export function arenaPtr(): usize {
  return arena
}
export function offsPtr(): usize {
  return offs
}
export function lensPtr(): usize {
  return lens
}
/** strings interned so far (ids 0..count-1) */
export function count(): i32 {
  return nIds
}
/** off: every string is written as ESC (what interning costs, measured apart) */
export function setInterning(on: bool): void {
  interning = on
}

function emit(k: i32): void {
  store<i32>(tape + ((<usize>T) << 2), k)
  T++
}

/** the bytes [p, p + n) (n < 8) as the low bytes of a u64 */
function tail(p: usize, n: i32): u64 {
  let v: u64 = 0
  for (let i = 0; i < n; i++) v |= (<u64>load<u8>(p + i)) << ((<u64>i) << 3)
  return v
}

function same(a: usize, b: usize, n: i32): bool {
  let k = 0
  for (; k + 8 <= n; k += 8) if (load<u64>(a + k) != load<u64>(b + k)) return false
  for (; k < n; k++) if (load<u8>(a + k) != load<u8>(b + k)) return false
  return true
}

/** twice the ids and the table, the table filled again from the hashes */
function grow(): void {
  const ncap = idCap * 2
  const nh = heap.alloc((<usize>ncap) << 2)
  memory.copy(nh, hashes, (<usize>idCap) << 2)
  hashes = nh
  const no = heap.alloc((<usize>ncap) << 2)
  memory.copy(no, offs, (<usize>idCap) << 2)
  offs = no
  const nl = heap.alloc((<usize>ncap) << 2)
  memory.copy(nl, lens, (<usize>idCap) << 2)
  lens = nl
  idCap = ncap
  const nmask = (mask << 1) | 1
  const nt = heap.alloc((<usize>(nmask + 1)) << 2)
  memory.fill(nt, 0, (<usize>(nmask + 1)) << 2)
  for (let id = 0; id < nIds; id++) {
    let s = load<u32>(hashes + ((<usize>id) << 2)) & (<u32>nmask)
    while (load<i32>(nt + ((<usize>s) << 2)) != 0) s = (s + 1) & nmask
    store<i32>(nt + ((<usize>s) << 2), id + 1)
  }
  table = nt
  mask = nmask
}

/** the id of the bytes inp[a, a + len), a new one if they were not met before */
function intern(a: i32, len: i32): i32 {
  const base = inp + a
  // 8 bytes at a time, the last (overlapping) 8 or the few bytes there are, then a finalizer
  let x: u64 = 0x9e3779b97f4a7c15 ^ (<u64>len)
  let k = 0
  for (; k + 8 <= len; k += 8) x = rotl<u64>((x ^ load<u64>(base + k)) * 0xff51afd7ed558ccd, 29)
  if (k < len) {
    x = rotl<u64>((x ^ (len >= 8 ? load<u64>(base + len - 8) : tail(base + k, len - k))) * 0xc4ceb9fe1a85ec53, 31)
  }
  x ^= x >>> 33
  x *= 0xff51afd7ed558ccd
  x ^= x >>> 33
  const h = <u32>x
  let s = h & (<u32>mask)
  while (true) {
    const e = load<i32>(table + ((<usize>s) << 2))
    if (e == 0) break
    const id = e - 1
    if (
      load<u32>(hashes + ((<usize>id) << 2)) == h &&
      load<i32>(lens + ((<usize>id) << 2)) == len &&
      same(arena + load<i32>(offs + ((<usize>id) << 2)), base, len)
    )
      return id
    s = (s + 1) & (<u32>mask)
  }
  const id = nIds++
  if (arenaLen + len > arenaCap) {
    let c = arenaCap * 2
    while (arenaLen + len > c) c *= 2
    const na = heap.alloc(c)
    memory.copy(na, arena, arenaLen)
    arena = na
    arenaCap = c
  }
  memory.copy(arena + arenaLen, base, len)
  store<u32>(hashes + ((<usize>id) << 2), h)
  store<i32>(offs + ((<usize>id) << 2), arenaLen)
  store<i32>(lens + ((<usize>id) << 2), len)
  arenaLen += len
  store<i32>(table + ((<usize>s) << 2), id + 1)
  if (nIds * 2 > mask || nIds >= idCap) grow()
  return id
}

function ws(): void {
  while (P < N) {
    const c = load<u8>(inp + P)
    if (c == 32 || c == 10 || c == 13 || c == 9) P++
    else break
  }
}

function hex(c: u32): bool {
  return c - 48 < 10 || (c | 32) - 97 < 6
}

/** a string at P (its opening quote) */
function str(): bool {
  const a = P + 1
  let q = a
  let plain = true
  const quote = i8x16.splat(34)
  const backslash = i8x16.splat(92)
  const space = i8x16.splat(32)
  while (true) {
    // 16 bytes at a time up to the first quote, backslash, control byte or byte above 0x7f
    while (q + 16 <= N) {
      const v = v128.load(inp + q)
      const m = i8x16.bitmask(
        v128.or(v128.or(i8x16.eq(v, quote), i8x16.eq(v, backslash)), v128.or(i8x16.lt_u(v, space), v)),
      )
      if (m != 0) {
        q += ctz(m)
        break
      }
      q += 16
    }
    if (q >= N) return false
    const d = load<u8>(inp + q)
    if (d == 34) break
    if (d < 32) return false
    if (d == 92) {
      plain = false
      if (q + 1 >= N) return false
      const e = load<u8>(inp + q + 1)
      if (e == 117) {
        if (q + 5 >= N) return false
        for (let j = 2; j < 6; j++) if (!hex(load<u8>(inp + q + j))) return false
        q += 6
      } else if (e == 34 || e == 92 || e == 47 || e == 98 || e == 102 || e == 110 || e == 114 || e == 116) q += 2
      else return false
      continue
    }
    if (d >= 128) plain = false
    q++
  }
  if (plain && interning) {
    emit(4)
    emit(intern(a, q - a))
  } else {
    emit(5)
    emit(a)
    emit(q - a)
  }
  P = q + 1
  return true
}

function digit(c: u32): bool {
  return c - 48 < 10
}

/** a number at P (JSON's grammar: no leading zeros, digits on both sides of the point) */
function num(): bool {
  const a = P
  let q = P
  const neg = load<u8>(inp + q) == 45
  if (neg) q++
  if (q >= N) return false
  const c = load<u8>(inp + q)
  if (c == 48) q++
  else if (digit(c)) {
    while (q < N && digit(load<u8>(inp + q))) q++
  } else return false
  let int = true
  if (q < N && load<u8>(inp + q) == 46) {
    int = false
    q++
    if (q >= N || !digit(load<u8>(inp + q))) return false
    while (q < N && digit(load<u8>(inp + q))) q++
  }
  if (q < N && (load<u8>(inp + q) | 32) == 101) {
    int = false
    q++
    if (q < N && (load<u8>(inp + q) == 43 || load<u8>(inp + q) == 45)) q++
    if (q >= N || !digit(load<u8>(inp + q))) return false
    while (q < N && digit(load<u8>(inp + q))) q++
  }
  const first = neg ? a + 1 : a
  // (-0 stays a NUM: an i32 has no negative zero)
  if (int && q - first <= 9 && !(neg && load<u8>(inp + first) == 48)) {
    let v: i32 = 0
    for (let k = first; k < q; k++) v = v * 10 + (load<u8>(inp + k) - 48)
    emit(6)
    emit(neg ? -v : v)
  } else {
    emit(7)
    emit(a)
    emit(q - a)
  }
  P = q
  return true
}

/** `true` / `null` (w: their 4 bytes) or `false` (w: its last 4) at P */
function literal(w: u32, len: i32, kind: i32): bool {
  if (P + len > N) return false
  if ((len == 4 ? load<u32>(inp + P) : load<u32>(inp + P + 1)) != w) return false
  emit(kind)
  P += len
  return true
}

/** a value at P (after whitespace) */
function value(depth: i32): bool {
  if (P >= N) return false
  const c = load<u8>(inp + P)
  if (c == 34) return str()
  if (c == 123 || c == 91) {
    if (depth >= MAX_DEPTH) return false
    const object = c == 123
    const at = T
    emit(object ? 1 : 2)
    emit(0)
    P++
    ws()
    if (P < N && load<u8>(inp + P) == (object ? 125 : 93)) P++
    else {
      while (true) {
        if (object) {
          if (P >= N || load<u8>(inp + P) != 34 || !str()) return false
          ws()
          if (P >= N || load<u8>(inp + P) != 58) return false
          P++
          ws()
        }
        if (!value(depth + 1)) return false
        ws()
        if (P >= N) return false
        const d = load<u8>(inp + P)
        P++
        if (d == 44) {
          ws()
          continue
        }
        if (d == (object ? 125 : 93)) break
        return false
      }
    }
    store<i32>(tape + ((<usize>(at + 1)) << 2), T)
    emit(3)
    return true
  }
  if (c == 116) return literal(0x65757274, 4, 8) // true
  if (c == 102) return literal(0x65736c61, 5, 9) // (f)alse
  if (c == 110) return literal(0x6c6c756e, 4, 10) // null
  return num()
}

/** Read the text at input()[0, n): the tape's length, or -1 - the byte offset of the error. */
export function parse(n: i32): i32 {
  N = n
  P = 0
  T = 0
  ws()
  if (!value(0)) return -1 - P
  ws()
  if (P != N) return -1 - P
  return T
}

/** the id of input()[a, a + len) (a name to look for on tapes), interned if new */
export function internAt(a: i32, len: i32): i32 {
  return intern(a, len)
}
