/**
 * Soak of the follower's cold path with mainnet-sized, compressible blocks (the kind that wedged
 * finalization: their chunk files are several times smaller than the size estimate that splits
 * them): 2,000 blocks of 300 transactions each go through the HotStore (LMDB) and its
 * finalization, by 20 as `serve --rpc` moves them (FINALIZE_BATCHES), into a DiskColdStore
 * owned by a ColdWriterProcess, the writer process `serve --rpc` runs. No error, every block
 * once in the cold store, sealed chunks before the unsealed tail, and memory that stays flat:
 * the RSS of this process and of the writer process is sampled every 200 blocks and may not grow
 * by more than a bound after the first 500.
 *
 * The blocks: 20 distinct blocks of the fake node (src/ingest/fake-node/, 300 transactions,
 * seed 7, fetched and decoded as the follower does with `--include-votes`), renumbered into a chain of 2,000 (fetching
 * and decoding 2,000 blocks would take the test's whole time; the store's work is the same).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { ColdWriterProcess, FINALIZE_BATCHES } from '../src/ingest/cold-writer.ts'
import { RECORD_LISTS } from '../src/catalogue.ts'
import type { Block, BlockHeader } from '../src/model.ts'
import { HotStore } from '../src/store/hot.ts'
import { packBlock, type PackedBlock } from '../src/store/packed-block.ts'
import { base58Encode } from '../src/util/base58.ts'
import { fakeNodeBlocks } from './support/fake-node-blocks.ts'

/** SOAK_BLOCKS: a longer (or, to try the test, shorter) run; at least 1,000 */
const BLOCKS = Math.max(1_000, Number(process.env.SOAK_BLOCKS ?? 2_000))
const LAG = 32
/** growth of RSS allowed after the warm-up (each process) */
const RSS_BOUND = 160 * 1024 * 1024

const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'solportal-soak-cold-'))
  dirs.push(d)
  return d
}

const hashOf = (n: number) => base58Encode(createHash('sha256').update(`soak ${n}`).digest())

/** CPU seconds (user + system) the process `pid` used so far */
function cpuOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : 0
}

test(
  `follower cold path: ${BLOCKS} blocks of 300 transactions through finalization, no error, flat memory`,
  { timeout: 600_000 },
  async (t) => {
    if (process.platform !== 'linux') return t.skip('reads the writer process RSS from /proc')
    const base: Block[] = []
    for await (const b of fakeNodeBlocks({ count: 20, txPerBlock: 300, seed: 7, batch: 20, includeVotes: true }))
      base.push(...b)
    assert.ok(base.every((b) => b.transactions.length >= 300))
    const first = base[0].header.number
    const headerOf = (i: number): BlockHeader => {
      const src = base[i % base.length].header
      const n = first + i
      return {
        ...src,
        number: n,
        hash: hashOf(n),
        parentNumber: n - 1,
        parentHash: hashOf(n - 1),
        height: (src.height ?? 0) + i,
        timestamp: src.timestamp + Math.floor(i * 0.4),
      }
    }
    // Each block goes to the hot store packed in two parts, as a block that two decoding threads
    // decoded is (src/ingest/block-join.ts): its own header without records, then the records of
    // its base block, packed once and copied into a buffer of the block's own (so that a store
    // keeping blocks it no longer holds still grows this process). Packing each of the 2,000
    // blocks whole took this process ~25 s of CPU, work the decoding threads do in production.
    const records = base.map((b) => packBlock(b).packed)
    const noRecords = Object.fromEntries(RECORD_LISTS.map((k) => [k, []])) as unknown as Omit<Block, 'header'>
    const chainBlock = (i: number): PackedBlock => {
      const header = headerOf(i)
      return { header, packed: [packBlock({ ...noRecords, header }).packed, new Uint8Array(records[i % base.length])] }
    }
    const hot = await HotStore.open({ path: tempDir(), coldLast: null, noSync: true })
    const cold = await ColdWriterProcess.open(tempDir(), { fsync: false, graceMs: 0 }, { nice: 0 })
    const samples: { at: number; rss: number; writer: number; heap: number }[] = []
    try {
      const batch = FINALIZE_BATCHES.finalizeMinBlocks
      for (let i = 0; i < BLOCKS; i++) {
        // packed as the follower's decoding threads hand blocks over (the hot store keeps those
        // bytes and gives them to the writer process as they are)
        assert.equal((await hot.push(chainBlock(i))).status, 'extended')
        const head = first + i
        if ((i + 1) % batch === 0 && i >= LAG) await hot.finalize(head - LAG, cold)
        if ((i + 1) % 200 === 0)
          samples.push({
            at: i + 1,
            rss: process.memoryUsage().rss,
            writer: rssOf(cold.pid!),
            heap: process.memoryUsage().heapUsed,
          })
      }
      // the rest through finalization
      await hot.finalize(first + BLOCKS - 1, cold)
      assert.equal(cold.starts, 1, 'the writer process never failed')
      assert.deepEqual(cold.lastBlock(), { number: first + BLOCKS - 1, hash: hashOf(first + BLOCKS - 1) })
      assert.equal(hot.entries().length, 0)
      // every block once, in order
      let expect = first
      for await (const c of cold.chunks(0, Number.MAX_SAFE_INTEGER)) {
        const n = c.header('number')
        const h = c.header('hash')
        for (let k = 0; k < c.blockCount; k++, expect++) {
          assert.equal(n[k], expect)
          assert.equal(h[k], hashOf(expect))
        }
      }
      assert.equal(expect, first + BLOCKS)
      const entries = cold.reader.entries
      const u = entries.findIndex((e) => !e.sealed)
      assert.ok(u === -1 || entries.slice(u).every((e) => !e.sealed))
      assert.ok(entries.filter((e) => e.sealed).length >= 20, `${entries.length} chunks`)
      // flat memory: after the warm-up (500 blocks), neither process grows by more than the bound
      const warm = samples.find((s) => s.at === 600)!
      const peak = (k: 'rss' | 'writer') => Math.max(...samples.filter((s) => s.at > 600).map((s) => s[k]))
      const mb = (x: number) => `${(x / 1048576).toFixed(0)} MiB`
      t.diagnostic(`CPU: this process ${cpuOf(process.pid).toFixed(1)} s, the writer ${cpuOf(cold.pid!).toFixed(1)} s`)
      t.diagnostic(samples.map((s) => `${s.at}: rss ${mb(s.rss)} writer ${mb(s.writer)} heap ${mb(s.heap)}`).join('; '))
      assert.ok(peak('rss') - warm.rss < RSS_BOUND, `this process grew from ${mb(warm.rss)} to ${mb(peak('rss'))}`)
      assert.ok(
        peak('writer') - warm.writer < RSS_BOUND,
        `the writer grew from ${mb(warm.writer)} to ${mb(peak('writer'))}`,
      )
    } finally {
      await cold.close()
      await hot.close()
    }
  },
)
