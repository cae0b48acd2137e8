/**
 * The tail figure of the comparison bench: runs bench/tail.bench.ts (the live-ingest latency bench:
 * fake node → ingest → store → server → clients) in a child process, optionally under `--cpu-prof`,
 * and reads the 100-client row's p99 from the markdown table it returns (by column name, so that the
 * table may gain columns), and where the latency of that row goes, stage by stage (`tailStages`).
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export interface TailResult {
  /** the section bench/tail.bench.ts returned */
  markdown: string
  seconds: number
  /** client p99 ms at the largest client count in the table (null when the table could not be read) */
  p99Ms: number | null
  clients: number | null
}

/** the cells of a markdown table row */
const cells = (line: string) =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim())

/** client p99 of the row with the most clients, from a tail bench table */
export function tailP99(markdown: string): { p99Ms: number; clients: number } | null {
  const lines = markdown.split('\n')
  let best: { p99Ms: number; clients: number } | null = null
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].trim().startsWith('|')) continue
    const head = cells(lines[i]).map((c) => c.toLowerCase())
    const ci = head.findIndex((c) => /^clients?\b/.test(c))
    const pi = head.findIndex((c) => c.includes('client') && c.includes('p99'))
    if (ci < 0 || pi < 0) continue
    for (let j = i + 2; j < lines.length && lines[j].trim().startsWith('|'); j++) {
      const row = cells(lines[j])
      const clients = Number(row[ci]?.replace(/,/g, ''))
      const p99 = Number(row[pi]?.replace(/,/g, ''))
      if (Number.isFinite(clients) && Number.isFinite(p99) && (!best || clients > best.clients))
        best = { p99Ms: p99, clients }
    }
  }
  return best
}

/**
 * Where the tail's latency goes, from the tables of a tail bench section: for the default ingest path
 * (the row whose first cell says "(default)", else the first) with the most clients, every p50 / p99
 * pair of its tables (block → answer, answer → store stage by stage, store → client, the decoding
 * thread's run time, wait for a core and GC), as "name p50 / p99" cells, table by table. Columns are read by
 * name; a "slowest block" column and the row's own keys are left out. Null when no table has such a row.
 */
export function tailStages(markdown: string): string | null {
  const lines = markdown.split('\n')
  const parts: string[] = []
  let title = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line.startsWith('#')) title = line.replace(/^#+\s*/, '').replace(/\s*\(.*$/, '')
    if (!line.startsWith('|') || !lines[i + 1]?.trim().startsWith('|---')) continue
    const head = cells(line)
    const ci = head.findIndex((c) => /^clients?\b/i.test(c))
    if (ci < 0) continue
    let pick: string[] | null = null
    let j = i + 2
    for (; j < lines.length && lines[j].trim().startsWith('|'); j++) {
      const row = cells(lines[j])
      const clients = Number(row[ci]?.replace(/,/g, ''))
      if (!Number.isFinite(clients)) continue
      const best = pick ? Number(pick[ci].replace(/,/g, '')) : -1
      const isDefault = /\(default\)/.test(row[0])
      const pickDefault = pick !== null && /\(default\)/.test(pick[0])
      if (!pick || (isDefault && !pickDefault) || (isDefault === pickDefault && clients > best)) pick = row
    }
    i = j - 1
    if (!pick) continue
    const found: string[] = []
    head.forEach((h, k) => {
      if (k === 0 || k === ci || /^slowest/i.test(h)) return
      const v = pick[k] ?? ''
      // "p50 / p99" cells, or a lone p50 / p99 column ("client p99 ms")
      if (/^[\d.,]+ \/ [\d.,]+$/.test(v)) found.push(`${h.replace(/\s*p50 \/ p99\s*(ms)?/i, '')} ${v}`)
      else if (/\bp(50|99)\b/.test(h) && /^[\d.,]+$/.test(v)) found.push(`${h.replace(/\s*ms$/, '')} ${v}`)
    })
    if (found.length) parts.push(`${title ? `${title}: ` : ''}${found.join(', ')}`)
  }
  return parts.length ? parts.join('; ') : null
}

export function runTailBench(root: string, opts: { cpuProfDir?: string } = {}): TailResult {
  const url = pathToFileURL(join(root, 'bench', 'tail.bench.ts')).href
  const script = `const m = await import(${JSON.stringify(url)}); process.stdout.write(await m.run()); process.exit(0)`
  const t0 = performance.now()
  const r = spawnSync(
    process.execPath,
    [
      ...(opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : []),
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const seconds = (performance.now() - t0) / 1000
  if (r.status !== 0) throw new Error(`bench/tail.bench.ts failed (${r.status})`)
  const p = tailP99(r.stdout)
  return { markdown: r.stdout.trim(), seconds, p99Ms: p?.p99Ms ?? null, clients: p?.clients ?? null }
}
