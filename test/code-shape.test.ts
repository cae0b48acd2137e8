/**
 * The code stays in rooms a newcomer can change: no file in src/ over FILE_MAX lines and no function
 * over FUNCTION_MAX lines, except the declarations listed in EXEMPT (pure data: a table of flags, a
 * dataset's fields). Functions are found with the TypeScript parser (declarations, methods,
 * constructors, accessors, arrow functions and function expressions); a function's lines count
 * from its first line to its last, nested functions included. The checker is tried on made-up
 * text too, so that a rule it stopped enforcing fails here.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import ts from 'typescript'

const SRC = join(import.meta.dirname, '..', 'src')
const FILE_MAX = 600
const FUNCTION_MAX = 80

/** `file:function` (or `file` for a whole file) → why it may be longer: declarations only */
const EXEMPT: Record<string, string> = {}

interface Long {
  where: string
  lines: number
}

/** the functions of a module's text longer than `max` lines */
export function longFunctions(file: string, text: string, max: number): Long[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: Long[] = []
  const visit = (n: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isArrowFunction(n) ||
      ts.isFunctionExpression(n) ||
      ts.isConstructorDeclaration(n) ||
      ts.isGetAccessor(n) ||
      ts.isSetAccessor(n)
    ) {
      const first = src.getLineAndCharacterOfPosition(n.getStart()).line
      const last = src.getLineAndCharacterOfPosition(n.getEnd()).line
      if (last - first + 1 > max) out.push({ where: `${file}:${nameOf(n)}`, lines: last - first + 1 })
    }
    ts.forEachChild(n, visit)
  }
  visit(src)
  return out
}

function nameOf(n: ts.Node): string {
  const named = (n as { name?: ts.Node }).name
  if (named !== undefined) return named.getText()
  if (ts.isConstructorDeclaration(n)) return 'constructor'
  const p = n.parent
  if (p !== undefined && (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p))) {
    return p.name.getText()
  }
  const line = n.getSourceFile().getLineAndCharacterOfPosition(n.getStart()).line + 1
  return `<function at line ${line}>`
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts') && !e.name.endsWith('.d.mts'))
    .map((e) => join(e.parentPath, e.name))
    .sort()
}

test('the checker finds a long function, a long method and a long arrow function, and names them', () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i}`).join('\n')
  const text = [
    `function short() {\n${body(3)}\n}`,
    `export function long() {\n${body(10)}\n}`,
    `class C {\n  m() {\n${body(10)}\n  }\n}`,
    `const f = () => {\n${body(10)}\n}`,
  ].join('\n')
  const found = longFunctions('t.ts', text, 8).map((l) => l.where)
  assert.deepEqual(found, ['t.ts:long', 't.ts:m', 't.ts:f'])
})

test(`no file in src/ over ${FILE_MAX} lines, no function over ${FUNCTION_MAX} (declarations excepted)`, () => {
  const over: string[] = []
  for (const path of sources(SRC)) {
    const file = relative(SRC, path)
    const text = readFileSync(path, 'utf8')
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
    if (lines > FILE_MAX && !(file in EXEMPT)) over.push(`${file}: ${lines} lines`)
    for (const l of longFunctions(file, text, FUNCTION_MAX)) {
      if (!(l.where in EXEMPT)) over.push(`${l.where}: ${l.lines} lines`)
    }
  }
  assert.deepEqual(over, [], `split these by job (or, for pure declarations, list them in EXEMPT):\n${over.join('\n')}`)
})

test('every exemption still names something long', () => {
  for (const where of Object.keys(EXEMPT)) {
    const [file, fn] = where.split(':')
    const text = readFileSync(join(SRC, file), 'utf8')
    const long =
      fn === undefined
        ? text.split('\n').length > FILE_MAX
        : longFunctions(file, text, FUNCTION_MAX).some((l) => l.where === where)
    assert.ok(long, `${where} is exempt but no longer over the limit: remove it from EXEMPT`)
  }
})
