/** What the generator's parts share: where the templates are, its output version, program ids. */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const DEFAULT_TEMPLATE_FILES = ['data/mainnet/blocks/254170887.jsonl.gz', 'data/sample/litesvm.jsonl.gz']
/**
 * Version of what the generator writes for a given seed and options; benches name their cached
 * archives with it, so a change of output is never measured against an archive of the old one.
 * 2: addresses and signatures are random text (1: their tails came from a 4 KiB pad).
 * 3: version 1 transactions (from the litesvm sample), ~13 % of the non-vote ones.
 */
export const GEN_VERSION = 3

export const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111'
export const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'
export const JUPITER = 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4'
export const METEORA_DLMM = 'LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo'
export const RAYDIUM_AMM = '675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8'

export const BASE58_RUN = /(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{32,88}(?![1-9A-HJ-NP-Za-km-z])/g

/* eslint-disable @typescript-eslint/no-explicit-any */
export type Json = any
