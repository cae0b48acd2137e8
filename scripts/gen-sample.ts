/**
 * Generates data/sample/litesvm.jsonl.gz: real Solana programs (System, SPL Token, Token-2022, Associated
 * Token Account, Memo, Compute Budget, Address Lookup Table) executed locally by litesvm, packed into
 * `getBlock`-shaped blocks (encoding "json", transactionDetails "full", rewards, v0 and v1 supported) on a
 * synthetic chain: slots from 300,000,000, fixed hashes, deterministic keypairs. From block V1_FROM on,
 * blocks also carry version 1 transactions (SIMD-0385: the compute budget in the message's config),
 * built with @solana/kit's v1 message encoder and executed by litesvm, between accounts of their own
 * and with a PRNG of their own, so that the rest of the chain is what it was without them.
 *
 *   node --import tsx scripts/gen-sample.ts [--blocks N] [--out FILE]
 *
 * Deterministic: the same code gives byte-identical output.
 */
import { LiteSVM } from 'litesvm'
import * as k from '@solana/kit'
import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system'
import * as tok from '@solana-program/token'
import { getAddMemoInstruction } from '@solana-program/memo'
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget'
import { createWriteStream, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { createGzip } from 'node:zlib'
import { base58Encode } from '../src/util/base58.ts'
import {
  Rng,
  TOKEN,
  TOKEN_2022,
  hash58,
  instructionErrorJson,
  mintDecimals,
  parseTokenAccount,
  sha256,
  tokenBalanceJson,
  type TokenAccountInfo,
} from './sample/rpc.ts'

// ---------------------------------------------------------------- parameters
const args = process.argv.slice(2)
const argOf = (name: string, def: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : def
}
const SEED = 'solportal-sample-v1'
const N_BLOCKS = Number(argOf('--blocks', '300'))
const OUT = argOf('--out', 'data/sample/litesvm.jsonl.gz')
const FIRST_SLOT = 300_000_000
const FIRST_HEIGHT = 278_000_000
const EPOCH_TIME = 1_748_736_000 // 2025-06-01T00:00:00Z, the time of FIRST_SLOT
const LAMPORTS_PER_SIGNATURE = 5000n
const SOL = 1_000_000_000n

const SYSTEM = '11111111111111111111111111111111'
const ALT_PROGRAM = 'AddressLookupTab1e1111111111111111111111111'
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL'
const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111'
const NATIVE_MINT = 'So11111111111111111111111111111111111111112'

type Addr = k.Address
type Signer = k.KeyPairSigner
// kit's instruction types are parametrised on every account; the sample only needs them as values
type Ix = any // eslint-disable-line @typescript-eslint/no-explicit-any

const rng = new Rng(0x5a1e)
/** the v1 transactions' own PRNG (their accounts are their own too: the rest of the chain is unchanged) */
const v1rng = new Rng(0x5a1e_0001)
/** the first block index with v1 transactions (an epoch boundary of the sample, as on mainnet) */
const V1_FROM = 120
const svm = new LiteSVM().withBlockhashCheck(false)

// litesvm 1.5 bundles the Memo v3 program as an ELF whose header says e_machine = EM_SBPF (263) while its
// flags say sBPF v0; its own loader rejects that combination (InvalidProgramForExecution). Re-register the
// very same bytecode with the header field set to EM_BPF (247), the value sBPF v0 programs carry.
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'
const MEMO_V1 = 'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo'
{
  const memoAccount = svm.getAccount(k.address(MEMO))
  if (!memoAccount.exists) throw new Error('litesvm has no Memo program')
  const elf = new Uint8Array(memoAccount.data)
  if (elf[18] === 7 && elf[19] === 1) {
    elf[18] = 247
    elf[19] = 0
    svm.addProgramWithLoader(k.address(MEMO), elf, memoAccount.programAddress)
  }
}

// ---------------------------------------------------------------- keys and genesis state
const signerCache = new Map<string, Signer>()
async function signer(name: string): Promise<Signer> {
  let s = signerCache.get(name)
  if (!s) {
    s = await k.createKeyPairSignerFromPrivateKeyBytes(sha256(`${SEED}/key/${name}`))
    signerCache.set(name, s)
  }
  return s
}
function fund(address: Addr, lamports: bigint) {
  svm.setAccount({
    address,
    lamports: k.lamports(lamports),
    data: new Uint8Array(0),
    executable: false,
    programAddress: k.address(SYSTEM),
    space: 0n,
  })
}

const users: Signer[] = []
const relayers: Signer[] = []
const poor: Signer[] = []
const leaders: string[] = []
for (let i = 0; i < 120; i++) {
  const s = await signer(`user-${i}`)
  users.push(s)
  fund(s.address, BigInt(rng.range(5, 400)) * SOL + BigInt(rng.int(1_000_000_000)))
}
for (let i = 0; i < 4; i++) {
  const s = await signer(`relayer-${i}`)
  relayers.push(s)
  fund(s.address, 50_000n * SOL)
}
for (let i = 0; i < 4; i++) {
  const s = await signer(`poor-${i}`)
  poor.push(s)
  fund(s.address, 1_000_000n + BigInt(i) * 7_919n)
}
for (let i = 0; i < 16; i++) leaders.push((await signer(`leader-${i}`)).address)
const leaderBalance = new Map<string, bigint>(leaders.map((l, i) => [l, 20_000n * SOL + BigInt(i) * 123_456_789n]))

interface Mint {
  address: Addr
  program: Addr
  decimals: number
  authority: Signer
}
const mints: Mint[] = []
const atas = new Map<string, Addr>() // `${owner}:${mint}` → ATA (created)
interface Manual {
  address: Addr
  mint: Mint
  owner: Signer
}
const manuals: Manual[] = []
interface Delegation {
  source: Addr
  mint: Mint
  delegate: Signer
  amount: bigint
}
const delegations: Delegation[] = []
let fresh = 0

// ---------------------------------------------------------------- chain
const blockHash = (slot: number) => hash58(`${SEED}/block/${slot}`)
const recentHashes: string[] = [blockHash(FIRST_SLOT - 1)]
const recentSlots: number[] = [FIRST_SLOT - 1]
let currentSlot = FIRST_SLOT

// ---------------------------------------------------------------- address lookup tables
interface Table {
  address: Addr
  authority: Signer
  addresses: Addr[]
  usableFrom: number
}
const tables: Table[] = []

function u32le(n: number) {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setUint32(0, n, true)
  return b
}
function u64le(n: bigint) {
  const b = new Uint8Array(8)
  new DataView(b.buffer).setBigUint64(0, n, true)
  return b
}
function concat(...xs: Uint8Array[]) {
  const out = new Uint8Array(xs.reduce((a, x) => a + x.length, 0))
  let o = 0
  for (const x of xs) out.set(x, (o += x.length) - x.length)
  return out
}
const addrBytes = (a: Addr) => new Uint8Array(k.getAddressEncoder().encode(a))

async function createTableIx(authority: Signer, recentSlot: number): Promise<[Ix, Addr]> {
  const [table, bump] = await k.getProgramDerivedAddress({
    programAddress: k.address(ALT_PROGRAM),
    seeds: [addrBytes(authority.address), u64le(BigInt(recentSlot))],
  })
  const ix = {
    programAddress: k.address(ALT_PROGRAM),
    accounts: [
      { address: table, role: k.AccountRole.WRITABLE },
      { address: authority.address, role: k.AccountRole.READONLY_SIGNER, signer: authority },
      { address: authority.address, role: k.AccountRole.WRITABLE_SIGNER, signer: authority },
      { address: k.address(SYSTEM), role: k.AccountRole.READONLY },
    ],
    data: concat(u32le(0), u64le(BigInt(recentSlot)), new Uint8Array([bump])),
  }
  return [ix, table]
}
function extendTableIx(table: Addr, authority: Signer, addresses: Addr[]): Ix {
  return {
    programAddress: k.address(ALT_PROGRAM),
    accounts: [
      { address: table, role: k.AccountRole.WRITABLE },
      { address: authority.address, role: k.AccountRole.READONLY_SIGNER, signer: authority },
      { address: authority.address, role: k.AccountRole.WRITABLE_SIGNER, signer: authority },
      { address: k.address(SYSTEM), role: k.AccountRole.READONLY },
    ],
    data: concat(u32le(2), u64le(BigInt(addresses.length)), ...addresses.map(addrBytes)),
  }
}

// ---------------------------------------------------------------- execution → RPC JSON
interface Snapshot {
  lamports: bigint
  token?: TokenAccountInfo
}
const decimalsCache = new Map<string, number>()
function decimalsOf(mint: string): number {
  let d = decimalsCache.get(mint)
  if (d === undefined) {
    const a = svm.getAccount(k.address(mint))
    if (!a.exists) throw new Error(`mint ${mint} not found`)
    d = mintDecimals(a.programAddress, a.data)
    if (d === undefined) throw new Error(`${mint} is not a mint`)
    decimalsCache.set(mint, d)
  }
  return d
}
function snapshot(keys: string[]): Snapshot[] {
  return keys.map((key) => {
    const a = svm.getAccount(k.address(key))
    if (!a.exists) return { lamports: 0n }
    return { lamports: a.lamports, token: parseTokenAccount(a.programAddress, a.data) }
  })
}
function tokenBalances(s: Snapshot[]) {
  const out = []
  for (let i = 0; i < s.length; i++) {
    const t = s[i].token
    if (t) out.push(tokenBalanceJson(i, t, decimalsOf(t.mint)))
  }
  return out
}

/** the fields of kit's compiled message read here (its own type is a union over message versions) */
interface Compiled {
  version: 'legacy' | 0 | 1
  header: { numSignerAccounts: number; numReadonlySignerAccounts: number; numReadonlyNonSignerAccounts: number }
  staticAccounts: Addr[]
  instructions: { programAddressIndex: number; accountIndices?: readonly number[]; data?: Uint8Array }[]
  addressTableLookups?: {
    lookupTableAddress: Addr
    writableIndexes: readonly number[]
    readonlyIndexes: readonly number[]
  }[]
}

/** the v1 message's compiled parts (kit: instruction headers and payloads, config mask and values) */
interface CompiledV1 {
  configMask: number
  configValues: { kind: string; value: number | bigint }[]
  instructionHeaders: { programAccountIndex: number }[]
  instructionPayloads: { instructionAccountIndices: readonly number[]; instructionData: Uint8Array }[]
}

/**
 * A v1 compiled message read as the others: its instructions, and the message's transactionConfig
 * as the RPC renders it (each member null when the mask leaves it out). The config values follow
 * the mask's bits in order: priority fee (bits 0-1, u64), compute unit limit (bit 2), loaded
 * accounts data size limit (bit 3), heap size (bit 4).
 */
function readV1(c: Compiled & CompiledV1): { priorityFee: bigint | null; config: Record<string, unknown> } {
  c.instructions = c.instructionHeaders.map((h, i) => ({
    programAddressIndex: h.programAccountIndex,
    accountIndices: c.instructionPayloads[i].instructionAccountIndices,
    data: c.instructionPayloads[i].instructionData,
  }))
  const values = [...c.configValues]
  const take = (bits: number) => ((c.configMask & bits) === bits ? values.shift()!.value : null)
  const priorityFee = take(3)
  const num = (v: number | bigint | null) => (v === null ? null : Number(v))
  const config = {
    computeUnitLimit: num(take(4)),
    loadedAccountsDataSizeLimit: num(take(8)),
    heapSize: num(take(16)),
  }
  if (values.length > 0) throw new Error(`config values left over: mask ${c.configMask}`)
  const fee = priorityFee === null ? null : BigInt(priorityFee)
  return {
    priorityFee: fee,
    config: {
      computeUnitLimit: config.computeUnitLimit,
      heapSize: config.heapSize,
      loadedAccountsDataSizeLimit: config.loadedAccountsDataSizeLimit,
      priorityFee: fee === null ? null : Number(fee),
    },
  }
}

/**
 * fee by the runtime's rules: per signature + compute-unit price × limit (rounded up); a v1
 * message's priority fee is the total its config declares
 */
function feeOf(compiled: Compiled, keys: string[], v1PriorityFee: bigint | null = null): bigint {
  if (compiled.version === 1)
    return LAMPORTS_PER_SIGNATURE * BigInt(compiled.header.numSignerAccounts) + (v1PriorityFee ?? 0n)
  let limit: bigint | undefined
  let price = 0n
  for (const ix of compiled.instructions) {
    if (keys[ix.programAddressIndex] !== COMPUTE_BUDGET || !ix.data) continue
    const dv = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength)
    if (ix.data[0] === 2) limit = BigInt(dv.getUint32(1, true))
    if (ix.data[0] === 3) price = dv.getBigUint64(1, true)
  }
  if (price > 0n && limit === undefined) throw new Error('sample sets a price only together with a limit')
  const priority = limit === undefined ? 0n : (price * limit + 999_999n) / 1_000_000n
  return LAMPORTS_PER_SIGNATURE * BigInt(compiled.header.numSignerAccounts) + priority
}

