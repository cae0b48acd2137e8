/**
 * `solportal dump --rpc URL --from SLOT [--to SLOT] > FILE.jsonl`: the node's blocks of a slot
 * range as archive lines (`{"slot","hash","height","block"}`, docs/query.md §1), one per produced
 * slot, in slot order, on stdout. The block is the node's `getBlock` result text as it came (its
 * integers exact whatever their size); each answer is parsed once to check its shape and read its
 * hash and height, and a damaged one is asked for again. Skipped slots are left out (counted).
 * Progress and the node's errors by kind go to stderr. This module checks the flags; the dump
 * itself is in dump-blocks.ts, loaded once they are checked.
 */
import type { Command } from 'commander'
import { addRpcProviderOptions, httpUrlOption, intOption, UsageError } from '../options.ts'
import type { RangeFlags } from './rpc-range.ts'

export function register(program: Command): void {
  const cmd = program
    .command('dump')
    .description(
      "write a node's blocks of a slot range as archive lines (JSON lines of getBlock results) on stdout, for solportal import",
    )
    .requiredOption('--rpc <url>', 'the Solana node (JSON-RPC over HTTP)')
    .requiredOption('--from <slot>', 'first slot')
    .option('--to <slot>', "last slot (default: the node's finalized head)")
    .option('--rpc-concurrency <n>', 'getBlock requests in flight', '8')
    .option('--rpc-damaged-attempts <n>', 'times a damaged answer is asked for before giving up', '5')
  addRpcProviderOptions(cmd).action(async (o: RangeFlags & { rpc: string; rpcDamagedAttempts: string }) => {
    httpUrlOption('rpc', o.rpc)
    const damagedAttempts = intOption('rpc-damaged-attempts', o.rpcDamagedAttempts, 1, 1000)
    if (process.stdout.isTTY)
      throw new UsageError('dump writes JSON lines on stdout: redirect it to a file (> FILE.jsonl)')
    const ac = new AbortController()
    const onSig = () => ac.abort()
    process.on('SIGINT', onSig)
    process.on('SIGTERM', onSig)
    try {
      const { runDump } = await import('./dump-blocks.ts')
      await runDump(o.rpc, { ...o, damagedAttempts }, process.stdout, (l) => process.stderr.write(l + '\n'), ac.signal)
      if (ac.signal.aborted) process.exitCode = 130
    } finally {
      process.off('SIGINT', onSig)
      process.off('SIGTERM', onSig)
    }
  })
}
