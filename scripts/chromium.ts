/**
 * Headless Chromium for the browser tests (driven with playwright-core): Debian's `chromium`
 * package, installed with apt-get when it is missing and the process runs as root.
 *
 *   node --import tsx scripts/chromium.ts    # install if needed; prints the path, or why not (exit 1)
 *
 * Tests call `ensureChromium()` and skip, printing the reason, when it returns one.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const CHROMIUM = '/usr/bin/chromium'

/** Installs Debian's chromium when absent; returns why a test must be skipped, or null. */
export function ensureChromium(): string | null {
  if (existsSync(CHROMIUM)) return null
  if (process.getuid?.() !== 0) return `${CHROMIUM} is missing and installing it needs root`
  const r = spawnSync(
    'sh',
    [
      '-c',
      '(apt-get update || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=600 chromium',
    ],
    { encoding: 'utf8', timeout: 20 * 60_000 },
  )
  if (r.status === 0 && existsSync(CHROMIUM)) return null
  if (r.status === 0) return `apt-get installed chromium, but ${CHROMIUM} is still missing`
  const out = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.trim().split('\n').slice(-3).join(' | ')
  return `apt-get install chromium failed (exit ${r.status ?? r.signal ?? r.error?.message}): ${out}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const why = ensureChromium()
  if (why) {
    process.stderr.write(`chromium: ${why}\n`)
    process.exit(1)
  }
  process.stdout.write(`${CHROMIUM}\n`)
}