interface TxOpts {
  version?: 'legacy' | 0
  table?: Table
  /** a version 1 message with this config (the v1 transactions: their own PRNG, `v1rng`) */
  v1?: k.V1TransactionConfig
}
interface TxResult {
  json: unknown
  fee: bigint
  priority: bigint
  failed: boolean
}
const stats = {
  txs: 0,
  failed: 0,
  dropped: 0,
  v0: 0,
  v1: 0,
  withLookups: 0,
  instructions: 0,
  inner: 0,
  maxStack: 1,
  programs: new Map<string, number>(),
  errors: new Map<string, number>(),
}
const blockTxs: TxResult[] = []
let txCounter = 0

async function send(feePayer: Signer, ixs: Ix[], opts: TxOpts = {}): Promise<TxResult | undefined> {
  const r0 = opts.v1 ? v1rng : rng
  const version = opts.v1 ? 1 : (opts.version ?? (rng.chance(0.5) ? 0 : 'legacy'))
  const recent = recentHashes[Math.max(0, recentHashes.length - 1 - r0.int(Math.min(recentHashes.length, 20)))]
  let msg: Ix = k.pipe(
    k.createTransactionMessage({ version: opts.table ? 0 : version }),
    (m) => k.setTransactionMessageFeePayerSigner(feePayer, m),
    (m) =>
      k.setTransactionMessageLifetimeUsingBlockhash({ blockhash: k.blockhash(recent), lastValidBlockHeight: 0n }, m),
    (m) => k.appendTransactionMessageInstructions(ixs, m),
  )
  if (opts.table)
    msg = k.compressTransactionMessageUsingAddressLookupTables(msg, { [opts.table.address]: opts.table.addresses })
  if (opts.v1) msg = k.setTransactionMessageConfig(opts.v1, msg)
  const compiled = k.compileTransactionMessage(msg) as unknown as Compiled
  const v1 = compiled.version === 1 ? readV1(compiled as Compiled & CompiledV1) : null
  const writable: string[] = []
  const readonly: string[] = []
  for (const l of compiled.addressTableLookups ?? []) {
    const t = tables.find((x) => x.address === l.lookupTableAddress)!
    for (const i of l.writableIndexes) writable.push(t.addresses[i])
    for (const i of l.readonlyIndexes) readonly.push(t.addresses[i])
  }
  const keys: string[] = [...compiled.staticAccounts, ...writable, ...readonly]
  const fee = feeOf(compiled, keys, v1?.priorityFee)

  const pre = snapshot(keys)
  const signed = await k.signTransactionMessageWithSigners(msg)
  const r = svm.sendTransaction(signed as Ix)
  let err: unknown = null
  let meta
  if ('err' in r) {
    err = instructionErrorJson(r.err())
    if (err === undefined) {
      stats.dropped++
      console.warn(`dropped (not includable in a block): ${r.toString()}`)
      return undefined
    }
    meta = r.meta()
  } else meta = r
  const post = snapshot(keys)

  // the fee payer pays exactly the fee when nothing else touches it (always so for failed transactions)
  const nSig = compiled.header.numSignerAccounts
  const innerLists = meta.innerInstructions()
  const touchesPayer =
    compiled.instructions.some((ix) => (ix.accountIndices ?? []).includes(0)) ||
    innerLists.some((l) => l.some((ii) => ii.instruction().accounts().includes(0)))
  if ((err !== null || !touchesPayer) && pre[0].lamports - post[0].lamports !== fee)
    throw new Error(`fee mismatch: computed ${fee}, fee payer paid ${pre[0].lamports - post[0].lamports}`)

  const signatures = compiled.staticAccounts.slice(0, nSig).map((a) => base58Encode(signed.signatures[a]!))
  const message: Record<string, unknown> = {
    header: {
      numReadonlySignedAccounts: compiled.header.numReadonlySignerAccounts,
      numReadonlyUnsignedAccounts: compiled.header.numReadonlyNonSignerAccounts,
      numRequiredSignatures: nSig,
    },
    accountKeys: compiled.staticAccounts,
    recentBlockhash: recent,
    instructions: compiled.instructions.map((ix) => ({
      programIdIndex: ix.programAddressIndex,
      accounts: [...(ix.accountIndices ?? [])],
      data: base58Encode(ix.data ?? new Uint8Array(0)),
      stackHeight: null,
    })),
  }
  if (v1) message.transactionConfig = v1.config
  if (compiled.version === 0) {
    message.addressTableLookups = (compiled.addressTableLookups ?? []).map((l) => ({
      accountKey: l.lookupTableAddress,
      writableIndexes: [...l.writableIndexes],
      readonlyIndexes: [...l.readonlyIndexes],
    }))
  }
  const innerInstructions = []
  for (let i = 0; i < innerLists.length; i++) {
    if (innerLists[i].length === 0) continue
    innerInstructions.push({
      index: i,
      instructions: innerLists[i].map((ii) => {
        const c = ii.instruction()
        stats.maxStack = Math.max(stats.maxStack, ii.stackHeight())
        count(keys[c.programIdIndex()])
        stats.inner++
        return {
          programIdIndex: c.programIdIndex(),
          accounts: [...c.accounts()],
          data: base58Encode(c.data()),
          stackHeight: ii.stackHeight(),
        }
      }),
    })
  }
  for (const ix of compiled.instructions) count(keys[ix.programAddressIndex])
  stats.instructions += compiled.instructions.length
  const json = {
    transaction: { signatures, message },
    meta: {
      err,
      status: err === null ? { Ok: null } : { Err: err },
      fee: Number(fee),
      preBalances: pre.map((s) => Number(s.lamports)),
      postBalances: post.map((s) => Number(s.lamports)),
      innerInstructions,
      logMessages: meta.logs(),
      preTokenBalances: tokenBalances(pre),
      postTokenBalances: tokenBalances(post),
      rewards: [],
      loadedAddresses: { writable, readonly },
      computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
    },
    version: compiled.version,
  }
  const res = { json, fee, priority: fee - LAMPORTS_PER_SIGNATURE * BigInt(nSig), failed: err !== null }
  blockTxs.push(res)
  stats.txs++
  // (v1 transactions leave the counter alone: the memo texts of the others stay as they were)
  if (!opts.v1) txCounter++
  if (compiled.version === 0) stats.v0++
  if (compiled.version === 1) stats.v1++
  if (writable.length + readonly.length > 0) stats.withLookups++
  if (err !== null) {
    stats.failed++
    const e = JSON.stringify(err)
    stats.errors.set(e, (stats.errors.get(e) ?? 0) + 1)
  }
  return res
}
function count(program: string) {
  stats.programs.set(program, (stats.programs.get(program) ?? 0) + 1)
}

