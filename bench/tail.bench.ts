/**
 * Live tail with mainnet-sized blocks: a fake Solana node (child process, bench/tail/node-child.ts)
 * re-slots generated mainnet-shaped blocks of ~1,500 transactions (`solportal gen`: ~70 % votes)
 * and produces one every 400 ms (a mainnet slot); this process follows it with the real-time
 * pipeline (RPC → parse + normalize → LMDB hot store) and serves it with the real server; N clients
 * (another child process, bench/tail/clients-child.ts) hold open `/stream` requests without
 * `toBlock`, resuming like Portal clients when a response ends.
 *
 * Measured per block: node answer → hot store (the ingester's `onStored`: from the last byte of
 * the getBlock answer read to the hot store having the block), node block → hot store, and node
 * block → client line (the node's production time to each client reading the block's line; both
 * wall clocks of one machine), p50/p99, with 1 and 100 clients, for the default path (a worker
 * thread parses and normalizes every answer, `serve`'s default `--ingest-threads`: the cores less
 * one) and, back to back in the same run, the main thread doing it between the streams
 * (`normalizeThreads: 0`, the baseline). Both fetch 4 blocks concurrently (the default).
 * A second table breaks node answer → hot store into its stages (the marks every stored block
 * reports: the decoding thread's parse, normalize and pack, the hand-over, the LMDB write, the wake
 * of the waiting streams), p50 / p99 per row and for the row's slowest block; `TAIL_THREADS=1,2`
 * compares one decoding thread with two (a block split across both). A third table shows the
 * decoding thread's own times per block: how long it ran, how long it waited for a core, its
 * garbage collection.
 *
 * After the RPC rows of the largest client count (`TAIL_GEYSER`), a row following the node's Geyser
 * stream instead (the node's child serves a fake Geyser server too; createGeyserDataset): node
 * block → stream message read → hot store → client line with the same clients, and the JSON-RPC
 * calls per hour each row made to the node (the node's own request counts).
 *
 * `TAIL_BLOCKS` (default 30) measured blocks per row, after `TAIL_WARMUP` (default 40) start-up
 * blocks reported apart; `TAIL_TXS` (default 1500) transactions per block; `TAIL_COLD=disk`
 * finalizes into a disk cold store written by a process of its own (as `serve --rpc --data-dir`
 * does; `TAIL_COLD_NICE` its nice value) and `TAIL_FINALITY_LAG` (default 32) sets how far
 * the node's finality lags (with the defaults the measured blocks are ingested while earlier ones
 * finalize, as in a running server; `TAIL_WARMUP=0` measures a server just started, hot path only).
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks'
import { join } from 'node:path'
import { writeArchive } from '../src/ingest/generate.ts'
import { defaultDecodeThreads } from '../src/ingest/decode-threads.ts'
import { createRealtimeDataset } from '../src/ingest/realtime/dataset.ts'
import { silentLogger, type StoredBlock } from '../src/ingest/realtime/types.ts'
import { createGeyserDataset } from '../src/ingest/geyser/dataset.ts'
import { ColdWriterProcess, FINALIZE_BATCHES } from '../src/ingest/cold-writer.ts'
import { DiskColdStore } from '../src/store/cold/disk-store.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { statusKb } from './compare/pg.ts'
import { processCpuMs } from './support.ts'
import { monotonicMicros } from './compare/profile.ts'

const BLOCKS = Number(process.env.TAIL_BLOCKS ?? 30)
const TXS = Number(process.env.TAIL_TXS ?? 1500)
/** `TAIL_CLIENTS=1,100` and `TAIL_THREADS=1,0` (0: parse + normalize on the main thread) choose the rows (the first row of the most clients is the figure bench/compare reads) */
const CLIENTS = (process.env.TAIL_CLIENTS ?? '1,100').split(',').map(Number)
const THREADS = (process.env.TAIL_THREADS ?? `${defaultDecodeThreads()},0`).split(',').map(Number)
const INTERVAL_MS = 400
/**
 * `TAIL_COLD=disk`: finalized blocks go to a disk cold store written by a process of its own, by
 * batches (as `serve --rpc` does) instead of memory; `disk-main`: the same store written on the
 * main thread as blocks finalize (how `serve --rpc` did it before); a list makes rows of each
 */
