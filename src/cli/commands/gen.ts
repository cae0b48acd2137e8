/**
 * `solportal gen --blocks N --out FILE.jsonl.gz [--seed S] [--from-slot X] [--txs-per-block M]`: writes N
 * deterministic mainnet-shaped blocks (archive lines, gzip when FILE ends in .gz), amplifying real
 * transactions (src/ingest/generate.ts, loaded once the options are checked).
 */
import type { Command } from 'commander'
import { intOption, numberOption, outputPath } from '../options.ts'

function int(name: string, value: string | undefined, def: number, min: number, max?: number): number {
  return value === undefined ? def : intOption(name, value, min, max)
}

export function register(program: Command): void {
  program
    .command('gen')
    .description('generate deterministic mainnet-shaped blocks (archive lines) from real transactions, for benchmarks')
    .requiredOption('--blocks <n>', 'number of blocks')
    .requiredOption('--out <file>', 'output archive (.jsonl.gz: gzip; .jsonl: plain)')
    .option('--seed <s>', 'PRNG seed (default 1)')
    .option('--from-slot <x>', 'first slot (default 310000000)')
    .option('--txs-per-block <m>', 'mean transactions per block, ~70% votes (default 1500)')
    .option('--vote-share <f>', 'share of vote transactions (default 0.7)')
    .option('--gzip-level <l>', 'gzip level 0-9 (default 1; 0 = stored, fastest)')
    .option('--gzip-threads <n>', 'compress on n threads, one gzip member per block (default 1: one stream)')
    .action(
      async (o: {
        blocks: string
        out: string
        seed?: string
        fromSlot?: string
        txsPerBlock?: string
        voteShare?: string
        gzipLevel?: string
        gzipThreads?: string
      }) => {
        // every option is checked before the (slow) template loading
        const settings = {
          blocks: int('blocks', o.blocks, 0, 1),
          seed: int('seed', o.seed, 1, 0),
          fromSlot: int('from-slot', o.fromSlot, 310_000_000, 1),
          txsPerBlock: int('txs-per-block', o.txsPerBlock, 1500, 1),
          voteShare: o.voteShare === undefined ? 0.7 : numberOption('vote-share', o.voteShare, 0, 1),
          gzipLevel: int('gzip-level', o.gzipLevel, 1, 0, 9),
          gzipThreads: int('gzip-threads', o.gzipThreads, 1, 1, 256),
        }
        outputPath('out', o.out)
        const { loadTemplates, writeArchive } = await import('../../ingest/generate.ts')
        const t0 = performance.now()
        const templates = loadTemplates()
        const t1 = performance.now()
        const cpu0 = process.cpuUsage()
        const stats = await writeArchive(o.out, { ...settings, templates })
        const s = (performance.now() - t1) / 1000
        const cpu = process.cpuUsage(cpu0)
        const cpuS = (cpu.user + cpu.system) / 1e6 // this process, gzip threads included
        const b = stats.blocks
        process.stderr.write(
          `templates: ${templates.all.length} loaded in ${((t1 - t0) / 1000).toFixed(2)} s\n` +
            `wrote ${o.out}: ${b} blocks, slots ${stats.firstSlot}..${stats.lastSlot}, in ${s.toFixed(2)} s (${(b / s).toFixed(1)} blocks/s; CPU ${cpuS.toFixed(2)} s, ${(b / cpuS).toFixed(1)} blocks per CPU-second)\n` +
            `per block: ${(stats.txs / b).toFixed(0)} transactions (${(stats.votes / b).toFixed(0)} votes), ` +
            `${(stats.instructions / b).toFixed(0)} instructions (${(stats.nonVoteInstructions / b).toFixed(0)} outside votes), ` +
            `${(stats.bytes / b / 1e6).toFixed(2)} MB of JSON\n`,
        )
      },
    )
}