// ---------------------------------------------------------------- instruction helpers
function computeBudget(): Ix[] {
  return [
    getSetComputeUnitLimitInstruction({ units: rng.pick([60_000, 120_000, 200_000, 300_000, 400_000]) }),
    getSetComputeUnitPriceInstruction({
      microLamports: BigInt(rng.pick([1, 1000, 5000, 25_000, 100_000, 1_000_000]) + rng.int(1000)),
    }),
  ]
}
const maybeBudget = (p = 0.4): Ix[] => (rng.chance(p) ? computeBudget() : [])
/** mostly Memo v3; a few Memo v1 (the original memo program, still used on mainnet) */
const memo = (text: string, signers: Signer[] = []): Ix =>
  getAddMemoInstruction({ memo: text, signers }, { programAddress: k.address(rng.chance(0.1) ? MEMO_V1 : MEMO) })
const payerFor = (user: Signer): Signer => (rng.chance(0.25) ? rng.pick(relayers) : user)
const lamportsOf = (a: Addr): bigint => svm.getBalance(a) ?? 0n
function tokenAmountOf(a: Addr): bigint {
  const acc = svm.getAccount(a)
  if (!acc.exists) return 0n
  return parseTokenAccount(acc.programAddress, acc.data)?.amount ?? 0n
}
async function ataOf(owner: Addr, mint: Mint): Promise<Addr> {
  const [a] = await tok.findAssociatedTokenPda({ owner, mint: mint.address, tokenProgram: mint.program })
  return a
}
function memoText(): string {
  return (
    rng.pick(['gm', 'invoice #', 'payout ', 'ref:', 'order ', 'tip for ', 'rent ', 'swap fee ']) +
    (txCounter * 7919 + rng.int(1e6)).toString(36)
  )
}
async function freshSigner(prefix: string): Promise<Signer> {
  return signer(`${prefix}-${fresh++}`)
}
async function createAtaIx(payer: Signer, owner: Addr, mint: Mint, idempotent = false): Promise<Ix> {
  const ata = await ataOf(owner, mint)
  const input = { payer, ata, owner, mint: mint.address, tokenProgram: mint.program }
  return idempotent
    ? tok.getCreateAssociatedTokenIdempotentInstruction(input)
    : tok.getCreateAssociatedTokenInstruction(input)
}
const holdings = () =>
  [...atas.entries()].map(([key, ata]) => ({
    owner: key.split(':')[0],
    mint: mints.find((m) => m.address === key.split(':')[1])!,
    ata,
  }))