const COLDS = (process.env.TAIL_COLD ?? 'memory').split(',')
/** `TAIL_COLD_NICE`: the disk cold store's writer process's nice value (default `serve`'s, COLD_WRITER_NICE) */
const COLD_NICE = process.env.TAIL_COLD_NICE === undefined ? undefined : Number(process.env.TAIL_COLD_NICE)
/** slots the node's finalized head lags its confirmed head (32: blocks finalize from the 33rd block of a row on) */
const FINALITY_LAG = Number(process.env.TAIL_FINALITY_LAG ?? 32)
/**
 * `TAIL_POLL_MS` (default 20): the RPC rows' poll interval; a list (`20,250`: 250 ms is `serve`'s
 * default) makes RPC rows of each, back to back, before the Geyser row (which polls nothing in its
 * steady state; its gap fills use the first)
 */
const POLLS = (process.env.TAIL_POLL_MS ?? '20').split(',').map(Number)
const POLL_MS = POLLS[0]
/**
 * `TAIL_GEYSER`: a row following the node's Geyser stream (the fake node's child serves a fake
 * Geyser server too; createGeyserDataset, the RPC node only filling gaps) after the RPC rows of a
 * client count, the same clients reading it: for the largest client count (default), `all` of them,
 * or none (`0`)
 */
const GEYSER = process.env.TAIL_GEYSER ?? 'max'
const GEYSER_PATH = 'Geyser stream (blocks decoded on the worker threads)'
/**
 * `TAIL_WARMUP` (default 40) blocks produced, ingested and streamed before a row's measured blocks,
 * reported apart as the start-up: code not optimized yet, the hot store's file growing, no block
 * finalized yet. With more of them than the finality lag, the measured blocks see a running
 * server: blocks finalizing (moved to the cold store, deleted from the hot one, whose file then
 * reuses their pages)
 */
const WARMUP = Number(process.env.TAIL_WARMUP ?? 40)
/** `TAIL_DUMP=FILE`: the last row's stored blocks (their marks) and the main thread's GC pauses ([wall ms, ms, kind]) written to FILE as JSON, to look at block by block */
const DUMP = process.env.TAIL_DUMP
/**
 * `TAIL_WINDOWS=1`: each row's measured window written to stderr in the time base of V8's CPU
 * profiles (µs), to summarize a `node --cpu-prof` run of this bench row by row
 * (bench/compare/profile.ts `summarizeProfileDir` with `fromUs`/`toUs`)
 */
const WINDOWS = process.env.TAIL_WINDOWS === '1'
const CHILD: ForkOptions = { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }
const now = () => performance.timeOrigin + performance.now()

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

function message<T>(child: ChildProcess, t: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMsg = (m: { t: string }) => {
      if (m.t !== t) return
      child.off('message', onMsg)
      child.off('exit', onExit)
      resolve(m as T)
    }
    const onExit = (code: number) => reject(new Error(`child exited (${code}) before '${t}'`))
    child.on('message', onMsg)
    child.on('exit', onExit)
  })
}

interface Row {
  path: string
  geyser: boolean
  /** the RPC node's poll interval, ms */
  pollMs: number
  /** the node's JSON-RPC requests (all, getBlock) per hour of the measured blocks */
  rpcPerHour: number
  getBlockPerHour: number
  threads: number
  cold: string
  clients: number
  lines: number
  expected: number
  /** the node's production time of each block, its answer assembled (`prerender`) */
  assembled: number[]
  blockToAnswer: number[]
  answerToStore: number[]
  blockToStore: number[]
  blockToClient: number[]
  /** the hot store having a block → each client reading its line */
  storeToClient: number[]
  /** the start-up blocks (TAIL_WARMUP): answer → store, block → each client line */
  startupAnswerToStore: number[]
  startupToClient: number[]
  /** per stage of answer → store (STAGES), ms per block */
  stages: Map<string, number[]>
  /** the decoding thread's own times per block (THREAD_TIMES), ms */
  thread: Map<string, number[]>
  /** the stages of the block slowest from answer to store */
  slowest: { number: number; total: number; stages: Map<string, number>; thread: Map<string, number> } | null
  /** share of the time the main thread (ingest applying blocks + the server) was busy */
  busy: number
  /** CPU of this process (main thread, decoding threads, LMDB's writer) and of the cold store's writer process, ms per block produced */
  cpuPerBlock: number
  /** the disk cold store's writer process: its peak resident memory, MB (null without one) */
  writerPeakMb: number | null
  /** the main thread's garbage collection, ms per block produced (all kinds, then the full ones) */
  gcPerBlock: number
  majorGcPerBlock: number
  /** the clients' responses by HTTP status */
  statuses: string
}

