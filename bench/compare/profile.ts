/**
 * CPU profiles for the comparison bench: reads the `.cpuprofile` files that `node --cpu-prof` writes
 * (one per thread) and sums the sampled self time per function, optionally only over a window of the
 * monotonic clock (the bench and its child server read the same CLOCK_MONOTONIC, and V8 stamps
 * samples with it), so a profile of a long-lived server covers one query and not its start-up.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; scriptId: string | number; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface FunctionCost {
  /** function name, `(garbage collector)`, `(program)` (native code outside JS), ... */
  name: string
  /** source location relative to the repository root (or node's internal module name) */
  where: string
  selfMs: number
  /** share of the thread's busy (non-idle) sampled time */
  share: number
}

export interface ThreadProfile {
  /** `main` or `worker N` (from the file name node gives each thread's profile) */
  thread: string
  /** sampled time in the window, idle excluded */
  busyMs: number
  idleMs: number
  top: FunctionCost[]
  /** the busy time per source file (node internals under their module name) */
  files: { file: string; share: number }[]
  /** false when no sample fell into the requested window (then the whole profile is summarized) */
  windowed: boolean
}

/** monotonic clock in microseconds, the time base of V8's profile samples */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n)
}

function location(url: string, line: number, root: string): string {
  if (!url) return ''
  let path = url
  if (url.startsWith('file://')) {
    try {
      path = fileURLToPath(url)
    } catch {
      path = url
    }
  }
  if (path.startsWith(root + sep)) path = relative(root, path)
  // line 1 is what V8 reports for code whose lines it does not know (tsx-compiled modules)
  return line > 0 ? `${path}:${line + 1}` : path
}

/** Summarizes one profile: self time per function (samples in [fromUs, toUs] when given). */
export function summarizeProfile(
  profile: CpuProfile,
  root: string,
  opts: { fromUs?: number; toUs?: number; top?: number } = {},
): Omit<ThreadProfile, 'thread'> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  /** name and place of a node; nameless frames without a script are native code: named by their caller */
  const label = (id: number): { name: string; where: string } => {
    const cf = byId.get(id)!.callFrame
    if (cf.functionName) return { name: cf.functionName, where: location(cf.url, cf.lineNumber, root) }
    if (cf.url) return { name: '(anonymous)', where: location(cf.url, cf.lineNumber, root) }
    if (String(cf.scriptId) !== '0') return { name: '(code compiled by new Function)', where: '' }
    const up = parent.get(id)
    if (up === undefined) return { name: '(native)', where: '' }
    const caller = label(up)
    return { name: `(native, called by ${caller.name})`, where: caller.where }
  }
  const count = (from: number, to: number) => {
    const self = new Map<number, number>()
    let t = profile.startTime
    let n = 0
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i]
      // a sample stands for the interval up to the next one
      const dt = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1] : 0
      if (t < from || t > to || dt <= 0) continue
      n++
      self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt)
    }
    return { self, n }
  }
  let windowed = opts.fromUs !== undefined || opts.toUs !== undefined
  let { self, n } = count(opts.fromUs ?? -Infinity, opts.toUs ?? Infinity)
  if (windowed && n === 0) {
    windowed = false
    ;({ self } = count(-Infinity, Infinity))
  }
  const fns = new Map<string, { name: string; where: string; us: number }>()
  const files = new Map<string, number>()
  let idle = 0
  let busy = 0
  for (const [id, us] of self) {
    const { name, where } = label(id)
    if (name === '(idle)') {
      idle += us
      continue
    }
    busy += us
    const key = `${name}\0${where}`
    const f = fns.get(key) ?? { name, where, us: 0 }
    f.us += us
    fns.set(key, f)
    const file = where ? where.replace(/:\d+$/, '') : name
    files.set(file, (files.get(file) ?? 0) + us)
  }
  const share = (us: number) => (busy > 0 ? us / busy : 0)
  return {
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    top: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, opts.top ?? 10)
      .map((f) => ({ name: f.name, where: f.where, selfMs: f.us / 1000, share: share(f.us) })),
    files: [...files.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([file, us]) => ({ file, share: share(us) })),
    windowed,
  }
}

/**
 * Every `.cpuprofile` in `dir` (node writes `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`,
 * thread 0 = the main thread), summarized, busiest thread first.
 */
export function summarizeProfileDir(
  dir: string,
  root: string,
  opts: { fromUs?: number; toUs?: number; top?: number } = {},
): ThreadProfile[] {
  const out: ThreadProfile[] = []
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'))) {
    const tid = /\.(\d+)\.\d+\.cpuprofile$/.exec(f)?.[1]
    const thread = tid === undefined || tid === '0' ? 'main' : `worker ${tid}`
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile
    out.push({ thread, ...summarizeProfile(p, root, opts) })
  }
  return out.sort((a, b) => b.busyMs - a.busyMs)
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`

/** one line: "main thread busy 12.3 s: f (file:line) 23%, g 12%, ...; by file: a.ts 40%, ..." */
export function boundedBy(threads: ThreadProfile[], n = 4): string {
  if (threads.length === 0) return 'no profile written'
  return threads
    .filter((t, i) => i === 0 || t.busyMs >= 0.2 * threads[0].busyMs)
    .map(
      (t) =>
        `${t.thread} thread (${(t.busyMs / 1000).toFixed(1)} s busy, ${pct(t.busyMs / Math.max(1e-9, t.busyMs + t.idleMs))} of its sampled time): ` +
        t.top
          .slice(0, n)
          .map((f) => `\`${f.name}\`${f.where ? ` (${f.where})` : ''} ${pct(f.share)}`)
          .join(', ') +
        `; by file: ${t.files
          .slice(0, 3)
          .map((f) => `${f.file} ${pct(f.share)}`)
          .join(', ')}`,
    )
    .join(' — ')
}

/** a markdown table of the busiest threads' top functions */
export function profileTable(threads: ThreadProfile[]): string[] {
  const rows: string[] = ['| thread | function | where | self ms | share of busy time |', '|---|---|---|---|---|']
  for (const t of threads.slice(0, 3)) {
    for (const f of t.top)
      rows.push(`| ${t.thread} | \`${f.name}\` | ${f.where || '–'} | ${f.selfMs.toFixed(0)} | ${pct(f.share)} |`)
  }
  return rows
}