const userBy = (address: string) => users.find((u) => u.address === address)

// ---------------------------------------------------------------- scenarios (each sends 1+ transactions, or returns false)
type Scenario = () => Promise<boolean>

const solTransfer: Scenario = async () => {
  const from = rng.hot(users)
  const to = rng.chance(0.15) ? (await freshSigner('wallet')).address : rng.pick(users).address
  const ixs: Ix[] = [
    ...maybeBudget(0.3),
    getTransferSolInstruction({ source: from, destination: to, amount: BigInt(rng.range(1_000, 2_000_000_000)) }),
  ]
  if (rng.chance(0.35)) ixs.push(memo(memoText(), rng.chance(0.5) ? [from] : []))
  return !!(await send(payerFor(from), ixs))
}
const multiTransfer: Scenario = async () => {
  const from = rng.hot(users)
  const ixs: Ix[] = [...maybeBudget(0.5)]
  for (let i = rng.range(2, 5); i > 0; i--)
    ixs.push(
      getTransferSolInstruction({
        source: from,
        destination: rng.pick(users).address,
        amount: BigInt(rng.range(5_000, 500_000_000)),
      }),
    )
  if (rng.chance(0.3)) ixs.push(memo(memoText()))
  return !!(await send(from, ixs))
}
const createAccount: Scenario = async () => {
  const payer = rng.hot(users)
  const acc = await freshSigner('account')
  const space = rng.pick([0, 0, 0, 8, 64, 200])
  const lamports = svm.minimumBalanceForRentExemption(BigInt(space)) + BigInt(rng.pick([0, 0, 1_000_000]))
  const ix = getCreateAccountInstruction({ payer, newAccount: acc, lamports, space, programAddress: k.address(SYSTEM) })
  return !!(await send(payer, [...maybeBudget(0.2), ix]))
}
const newMint: Scenario = async () => {
  if (mints.length >= 14) return false
  const authority = rng.pick(users.slice(0, 20))
  const program = k.address(mints.length % 3 === 1 ? TOKEN_2022 : TOKEN)
  const mintKey = await signer(`mint-${mints.length}`)
  const decimals = rng.pick([0, 2, 6, 6, 8, 9])
  const m: Mint = { address: mintKey.address, program, decimals, authority }
  const ata = await ataOf(authority.address, m)
  const ixs: Ix[] = [
    ...maybeBudget(0.5),
    getCreateAccountInstruction({
      payer: authority,
      newAccount: mintKey,
      lamports: svm.minimumBalanceForRentExemption(82n),
      space: 82,
      programAddress: program,
    }),
    tok.getInitializeMint2Instruction(
      {
        mint: mintKey.address,
        decimals,
        mintAuthority: authority.address,
        freezeAuthority: rng.chance(0.5) ? authority.address : null,
      },
      { programAddress: program },
    ),
    await createAtaIx(authority, authority.address, m),
    tok.getMintToInstruction(
      {
        mint: mintKey.address,
        token: ata,
        mintAuthority: authority,
        amount: BigInt(rng.range(1, 1000)) * 10n ** BigInt(decimals + 3),
      },
      { programAddress: program },
    ),
  ]
  const r = await send(authority, ixs)
  if (r && !r.failed) {
    mints.push(m)
    atas.set(`${authority.address}:${m.address}`, ata)
  }
  return !!r
}
const createAta: Scenario = async () => {
  if (mints.length === 0) return false
  const mint = rng.pick(mints)
  const owner = rng.pick(users)
  if (atas.has(`${owner.address}:${mint.address}`)) return false
  const payer = rng.chance(0.3) ? rng.pick(relayers) : owner
  const r = await send(payer, [...maybeBudget(0.4), await createAtaIx(payer, owner.address, mint, rng.chance(0.4))])
  if (r && !r.failed) atas.set(`${owner.address}:${mint.address}`, await ataOf(owner.address, mint))
  return !!r
}
const mintTo: Scenario = async () => {
  if (mints.length === 0) return false
  const mint = rng.pick(mints)
  const owner = rng.hot(users)
  const key = `${owner.address}:${mint.address}`
  const ata = await ataOf(owner.address, mint)
  const ixs: Ix[] = [...maybeBudget(0.3)]
  if (!atas.has(key)) ixs.push(await createAtaIx(mint.authority, owner.address, mint, true))
  const amount = BigInt(rng.range(1, 50_000)) * 10n ** BigInt(Math.max(0, mint.decimals - 2))
  ixs.push(
    rng.chance(0.5)
      ? tok.getMintToInstruction(
          { mint: mint.address, token: ata, mintAuthority: mint.authority, amount },
          { programAddress: mint.program },
        )
      : tok.getMintToCheckedInstruction(
          { mint: mint.address, token: ata, mintAuthority: mint.authority, amount, decimals: mint.decimals },
          { programAddress: mint.program },
        ),
  )
  const r = await send(mint.authority, ixs)
  if (r && !r.failed) atas.set(key, ata)
  return !!r
}
async function pickHolding() {
  const hs = holdings()
  for (let i = 0; i < 40 && hs.length > 0; i++) {
    const h = rng.pick(hs)
    if (userBy(h.owner) && tokenAmountOf(h.ata) > 0n) return h
  }
  return undefined
}
const tokenTransfer: Scenario = async () => {
  const h = await pickHolding()
  if (!h) return false
  const from = userBy(h.owner)!
  const to = rng.hot(users)
  if (to.address === from.address) return false
  const dest = await ataOf(to.address, h.mint)
  const bal = tokenAmountOf(h.ata)
  const amount = 1n + (bal * BigInt(rng.range(1, 60))) / 100n
  if (amount > bal) return false
  const ixs: Ix[] = [...maybeBudget(0.6)]
  if (!atas.has(`${to.address}:${h.mint.address}`)) ixs.push(await createAtaIx(from, to.address, h.mint, true))
  ixs.push(
    rng.chance(0.5)
      ? tok.getTransferInstruction(
          { source: h.ata, destination: dest, authority: from, amount },
          { programAddress: h.mint.program },
        )
      : tok.getTransferCheckedInstruction(
          {
            source: h.ata,
            mint: h.mint.address,
            destination: dest,
            authority: from,
            amount,
            decimals: h.mint.decimals,
          },
          { programAddress: h.mint.program },
        ),
  )
  if (rng.chance(0.2)) ixs.push(memo(memoText(), [from]))
  const r = await send(payerFor(from), ixs)
  if (r && !r.failed) atas.set(`${to.address}:${h.mint.address}`, dest)
  return !!r
}
const approve: Scenario = async () => {
  const h = await pickHolding()
  if (!h) return false
  const owner = userBy(h.owner)!
  const delegate = rng.pick(users)
  if (delegate.address === owner.address) return false
  const amount = 1n + tokenAmountOf(h.ata) / BigInt(rng.range(2, 10))
  const ix = rng.chance(0.5)
    ? tok.getApproveInstruction(
        { source: h.ata, delegate: delegate.address, owner, amount },
        { programAddress: h.mint.program },
      )
    : tok.getApproveCheckedInstruction(
        { source: h.ata, mint: h.mint.address, delegate: delegate.address, owner, amount, decimals: h.mint.decimals },
        { programAddress: h.mint.program },
      )
  const r = await send(payerFor(owner), [...maybeBudget(0.2), ix])
  if (r && !r.failed) delegations.push({ source: h.ata, mint: h.mint, delegate, amount })
  return !!r
}
const delegateTransfer: Scenario = async () => {
  if (delegations.length === 0) return false
  const d = delegations.splice(rng.int(delegations.length), 1)[0]
  const bal = tokenAmountOf(d.source)
  const amount = d.amount < bal ? d.amount : bal
  if (amount === 0n) return false
  const dest = await ataOf(d.delegate.address, d.mint)
  const ixs: Ix[] = [
    await createAtaIx(d.delegate, d.delegate.address, d.mint, true),
    tok.getTransferCheckedInstruction(
      {
        source: d.source,
        mint: d.mint.address,
        destination: dest,
        authority: d.delegate,
        amount,
        decimals: d.mint.decimals,
      },
      { programAddress: d.mint.program },
    ),
  ]
  const r = await send(d.delegate, ixs)
  if (r && !r.failed) atas.set(`${d.delegate.address}:${d.mint.address}`, dest)
  return !!r
}
const burn: Scenario = async () => {
  const h = await pickHolding()
  if (!h) return false
  const owner = userBy(h.owner)!
  const amount = 1n + tokenAmountOf(h.ata) / BigInt(rng.range(3, 20))
  const ix = rng.chance(0.5)
    ? tok.getBurnInstruction(
        { account: h.ata, mint: h.mint.address, authority: owner, amount },
        { programAddress: h.mint.program },
      )
    : tok.getBurnCheckedInstruction(
        { account: h.ata, mint: h.mint.address, authority: owner, amount, decimals: h.mint.decimals },
        { programAddress: h.mint.program },
      )
  return !!(await send(payerFor(owner), [...maybeBudget(0.3), ix]))
}
/** a non-associated token account: create + initialize (+ fund) (+ hand over to a new owner) */
const manualAccount: Scenario = async () => {
  if (mints.length === 0) return false
  const owner = rng.hot(users)
  const mint = rng.pick(mints)
  const acc = await freshSigner('tokenacct')
  const ixs: Ix[] = [
    ...maybeBudget(0.3),
    getCreateAccountInstruction({
      payer: owner,
      newAccount: acc,
      lamports: svm.minimumBalanceForRentExemption(165n),
      space: 165,
      programAddress: mint.program,
    }),
    tok.getInitializeAccount3Instruction(
      { account: acc.address, mint: mint.address, owner: owner.address },
      { programAddress: mint.program },
    ),
  ]
  const src = atas.get(`${owner.address}:${mint.address}`)
  const bal = src ? tokenAmountOf(src) : 0n
  if (src && bal > 1n)
    ixs.push(
      tok.getTransferCheckedInstruction(
        {
          source: src,
          mint: mint.address,
          destination: acc.address,
          authority: owner,
          amount: bal / 2n,
          decimals: mint.decimals,
        },
        { programAddress: mint.program },
      ),
    )
  let newOwner = owner
  if (rng.chance(0.6)) {
    newOwner = rng.pick(users)
    ixs.push(
      tok.getSetAuthorityInstruction(
        { owned: acc.address, owner, authorityType: tok.AuthorityType.AccountOwner, newAuthority: newOwner.address },
        { programAddress: mint.program },
      ),
    )
  }
  const r = await send(owner, ixs)
  if (r && !r.failed) manuals.push({ address: acc.address, mint, owner: newOwner })
  return !!r
}
/** empty a non-associated token account (burn the rest) and close it, returning its rent */
const closeAccount: Scenario = async () => {
  if (manuals.length === 0) return false
  const m = manuals.splice(rng.int(manuals.length), 1)[0]
  const bal = tokenAmountOf(m.address)
  const ixs: Ix[] = []
  if (bal > 0n)
    ixs.push(
      tok.getBurnInstruction(
        { account: m.address, mint: m.mint.address, authority: m.owner, amount: bal },
        { programAddress: m.mint.program },
      ),
    )
  ixs.push(
    tok.getCloseAccountInstruction(
      { account: m.address, destination: rng.pick([m.owner.address, rng.pick(users).address]), owner: m.owner },
      { programAddress: m.mint.program },
    ),
  )
  return !!(await send(payerFor(m.owner), ixs))
}
const memoOnly: Scenario = async () => {
  const u = rng.hot(users)
  const ixs: Ix[] = [memo(memoText(), rng.chance(0.5) ? [u] : [])]
  if (rng.chance(0.3)) ixs.push(memo(memoText()))
  return !!(await send(u, [...maybeBudget(0.2), ...ixs]))
}
const wrapSol: Scenario = async () => {
  const nativeMint = mints.find((m) => m.address === NATIVE_MINT)
  if (!nativeMint) return false
  const u = rng.hot(users)
  const ata = await ataOf(u.address, nativeMint)
  const ixs: Ix[] = [
    ...maybeBudget(0.3),
    await createAtaIx(u, u.address, nativeMint, true),
    getTransferSolInstruction({ source: u, destination: ata, amount: BigInt(rng.range(1_000_000, 3_000_000_000)) }),
    tok.getSyncNativeInstruction({ account: ata }),
  ]
  const r = await send(u, ixs)
  if (r && !r.failed) atas.set(`${u.address}:${NATIVE_MINT}`, ata)
  return !!r
}
/** v0 transaction whose token accounts and recipients come from an address lookup table */
const lookupTransfer: Scenario = async () => {
  const table = tables.find((t) => t.usableFrom <= currentSlot)
  if (!table) return false
  const inTable = new Set<string>(table.addresses)
  const hs = holdings().filter((h) => inTable.has(h.ata) && userBy(h.owner) && tokenAmountOf(h.ata) > 0n)
  if (hs.length === 0) return false
  const h = rng.pick(hs)
  const from = userBy(h.owner)!
  const dests = holdings().filter((x) => x.mint === h.mint && x.ata !== h.ata && inTable.has(x.ata))
  if (dests.length === 0) return false
  const bal = tokenAmountOf(h.ata)
  const ixs: Ix[] = [...maybeBudget(0.7)]
  for (let i = Math.min(dests.length, rng.range(1, 3)); i > 0; i--) {
    const amount = 1n + (bal * BigInt(rng.range(1, 20))) / 100n
    ixs.push(
      tok.getTransferCheckedInstruction(
        {
          source: h.ata,
          mint: h.mint.address,
          destination: rng.pick(dests).ata,
          authority: from,
          amount,
          decimals: h.mint.decimals,
        },
        { programAddress: h.mint.program },
      ),
    )
  }
  if (rng.chance(0.4))
    ixs.push(
      getTransferSolInstruction({
        source: from,
        destination: rng.pick(table.addresses.filter((a) => userBy(a))),
        amount: BigInt(rng.range(10_000, 90_000_000)),
      }),
    )
  return !!(await send(payerFor(from), ixs, { table }))
}

