/**
 * The repository stands alone: no tracked file points outside it (to a sibling `shared` folder
 * of specification files) or carries an absolute path of the machine it was written on (bench
 * results, examples, comments). The file list comes from `git ls-files` (tracked files and new ones
 * not ignored, as a clone or the next commit sees them) or, outside a git checkout, from walking the
 * tree without node_modules.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'

const ROOT = join(import.meta.dirname, '..')

/** tracked files, relative to the root */
function trackedFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
    return out.split('\0').filter((f) => f !== '')
  } catch {
    const files: string[] = []
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name === 'node_modules' || e.name === '.git' || e.name === 'tmp') continue
        const p = join(dir, e.name)
        if (e.isDirectory()) walk(p)
        else if (e.isFile()) files.push(relative(ROOT, p))
      }
    }
    walk(ROOT)
    return files
  }
}

// Assembled from parts so that this file does not match its own patterns.
const SPEC_DIR = ['shared', 'spec'].join('/')
const SIBLING = ['..', 'sha' + 'red'].join('/')
/** the same folder reached through path segments in code (`join(ROOT, '..', NAME, ...)`) */
const SIBLING_SEGMENTS = new RegExp(`['"]\\.\\.['"]\\s*,\\s*['"]${'sha' + 'red'}['"]`)
/** an absolute path into a machine's work, temporary, home or mount folders */
const ABSOLUTE = new RegExp(
  '(^|[^A-Za-z0-9_.~$/-])/(' + ['work', 'tmp', 'root', 'home', 'Users', 'mnt', 'srv'].join('|') + ')/[A-Za-z0-9_.-]',
)

/** every offending line of the tracked text files, as `path:line: text` */
function offenders(match: (line: string) => boolean): string[] {
  const hits: string[] = []
  for (const file of trackedFiles()) {
    let buf: Buffer
    try {
      buf = readFileSync(join(ROOT, file))
    } catch {
      continue // deleted in the work tree but still tracked
    }
    if (buf.includes(0)) continue // binary (gzip archives)
    const lines = buf.toString('utf8').split('\n')
    lines.forEach((line, i) => {
      if (match(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`)
    })
  }
  return hits
}

test('the file list covers the repository', () => {
  const files = trackedFiles()
  for (const f of ['README.md', 'package.json', 'src/cli/main.ts', 'test/repo-hygiene.test.ts']) {
    assert.ok(files.includes(f), `${f} missing from the file list`)
  }
})

test('no tracked file points to a shared specification folder outside the repository', () => {
  const hits = offenders((line) => line.includes(SPEC_DIR) || line.includes(SIBLING) || SIBLING_SEGMENTS.test(line))
  assert.deepEqual(hits, [], 'cite docs/query.md instead')
})

test('the sibling-folder pattern catches path segments in code', () => {
  const q = (s: string) => `'${s}'`
  assert.ok(SIBLING_SEGMENTS.test(`join(ROOT, ${q('..')}, ${q('sha' + 'red')}, 'bench')`))
  assert.ok(SIBLING_SEGMENTS.test(`resolve(dir, "..","${'sha' + 'red'}")`))
  assert.ok(!SIBLING_SEGMENTS.test(`join(ROOT, ${q('..')}, 'data')`))
})

test('no tracked file carries an absolute machine path', () => {
  const hits = offenders((line) => ABSOLUTE.test(line))
  assert.deepEqual(hits, [], 'write paths relative to the repository (bench writers: portablePaths)')
})

test('the absolute-path pattern catches what it is meant to and spares relative paths', () => {
  const abs = (...parts: string[]): string => '/' + parts.join('/')
  const bad = [
    `wrote ${abs('work', 'main', 'bench', 'x')}`,
    `"${abs('tmp', 'abc')}"`,
    `at ${abs('home', 'user', 'x')}`,
    `\`${abs('root', '.npm', 'x')}\``,
    `(${abs('Users', 'me', 'a')})`,
  ]
  for (const line of bad) assert.ok(ABSOLUTE.test(line), line)
  for (const line of ['bench/tmp/compare/', 'DATASET/cold/tmp/ files', 'https://example.com/home/x', '~/tmp/x'])
    assert.ok(!ABSOLUTE.test(line), line)
})