async function measure(
  archive: string,
  threads: number,
  clients: number,
  coldKind: string,
  geyser = false,
  pollMs = POLL_MS,
): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-tail-'))
  const node = fork(
    join(import.meta.dirname, 'tail', 'node-child.ts'),
    [archive, '3', String(FINALITY_LAG), ...(geyser ? ['geyser'] : [])],
    CHILD,
  )
  const ready = await message<{ url: string; geyserUrl?: string; tip: number; firstSlot: number }>(node, 'ready')
  const rpcStats = async () => {
    node.send({ t: 'stats' })
    return message<{ requests: number; getBlock: number }>(node, 'stats')
  }
  const stored = new Map<number, StoredBlock>()
  const cold =
    coldKind === 'disk'
      ? await ColdWriterProcess.open(join(dir, 'cold'), {}, { nice: COLD_NICE })
      : coldKind === 'disk-main'
        ? await DiskColdStore.open(join(dir, 'cold'))
        : undefined
  const options = {
    rpcUrl: ready.url,
    dataDir: dir,
    cold,
    ...(coldKind === 'disk' ? FINALIZE_BATCHES : {}),
    startSlot: ready.firstSlot,
    pollIntervalMs: pollMs,
    normalizeThreads: threads,
    noSync: true,
    logger: silentLogger,
    onStored: (e: StoredBlock) => stored.set(e.number, e),
  }
  const ds = geyser
    ? await createGeyserDataset({ ...options, geyser: { url: ready.geyserUrl! } })
    : await createRealtimeDataset(options)
  ds.start()
  await ds.store.waitFor(ready.tip, false, 120_000)
  const server = new PortalServer({
    datasets: new DatasetRegistry([{ name: 'live', aliases: [], store: ds.store, realTime: true }]),
    rateLimit: null,
    // the clients stand for as many client addresses, though all connect from loopback
    limits: { maxStreamsPerClient: Math.max(64, clients) },
    log: () => {},
  })
  const base = `${await server.listen(0, '127.0.0.1')}/datasets/live`
  const followers = fork(
    join(import.meta.dirname, 'tail', 'clients-child.ts'),
    [base, String(clients), String(ready.tip + 1)],
    CHILD,
  )
  await message(followers, 'ready')
  await new Promise((r) => setTimeout(r, 500))

  const producedAt = new Map<number, number>()
  /** the start-up blocks' production times (TAIL_WARMUP) */
  const startupAt = new Map<number, number>()
  /** ms the node took to produce each block, its answer text assembled (not part of the latencies) */
  const assembled: number[] = []
  let gcMs = 0
  const gcEntries: [number, number, number][] = []
  let majorGcMs = 0
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration
      gcEntries.push([
        performance.timeOrigin + e.startTime,
        e.duration,
        (e as { detail?: { kind?: number } }).detail?.kind ?? 0,
      ])
      if ((e as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR)
        majorGcMs += e.duration
    }
  })
  let elu0 = performance.eventLoopUtilization()
  let cpu0 = process.cpuUsage()
  // the disk cold store's writer process, whose CPU counts with this process's
  const writerPid = cold instanceof ColdWriterProcess ? cold.pid : undefined
  const writerCpuMs = () => (writerPid === undefined ? 0 : processCpuMs(writerPid).all)
  let writer0 = writerCpuMs()
  let rpc0 = { requests: 0, getBlock: 0 }
  let measuredMs = 0
  let fromUs = 0
  for (let i = 0; i < WARMUP + BLOCKS; i++) {
    if (i === WARMUP) {
      rpc0 = await rpcStats()
      measuredMs = performance.now()
      fromUs = monotonicMicros()
      gcs.observe({ entryTypes: ['gc'] })
      elu0 = performance.eventLoopUtilization()
      cpu0 = process.cpuUsage()
      writer0 = writerCpuMs()
    }
    const t0 = performance.now()
    node.send({ t: 'produce' })
    const p = await message<{ slot: number; at: number; assembleMs: number }>(node, 'produced')
    if (i >= WARMUP) {
      producedAt.set(p.slot, p.at)
      assembled.push(p.assembleMs)
    } else startupAt.set(p.slot, p.at)
    await new Promise((r) => setTimeout(r, Math.max(0, INTERVAL_MS - (performance.now() - t0))))
  }
  const last = Math.max(...producedAt.keys())
  await ds.store.waitFor(last, false, 30_000)
  if (WINDOWS)
    process.stderr.write(
      `tail window ${JSON.stringify({ geyser, threads, clients, fromUs, toUs: monotonicMicros() })}\n`,
    )
  const busy = performance.eventLoopUtilization(elu0).utilization
  const cpu = process.cpuUsage(cpu0)
  const writerCpu = writerCpuMs() - writer0
  const writerPeakMb = writerPid === undefined ? null : statusKb(writerPid, 'VmHWM') / 1024
  const rpc1 = await rpcStats()
  const perHour = 3_600_000 / (performance.now() - measuredMs)
  gcs.disconnect()
  await new Promise((r) => setTimeout(r, 1000))
  followers.send({ t: 'stop' })
  const { seen, statuses } = await message<{ seen: [number, number][]; statuses: Record<string, number> }>(
    followers,
    'done',
  )
  await server.close()
  await ds.stop()
  await cold?.close()
  node.send({ t: 'stop' })
  await once(node, 'exit')
  rmSync(dir, { recursive: true, force: true })
  if (DUMP)
    writeFileSync(DUMP, JSON.stringify({ stored: [...stored.values()], gc: gcEntries, origin: performance.timeOrigin }))

  const row: Row = {
    threads,
    cold: coldKind,
    geyser,
    pollMs,
    rpcPerHour: (rpc1.requests - rpc0.requests) * perHour,
    getBlockPerHour: (rpc1.getBlock - rpc0.getBlock) * perHour,
    path:
      (geyser
        ? GEYSER_PATH
        : (threads > 0 ? `worker threads (${threads})` : 'main thread') +
          (threads === defaultDecodeThreads() ? ' (default)' : '') +
          (POLLS.length > 1 ? `, poll ${pollMs} ms` : '')) +
      (coldKind === 'memory'
        ? ''
        : `, cold store: ${coldKind === 'disk' ? 'disk, writer process' : 'disk, main thread'}`),
    clients,
    lines: 0,
    expected: producedAt.size * clients,
    assembled,
    blockToAnswer: [],
    answerToStore: [],
    blockToStore: [],
    blockToClient: [],
    storeToClient: [],
    startupAnswerToStore: [],
    startupToClient: [],
    stages: new Map(),
    thread: new Map(),
    slowest: null,
    busy,
    cpuPerBlock: ((cpu.user + cpu.system) / 1000 + writerCpu) / producedAt.size,
    writerPeakMb,
    gcPerBlock: gcMs / producedAt.size,
    majorGcPerBlock: majorGcMs / producedAt.size,
    statuses: Object.entries(statuses)
      .map(([k, v]) => `${v} × ${k}`)
      .join(', '),
  }
  for (const [slot, at] of producedAt) {
    const s = stored.get(slot)
    if (!s) continue
    row.blockToAnswer.push(performance.timeOrigin + s.answeredAt - at)
    row.answerToStore.push(s.storedAt - s.answeredAt)
    row.blockToStore.push(performance.timeOrigin + s.storedAt - at)
    const st = stagesOf(s)
    for (const [k, v] of st) row.stages.set(k, [...(row.stages.get(k) ?? []), v])
    const th = threadOf(s)
    for (const [k, v] of th) row.thread.set(k, [...(row.thread.get(k) ?? []), v])
    const total = s.storedAt - s.answeredAt
    if (!row.slowest || total > row.slowest.total) row.slowest = { number: slot, total, stages: st, thread: th }
  }
  for (const slot of startupAt.keys()) {
    const s = stored.get(slot)
    if (s) row.startupAnswerToStore.push(s.storedAt - s.answeredAt)
  }
  for (const [slot, at] of seen) {
    const w = startupAt.get(slot)
    if (w !== undefined) row.startupToClient.push(at - w)
    const t = producedAt.get(slot)
    if (t === undefined) continue
    row.lines++
    row.blockToClient.push(at - t)
    const s = stored.get(slot)
    if (s) row.storeToClient.push(at - (performance.timeOrigin + s.storedAt))
  }
  return row
}