// -- failing transactions
const failSolTransfer: Scenario = async () => {
  const from = rng.pick(users)
  const ixs: Ix[] = [
    ...maybeBudget(0.3),
    memo(memoText()),
    getTransferSolInstruction({
      source: from,
      destination: rng.pick(users).address,
      amount: lamportsOf(from.address) + BigInt(rng.range(1, 10)) * SOL,
    }),
    memo('never runs ' + txCounter),
  ]
  return !!(await send(from, ixs))
}
/** the ATA program's System CPI fails for lack of lamports: custom program error inside a CPI */
const failAtaCpi: Scenario = async () => {
  if (mints.length === 0) return false
  const relayer = rng.pick(relayers)
  const p = rng.pick(poor)
  const mint = rng.pick(mints)
  const owner = await freshSigner('wallet')
  const ixs: Ix[] = [
    ...computeBudget(),
    await createAtaIx(p, owner.address, mint),
    memo('after the failure ' + txCounter),
  ]
  return !!(await send(relayer, ixs))
}
const failTokenTransfer: Scenario = async () => {
  const h = await pickHolding()
  if (!h) return false
  const from = userBy(h.owner)!
  const to = rng.pick(holdings().filter((x) => x.mint === h.mint && x.ata !== h.ata))
  if (!to) return false
  const ixs: Ix[] = [
    ...maybeBudget(0.5),
    tok.getTransferInstruction(
      {
        source: h.ata,
        destination: to.ata,
        authority: from,
        amount: tokenAmountOf(h.ata) + BigInt(rng.range(1, 1000)),
      },
      { programAddress: h.mint.program },
    ),
  ]
  return !!(await send(from, ixs))
}
/** Token-2022 associated accounts carry ImmutableOwner: changing their owner fails */
const failImmutableOwner: Scenario = async () => {
  const hs = holdings().filter((h) => h.mint.program === TOKEN_2022 && userBy(h.owner))
  if (hs.length === 0) return false
  const h = rng.pick(hs)
  const owner = userBy(h.owner)!
  const ix = tok.getSetAuthorityInstruction(
    { owned: h.ata, owner, authorityType: tok.AuthorityType.AccountOwner, newAuthority: rng.pick(users).address },
    { programAddress: h.mint.program },
  )
  return !!(await send(owner, [memo(memoText(), [owner]), ix]))
}

