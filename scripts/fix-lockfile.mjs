// The npm registry reachable here serves only the linux-x64 builds of platform-specific optional
// packages (duckdb, litesvm, msgpackr-extract bindings); `npm install` then writes a lock without
// the other platforms' entries, and `npm ci` refuses such a lock ("Missing: X from lock file").
// This adds placeholder entries for every missing optional dependency, with the os/cpu/libc that
// its name announces, so that `npm ci` accepts the lock and skips them as foreign platforms.
// Run it after any `npm install` that changes package-lock.json.
import { readFileSync, writeFileSync } from 'node:fs'

const path = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(path, 'utf8'))
const pkgs = lock.packages
let added = 0
for (const [key, meta] of Object.entries(pkgs)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const base = key === '' ? '' : `${key}/`
    // resolution: nested node_modules first, then the hoisted one
    if (pkgs[`${base}node_modules/${name}`] || pkgs[`node_modules/${name}`]) continue
    const os = /darwin/.test(name) ? 'darwin' : /win32/.test(name) ? 'win32' : /linux/.test(name) ? 'linux' : null
    const cpu = /arm64/.test(name) ? 'arm64' : /x64/.test(name) ? 'x64' : /arm\b|-arm$/.test(name) ? 'arm' : null
    if (!os || !cpu) throw new Error(`cannot tell the platform of ${name} (needed by ${key || 'the root'})`)
    const entry = { version, optional: true, os: [os], cpu: [cpu] }
    if (os === 'linux') entry.libc = [/musl/.test(name) ? 'musl' : 'glibc']
    pkgs[`node_modules/${name}`] = entry
    added++
  }
}
const sorted = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
)
lock.packages = sorted
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n')
console.error(`fix-lockfile: added ${added} placeholder entries`)