/**
 * The stages of answer → store, in order: each ends at the named mark (wall clock); a stage whose
 * marks are missing (the main-thread path has no worker marks) is left out.
 */
const STAGES: [name: string, mark: keyof NonNullable<StoredBlock['marks']> | 'stored'][] = [
  ['to worker', 'start'],
  ['parse', 'parsed'],
  ['normalize', 'normalized'],
  ['pack', 'packed'],
  ['worker → main', 'received'],
  ['wait for apply', 'locked'],
  ['LMDB write', 'committed'],
  ['wake streams', 'emitted'],
  ['after wake', 'stored'],
]

/**
 * The decoding thread's own times for a block (of the later part when it was decoded in two):
 * from taking the answer to posting the result, the ms it ran on a core, the ms it waited for
 * one, the ms of garbage collection in its run (block-worker.ts, src/util/thread-clock.ts)
 */
const THREAD_TIMES: [name: string, mark: 'run' | 'wait' | 'gc'][] = [
  ['thread ran', 'run'],
  ['thread waited for a core', 'wait'],
  ['thread GC', 'gc'],
]

function threadOf(s: StoredBlock): Map<string, number> {
  const out = new Map<string, number>()
  for (const [name, mark] of THREAD_TIMES) {
    const v = s.marks?.[mark]
    if (v !== undefined) out.set(name, v)
  }
  return out
}