const weighted: [number, Scenario][] = [
  [18, solTransfer],
  [6, multiTransfer],
  [5, createAccount],
  [2, newMint],
  [7, createAta],
  [7, mintTo],
  [18, tokenTransfer],
  [4, approve],
  [4, delegateTransfer],
  [4, burn],
  [4, manualAccount],
  [3, closeAccount],
  [5, memoOnly],
  [3, wrapSol],
  [6, lookupTransfer],
  [2, failSolTransfer],
  [2, failAtaCpi],
  [2, failTokenTransfer],
  [1, failImmutableOwner],
]
const totalWeight = weighted.reduce((a, [w]) => a + w, 0)
async function randomScenario(): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    let x = rng.int(totalWeight)
    for (const [w, s] of weighted) {
      if ((x -= w) < 0) {
        if (await s()) return
        break
      }
    }
  }
  throw new Error('no scenario applicable')
}

// ---------------------------------------------------------------- version 1 transactions
const v1Users: Signer[] = []
for (let i = 0; i < 12; i++) {
  const s = await signer(`v1-user-${i}`)
  v1Users.push(s)
  fund(s.address, BigInt(v1rng.range(5, 200)) * SOL + BigInt(v1rng.int(1_000_000_000)))
}
/** the config of a v1 message: a compute unit and a loaded-data limit always (unset, each is zero) */
function v1Config(): k.V1TransactionConfig {
  const c: k.V1TransactionConfig = {
    computeUnitLimit: v1rng.pick([1_000, 5_000, 20_000, 60_000, 200_000]),
    loadedAccountsDataSizeLimit: v1rng.pick([64 * 1024, 256 * 1024, 1024 * 1024]),
  }
  if (v1rng.chance(0.6))
    c.priorityFeeLamports = BigInt(v1rng.pick([1, 500, 5_000, 100_000, 2_500_000]) + v1rng.int(1000))
  if (v1rng.chance(0.2)) c.heapSize = v1rng.pick([64 * 1024, 256 * 1024])
  return c
}
const v1Memo = (text: string, signers: Signer[] = []): Ix =>
  getAddMemoInstruction({ memo: text, signers }, { programAddress: k.address(MEMO) })
