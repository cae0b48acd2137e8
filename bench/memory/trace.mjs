// Preloaded into the server by bench/memory.bench.ts (MEMORY_TRACE=1, `node --import`): samples
// process.memoryUsage() every 100 ms and appends the maximum of each field since the last line to
// the file MEMORY_TRACE_FILE once a second (MiB: rss heapTotal heapUsed external arrayBuffers RssAnon RssFile).
import { appendFileSync, readFileSync } from 'node:fs'

const file = process.env.MEMORY_TRACE_FILE
if (file) {
  let max = null
  let n = 0
  const t = setInterval(() => {
    const st = readFileSync('/proc/self/status', 'utf8')
    const kb = (f) => Number(new RegExp(`\\n${f}:\\s+(\\d+) kB`).exec(st)?.[1] ?? 0) * 1024
    const u = { ...process.memoryUsage(), anon: kb('RssAnon'), file: kb('RssFile') }
    max = max ? Object.fromEntries(Object.entries(u).map(([k, v]) => [k, Math.max(v, max[k])])) : u
    if (++n % 10) return
    const m = (x) => (x / 2 ** 20).toFixed(0)
    appendFileSync(
      file,
      `${Date.now()} ${m(max.rss)} ${m(max.heapTotal)} ${m(max.heapUsed)} ${m(max.external)} ${m(max.arrayBuffers)} ${m(max.anon)} ${m(max.file)}\n`,
    )
    max = null
  }, 100)
  t.unref()
}