function stagesOf(s: StoredBlock): Map<string, number> {
  const out = new Map<string, number>()
  let prev = performance.timeOrigin + s.answeredAt
  for (const [name, mark] of STAGES) {
    const at = mark === 'stored' ? performance.timeOrigin + s.storedAt : s.marks?.[mark]
    if (at === undefined) continue
    out.set(name, at - prev)
    prev = at
  }
  return out
}

export async function run(): Promise<string> {
  const load0 = loadavg()
  const dir = mkdtempSync(join(tmpdir(), 'solportal-bench-tail-gen-'))
  const archive = join(dir, 'blocks.jsonl.gz')
  const gen = await writeArchive(archive, { blocks: 4, txsPerBlock: TXS, seed: 7 })
  const rows: Row[] = []
  // the paths back to back for each client count
  for (const coldKind of COLDS)
    for (const clients of CLIENTS) {
      for (const threads of THREADS)
        for (const poll of POLLS) rows.push(await measure(archive, threads, clients, coldKind, false, poll))
      // after the RPC rows (bench/compare reads the first row of the most clients)
      if (GEYSER === 'all' || (GEYSER !== '0' && clients === Math.max(...CLIENTS)))
        rows.push(await measure(archive, defaultDecodeThreads(), clients, coldKind, true))
    }
  rmSync(dir, { recursive: true, force: true })
  const load1 = loadavg()
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-')
  const pp = (xs: number[]) => `${f(pct(xs, 50))} | ${f(pct(xs, 99))}`
  /** one cell: p50 / p99 */
  const p50p99 = (xs: number[]) => `${f(pct(xs, 50))} / ${f(pct(xs, 99))}`
  const ratio = (a: Row, b: Row) => (pct(a.blockToClient, 99) / pct(b.blockToClient, 99)).toFixed(1)
  return [
    `## Live tail, mainnet-sized blocks (fake node → RPC → parse + normalize → hot store → server → clients)`,
    '',
    `Blocks of ~${TXS} transactions (${gen.txs} in the ${gen.blocks} generated templates, ${Math.round((gen.bytes / gen.blocks / 1e6) * 10) / 10} MB of JSON each), one every ${INTERVAL_MS} ms, ${BLOCKS} per row after ${WARMUP} start-up blocks (their figures apart, below); ingest poll ${POLLS.join(' / ')} ms, 4 getBlock requests in flight; the node finalizes ${FINALITY_LAG} slots behind its head. Load average ${load0.map((x) => x.toFixed(1)).join(' ')} at start, ${load1.map((x) => x.toFixed(1)).join(' ')} at end.`,
    '',
    '| parse + normalize | clients | lines received / expected | node assembling p50 ms | block → answer p50 ms | answer → store p50 ms | answer → store p99 ms | block → store p50 ms | block → store p99 ms | client p50 ms | client p99 ms | main thread busy | CPU ms per block | main GC ms per block (full) | responses | RPC calls per hour (getBlock) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.clients} | ${r.lines}/${r.expected} | ${f(pct(r.assembled, 50))} | ${f(pct(r.blockToAnswer, 50))} | ${pp(r.answerToStore)} | ${pp(r.blockToStore)} | ${pp(r.blockToClient)} | ${(r.busy * 100).toFixed(0)} % | ${f(r.cpuPerBlock)} | ${r.gcPerBlock.toFixed(1)} (${r.majorGcPerBlock.toFixed(1)}) | ${r.statuses} | ${f(r.rpcPerHour)} (${f(r.getBlockPerHour)}) |`,
    ),
    '',
    ...rows.flatMap((r, i) =>
      r.writerPeakMb === null
        ? []
        : [`Row ${i + 1}: the cold store's writer process peaked at ${f(r.writerPeakMb)} MB resident (VmHWM).`, ''],
    ),
    ...(WARMUP > 0
      ? [
          `#### start-up: the first ${WARMUP} blocks of each row, not counted above (a server just started: code not optimized yet, the hot store's file growing, no block finalized yet)`,
          '',
          '| parse + normalize | clients | answer → store p50 / p99 ms | client p50 / p99 ms |',
          '|---|---|---|---|',
          ...rows.map(
            (r) => `| ${r.path} | ${r.clients} | ${p50p99(r.startupAnswerToStore)} | ${p50p99(r.startupToClient)} |`,
          ),
          '',
        ]
      : []),
    '#### answer → store by stage (p50 / p99 ms; the slowest block of each row: ms per stage)',
    '',
    `| parse + normalize | clients | ${STAGES.map(([n]) => n).join(' | ')} | store → client p50 / p99 | slowest block: total = stages |`,
    `|---|---|${STAGES.map(() => '---|').join('')}---|---|`,
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.clients} | ${STAGES.map(([n]) => (r.stages.has(n) ? p50p99(r.stages.get(n)!) : '-')).join(' | ')} | ${p50p99(r.storeToClient)} | ${r.slowest ? `${f(r.slowest.total)} = ${[...r.slowest.stages.values()].map(f).join(' + ')}` : '-'} |`,
    ),
    '',
    '#### the decoding thread, from taking the answer to posting the result (p50 / p99 ms; the slowest block of each row)',
    '',
    `| parse + normalize | clients | ${THREAD_TIMES.map(([n]) => n).join(' | ')} | slowest block: ${THREAD_TIMES.map(([n]) => n).join(', ')} |`,
    `|---|---|${THREAD_TIMES.map(() => '---|').join('')}---|`,
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.clients} | ${THREAD_TIMES.map(([n]) => (r.thread.has(n) ? p50p99(r.thread.get(n)!) : '-')).join(' | ')} | ${r.slowest ? THREAD_TIMES.map(([n]) => f(r.slowest!.thread.get(n) ?? NaN)).join(', ') : '-'} |`,
    ),
    '',
    'node assembling: the fake node producing a block, its getBlock answer text assembled then (signatures and JSON of ~1,500 transactions in the node’s JS), before the block counts as produced: latencies start after it, as for a node that has the block at hand. block → answer: from the node producing the block to the last byte of its getBlock answer read (the poll interval, the getSlot/getBlocks round trips, the node sending its answer, the transfer); answer → store: from the last byte of the node’s getBlock answer read to the block in the hot store; block → store and client: from the node producing the block (it includes the poll interval and the node sending its answer) to the hot store having it and to each client reading its line. Main thread busy: its event loop utilization while the blocks were produced (ingest applying blocks, the server, and on the main-thread path parse + normalize). CPU ms per block: this process’s CPU time (all its threads: main, decoding, LMDB’s writer; with a disk cold store, its writer process’s too; not the node’s nor the clients’ processes) while the blocks were produced, per block; main GC: the main thread’s garbage collection pauses per block, in parentheses the full (mark-compact) ones. Responses: the clients’ requests by HTTP status (a 204 is asked again at once). RPC calls per hour: the HTTP JSON-RPC requests the node received while the row’s blocks were produced, per hour (in parentheses its getBlock calls).',
    ...(rows.some((r) => r.geyser)
      ? [
          '',
          `${GEYSER_PATH}: the node’s child also runs a fake Geyser server (gRPC on loopback) that encodes each block’s SubscribeUpdate message as the block is produced (counted in node assembling, before the block counts as produced) and sends it to the subscriber; this process follows it with createGeyserDataset (the RPC node only filling gaps). There block → answer is from the node producing the block to this process reading its stream message, and answer → store from reading the message (the main thread reads its header only; a decoding thread reads the protobuf, normalizes and packs, as for a getBlock answer) to the hot store having the block; the clients are the same.`,
        ]
      : []),
    '',
    ...CLIENTS.map((c) => {
      const main = rows.find((r) => r.clients === c && r.threads === 0 && r.cold === COLDS[0] && !r.geyser)
      const workers = rows.find((r) => r.clients === c && r.threads > 0 && r.cold === COLDS[0] && !r.geyser)
      const polled = rows.filter((r) => r.clients === c && r.threads > 0 && r.cold === COLDS[0] && !r.geyser)
      const geyser = rows.find((r) => r.clients === c && r.cold === COLDS[0] && r.geyser)
      return [
        main && workers
          ? `Client p99 with ${c} client(s), main thread ÷ worker threads: ${ratio(main, workers)}×.`
          : '',
        ...(geyser ? polled : []).map((workers) => geyserAgainst(workers, geyser!, c)),
      ].filter((l) => l !== '')
    }).flatMap((l) => [...l, '']),
  ].join('\n')
}

/** the Geyser row's latencies against an RPC row's (`workers`) with `c` clients, as a sentence */
function geyserAgainst(workers: Row, geyser: Row, c: number): string {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-')
  /** how much sooner the Geyser row (ys) is than the RPC row (xs) at percentile p */
  const saved = (xs: number[], ys: number[], p: number) => {
    const d = pct(xs, p) - pct(ys, p)
    return d >= 0 ? `${f(d)} ms sooner` : `${f(-d)} ms later`
  }
  return `Geyser against RPC (${workers.path}) with ${c} client(s): block → store p50 ${f(pct(geyser.blockToStore, 50))} against ${f(pct(workers.blockToStore, 50))} ms, ${saved(workers.blockToStore, geyser.blockToStore, 50)}; client p50 ${f(pct(geyser.blockToClient, 50))} against ${f(pct(workers.blockToClient, 50))} ms, ${saved(workers.blockToClient, geyser.blockToClient, 50)}; client p99 ${f(pct(geyser.blockToClient, 99))} against ${f(pct(workers.blockToClient, 99))} ms, ${saved(workers.blockToClient, geyser.blockToClient, 99)}; RPC calls per hour ${f(geyser.rpcPerHour)} against ${f(workers.rpcPerHour)}.`
}