/** 0-3 v1 transactions: transfers (some with a memo, some to several recipients), a few failing */
async function v1Transactions(blockIndex: number): Promise<void> {
  if (blockIndex < V1_FROM) return
  for (let n = v1rng.int(4); n > 0; n--) {
    const from = v1rng.pick(v1Users)
    const ixs: Ix[] = []
    const kind = v1rng.int(10)
    const amount = () => BigInt(v1rng.range(1_000, 900_000_000))
    if (kind === 0) {
      // beyond the balance: System's Custom 1, the memo after it never runs
      ixs.push(
        getTransferSolInstruction({
          source: from,
          destination: v1rng.pick(v1Users).address,
          amount: lamportsOf(from.address) + SOL,
        }),
        v1Memo(`v1 never runs ${blockIndex}.${n}`),
      )
    } else {
      for (let i = kind < 3 ? v1rng.range(2, 4) : 1; i > 0; i--)
        ixs.push(
          getTransferSolInstruction({ source: from, destination: v1rng.pick(v1Users).address, amount: amount() }),
        )
      if (v1rng.chance(0.4)) ixs.push(v1Memo(`v1 ${blockIndex}.${n}`, v1rng.chance(0.5) ? [from] : []))
    }
    await send(from, ixs, { v1: v1Config() })
  }
}

