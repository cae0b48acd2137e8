/**
 * A production install (`npm ci --omit=dev`, as the Dockerfile does) has only `dependencies`: every
 * package that runtime code (src/, bin/) imports must be listed there, not only in
 * `devDependencies` (benchmarks, the sample generator and the tests may use dev packages).
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative } from 'node:path'
import { test } from 'node:test'

const ROOT = join(import.meta.dirname, '..')

function sources(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...sources(p))
    else if (/\.(ts|js|mjs)$/.test(e.name)) out.push(p)
  }
  return out
}

/** static (`import … from`, `export … from`, `import 'x'`) and dynamic (`import('x')`) imports */
const IMPORT_PATTERNS = [
  /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"\n]+)['"]/gm,
  /^\s*import\s*['"]([^'"\n]+)['"]/gm,
  /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g,
]

/** the specifiers a source text imports */
function specifiers(text: string): string[] {
  const specs: string[] = []
  for (const re of IMPORT_PATTERNS) for (const m of text.matchAll(re)) specs.push(m[1])
  return specs
}

/** bare (package) specifiers of a file */
function importsOf(file: string): string[] {
  return specifiers(readFileSync(file, 'utf8')).filter((s) => !s.startsWith('.') && !s.startsWith('/'))
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name` */
function packageName(spec: string): string {
  const parts = spec.split('/')
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

test('runtime code imports only node built-ins and packages listed in dependencies', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  const builtins = new Set(builtinModules)
  const files = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'bin'))]
  assert.ok(files.length > 20, 'source files found')
  const offending: string[] = []
  let checked = 0
  for (const file of files) {
    for (const spec of importsOf(file)) {
      checked++
      if (spec.startsWith('node:') || builtins.has(spec)) continue
      if (!(packageName(spec) in pkg.dependencies)) offending.push(`${relative(ROOT, file)}: ${spec}`)
    }
  }
  assert.ok(checked > 50, `imports found (${checked})`)
  assert.deepEqual(offending, [], 'move the package to dependencies, or the code out of src/')
})

test('the import scanner sees static, re-exported, side-effect and dynamic imports, not prose', () => {
  const text = [
    "import a from 'x'",
    'import {',
    '  b,',
    "} from '@s/y/z'",
    "export { c } from 'v'",
    "import 'w'",
    "const d = await import('u')",
    "// a comment that reads from 'nowhere'",
    " * moved from 'here' to there",
    "import { e } from './local.ts'",
  ].join('\n')
  assert.deepEqual(specifiers(text).map(packageName).sort(), ['.', '@s/y', 'u', 'v', 'w', 'x'])
})