// ---------------------------------------------------------------- scheduled setup transactions
async function setup(blockIndex: number) {
  if (blockIndex === 0) {
    // the native mint (wrapped SOL) exists at genesis in LiteSVM
    const nm = svm.getAccount(k.address(NATIVE_MINT))
    if (nm.exists)
      mints.push({ address: k.address(NATIVE_MINT), program: k.address(TOKEN), decimals: 9, authority: users[0] })
    for (let i = 0; i < 4; i++) await newMint()
  }
  if (blockIndex === 2 || blockIndex === 40) {
    // an address lookup table: created from a recent slot, then extended (its System CPI pays the rent)
    const authority = users[blockIndex === 2 ? 3 : 7]
    const recentSlot = recentSlots[recentSlots.length - 1] // the parent block
    const [createIx, address] = await createTableIx(authority, recentSlot)
    const r = await send(authority, [createIx], { version: 'legacy' })
    if (!r || r.failed) throw new Error('lookup table creation failed')
    tables.push({ address, authority, addresses: [], usableFrom: Number.MAX_SAFE_INTEGER })
  }
  if (blockIndex === 3 || blockIndex === 41) {
    const t = tables[tables.length - 1]
    const hs = holdings().filter((h) => userBy(h.owner))
    const chosen = new Set<Addr>()
    for (const h of hs.slice(0, 24)) {
      chosen.add(h.ata)
      chosen.add(h.owner as Addr)
      chosen.add(h.mint.address)
    }
    const list = [...chosen].slice(0, 30)
    const r = await send(t.authority, [...computeBudget(), extendTableIx(t.address, t.authority, list)], { version: 0 })
    if (!r || r.failed) throw new Error('lookup table extension failed')
    t.addresses = list
    t.usableFrom = currentSlot + 1
  }
}

// ---------------------------------------------------------------- epoch rewards
/** Twice in the chain, as at an epoch boundary, the block carries Voting and Staking rewards. */
const voteAccounts = new Map<string, { balance: bigint; commission: number }>()
const stakeAccounts = new Map<string, { balance: bigint; vote: string }>()
async function epochRewards(blockIndex: number) {
  if (blockIndex !== 120 && blockIndex !== 270) return []
  if (voteAccounts.size === 0) {
    for (let i = 0; i < 6; i++)
      voteAccounts.set((await signer(`vote-${i}`)).address, {
        balance: BigInt(rng.range(1, 30)) * SOL,
        commission: rng.pick([0, 5, 7, 10, 100]),
      })
    const votes = [...voteAccounts.keys()]
    for (let i = 0; i < 24; i++)
      stakeAccounts.set((await signer(`stake-${i}`)).address, {
        balance: BigInt(rng.range(2, 90_000)) * SOL,
        vote: votes[i % votes.length],
      })
  }
  const out = []
  for (const [pubkey, v] of voteAccounts) {
    const lamports = BigInt(rng.range(1_000_000, 900_000_000))
    v.balance += lamports
    out.push({
      pubkey,
      lamports: Number(lamports),
      postBalance: Number(v.balance),
      rewardType: 'Voting',
      commission: v.commission,
    })
  }
  for (const [pubkey, s] of stakeAccounts) {
    const commission = voteAccounts.get(s.vote)!.commission
    if (commission === 100) continue
    const lamports = (s.balance * BigInt(rng.range(100, 200))) / 1_000_000n
    s.balance += lamports
    out.push({ pubkey, lamports: Number(lamports), postBalance: Number(s.balance), rewardType: 'Staking', commission })
  }
  return out
}

// ---------------------------------------------------------------- main loop
mkdirSync(dirname(OUT), { recursive: true })
const gz = createGzip({ level: 9 })
const out = createWriteStream(OUT)
gz.pipe(out)
let parentSlot = FIRST_SLOT - 1
let height = FIRST_HEIGHT
let slot = FIRST_SLOT
let skipped = 0
const t0 = Date.now()
for (let b = 0; b < N_BLOCKS; b++) {
  if (b > 0 && rng.chance(0.04)) {
    const n = rng.range(1, 3)
    slot += n
    skipped += n
  }
  currentSlot = slot
  const blockTime = EPOCH_TIME + Math.floor(((slot - FIRST_SLOT) * 2) / 5)
  svm.warpToSlot(BigInt(slot))
  const clock = svm.getClock()
  clock.unixTimestamp = BigInt(blockTime)
  svm.setClock(clock)
  svm.setSlotHashes(
    recentHashes
      .slice(-150)
      .map((hash, i, xs) => ({ slot: BigInt(recentSlots[recentSlots.length - xs.length + i]), hash }))
      .reverse(),
  )

  blockTxs.length = 0
  await setup(b)
  const target = rng.range(5, 40)
  while (blockTxs.length < target) await randomScenario()
  await v1Transactions(b)

  const leader = leaders[Math.floor((slot - FIRST_SLOT) / 4) % leaders.length]
  let baseFees = 0n
  let priorityFees = 0n
  for (const t of blockTxs) {
    baseFees += t.fee - t.priority
    priorityFees += t.priority
  }
  const reward = baseFees / 2n + priorityFees // half of the signature fees are burned
  const lb = leaderBalance.get(leader)! + reward
  leaderBalance.set(leader, lb)
  const hash = blockHash(slot)
  const block = {
    previousBlockhash: recentHashes[recentHashes.length - 1],
    blockhash: hash,
    parentSlot,
    transactions: blockTxs.map((t) => t.json),
    rewards: [
      { pubkey: leader, lamports: Number(reward), postBalance: Number(lb), rewardType: 'Fee', commission: null },
      ...(await epochRewards(b)),
    ],
    blockTime,
    blockHeight: height,
  }
  const line = JSON.stringify({ slot, hash, height, block }) + '\n'
  if (!gz.write(line)) await new Promise((r) => gz.once('drain', r))
  recentHashes.push(hash)
  recentSlots.push(slot)
  parentSlot = slot
  height++
  slot++
}
gz.end()
await new Promise<void>((resolve, reject) => out.on('finish', resolve).on('error', reject))

const byProgram = [...stats.programs.entries()].sort((a, b) => b[1] - a[1])
console.log(
  `wrote ${OUT}: ${N_BLOCKS} blocks (slots ${FIRST_SLOT}..${parentSlot}, ${skipped} skipped) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
)
console.log(
  `transactions: ${stats.txs} (${stats.failed} failed, ${stats.v0} v0, ${stats.v1} v1, ${stats.withLookups} with lookup-table addresses; ${stats.dropped} dropped as not includable)`,
)
console.log(`instructions: ${stats.instructions} top-level, ${stats.inner} inner, max stack height ${stats.maxStack}`)
console.log('instructions per program (top-level + inner):')
for (const [p, n] of byProgram) console.log(`  ${p} ${n}`)
console.log('errors:')
for (const [e, n] of stats.errors) console.log(`  ${e} ${n}`)
