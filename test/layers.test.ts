/**
 * The layers of src/ point one way: each top-level folder (or root file) may import only the layers
 * below it (LOWER), and no module imports itself back through others at run time (an import
 * cycle: the order modules initialize in then depends on who is imported first). The checker is
 * tested on small made-up trees too, so that a rule it stopped enforcing fails here.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'

const SRC = join(import.meta.dirname, '..', 'src')

/**
 * What each layer may import besides itself. Bottom to top: util (no dependency), the model and
 * the log, the RPC types and parser, the dataset declarations (their generic types and each
 * dataset's declaration), the catalogue (where the default dataset is wired), then normalization
 * and storage, the query engine over storage, ingestion (sources into storage), export, the HTTP
 * server, and the command line on top.
 */
const LOWER: Record<string, readonly string[]> = {
  util: [],
  model: ['util'],
  log: ['util'],
  rpc: ['util', 'model'],
  dataset: ['util', 'model'],
  catalogue: ['util', 'model', 'dataset'],
  normalize: ['util', 'model', 'rpc', 'dataset', 'catalogue'],
  store: ['util', 'model', 'log', 'dataset', 'catalogue'],
  query: ['util', 'model', 'log', 'dataset', 'catalogue', 'store'],
  ingest: ['util', 'model', 'log', 'rpc', 'dataset', 'catalogue', 'normalize', 'store'],
  export: ['util', 'model', 'log', 'dataset', 'catalogue', 'store'],
  server: ['util', 'model', 'log', 'rpc', 'dataset', 'catalogue', 'normalize', 'store', 'query', 'ingest', 'export'],
  cli: [
    'util',
    'model',
    'log',
    'rpc',
    'dataset',
    'catalogue',
    'normalize',
    'store',
    'query',
    'ingest',
    'export',
    'server',
  ],
}

/**
 * A dataset's declaration (src/dataset/<name>.ts, all but the generic types.ts) is wired in by the
 * catalogue (the default dataset), the server and the command line only: the engine, the stores
 * and the export take a `Dataset`. The generic layers (GENERIC) take from the catalogue nothing but
 * `DEFAULT_DATASET`, the default for callers that name none.
 */
const WIRING = ['catalogue.ts', 'server/', 'cli/']
const GENERIC = [
  'query/',
  'export/',
  'store/memory.ts',
  'store/chunk.ts',
  'store/cold/chunk-file.ts',
  'store/cold/disk-chunk.ts',
]

export function datasetViolations(root: string, modules: Map<string, string>): string[] {
  const problems: string[] = []
  const declarations = join(root, 'dataset')
  for (const [file, text] of modules) {
    const from = relative(root, file)
    for (const e of importsOf(file, text)) {
      const to = relative(root, e.to)
      const declaration = dirname(e.to) === declarations && !e.to.endsWith('/types.ts')
      if (declaration && !from.startsWith('dataset/') && !WIRING.some((w) => from.startsWith(w)))
        problems.push(`${from} imports the declaration ${to} (take a Dataset instead)`)
    }
    if (!GENERIC.some((g) => from.startsWith(g))) continue
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['"](\.[^'"]+)['"]/gm)) {
      if (relative(root, resolve(dirname(file), m[2])) !== 'catalogue.ts') continue
      for (const name of m[1].split(',').map((x) => x.trim().replace(/^type\s+/, ''))) {
        if (name !== '' && name !== 'DEFAULT_DATASET') problems.push(`${from} takes ${name} from the catalogue`)
      }
    }
  }
  return problems
}

interface Edge {
  from: string
  to: string
  /** `import type` only: erased at run time, so no cycle, but still an arrow between layers */
  typeOnly: boolean
}

/** the relative imports of a module's text (static, re-exports, side-effect and dynamic) */
export function importsOf(file: string, text: string): Edge[] {
  const out: Edge[] = []
  const add = (spec: string, typeOnly: boolean) => out.push({ from: file, to: resolve(dirname(file), spec), typeOnly })
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?([^;'"]*?)\s+from\s+['"](\.[^'"]+)['"]/gms)) {
    const names = m[2].trim()
    const allTypes =
      /^\{[^}]*\}$/.test(names) &&
      names
        .slice(1, -1)
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')
        .every((x) => x.startsWith('type '))
    add(m[3], !!m[1] || allTypes)
  }
  for (const m of text.matchAll(/^\s*import\s+['"](\.[^'"]+)['"]/gm)) add(m[1], false)
  for (const m of text.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)) add(m[1], false)
  return out
}

/** a path's layer: its top-level folder under src, or a root file's name without extension */
function layerOf(root: string, path: string): string {
  const parts = relative(root, path).split('/')
  return parts.length === 1 ? parts[0].replace(/\.[^.]+$/, '') : parts[0]
}

/** the arrows the layering forbids and the run-time import cycles of a tree of modules */
export function violations(root: string, modules: Map<string, string>): string[] {
  const problems: string[] = []
  const graph = new Map<string, string[]>()
  for (const [file, text] of modules) {
    const edges = importsOf(file, text)
    graph.set(
      file,
      edges.filter((e) => !e.typeOnly).map((e) => e.to),
    )
    for (const e of edges) {
      const a = layerOf(root, e.from)
      const b = layerOf(root, e.to)
      if (a === b) continue
      const allowed = LOWER[a]
      if (!allowed) problems.push(`${relative(root, e.from)}: layer '${a}' is not declared in LOWER`)
      else if (!allowed.includes(b))
        problems.push(`${relative(root, e.from)} imports ${relative(root, e.to)}: ${a} -> ${b}`)
    }
  }
  // cycles of run-time imports (depth-first search, grey = on the stack)
  const colour = new Map<string, 1 | 2>()
  const stack: string[] = []
  const visit = (n: string): void => {
    colour.set(n, 1)
    stack.push(n)
    for (const d of graph.get(n) ?? []) {
      if (!graph.has(d)) continue
      if (colour.get(d) === 1) {
        const cycle = stack.slice(stack.indexOf(d)).concat(d)
        problems.push(`import cycle: ${cycle.map((x) => relative(root, x)).join(' -> ')}`)
      } else if (!colour.has(d)) visit(d)
    }
    stack.pop()
    colour.set(n, 2)
  }
  for (const n of graph.keys()) if (!colour.has(n)) visit(n)
  return problems
}

function sourceTree(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) sourceTree(p, out)
    else if (/\.(ts|mts|mjs)$/.test(e.name) && !e.name.endsWith('.d.mts')) out.set(p, readFileSync(p, 'utf8'))
  }
  return out
}

test('src/ imports point down the layers only, and no module imports itself back', () => {
  const tree = sourceTree(SRC)
  assert.ok(tree.size > 100, `${tree.size} modules read`)
  const layers = new Set([...tree.keys()].map((f) => layerOf(SRC, f)))
  for (const l of layers) assert.ok(LOWER[l], `layer '${l}' is declared`)
  assert.deepEqual(violations(SRC, tree), [])
  assert.deepEqual(datasetViolations(SRC, tree), [])
})

test('the dataset checker finds a declaration imported outside the wiring, and a catalogue table in a generic layer', () => {
  const R = '/src'
  const tree = (files: Record<string, string>) => new Map(Object.entries(files).map(([k, v]) => [`${R}/${k}`, v]))
  for (const [from, to] of [
    ['query/execute.ts', '../dataset/solana.ts'],
    ['store/memory.ts', '../dataset/solana.ts'],
    ['store/cold/chunk-file.ts', '../../dataset/solana.ts'],
    ['export/parquet.ts', '../dataset/solana.ts'],
    ['normalize/text.ts', '../dataset/solana.ts'],
  ]) {
    const v = datasetViolations(R, tree({ [from]: `import { SOLANA } from '${to}'\n` }))
    assert.equal(v.length, 1, `${from} -> ${to}: ${v.join('; ')}`)
  }
  for (const [from, names] of [
    ['query/join.ts', 'BLOCK_MEMBERS'],
    ['store/memory.ts', 'columnsOf'],
    ['export/parquet.ts', 'DEFAULT_DATASET, type FieldDef'],
  ]) {
    const to = from.split('/').length === 2 ? '../catalogue.ts' : '../../catalogue.ts'
    const v = datasetViolations(R, tree({ [from]: `import { ${names} } from '${to}'\n` }))
    assert.equal(v.length, 1, `${from}: ${names}: ${v.join('; ')}`)
  }
  // allowed: the wiring, the generic types, and the default dataset
  assert.deepEqual(
    datasetViolations(
      R,
      tree({
        'catalogue.ts': "import { SOLANA } from './dataset/solana.ts'\n",
        'server/openapi.ts': "import { SOLANA } from '../dataset/solana.ts'\n",
        'query/parse.ts':
          "import { DEFAULT_DATASET } from '../catalogue.ts'\nimport type { Dataset } from '../dataset/types.ts'\n",
      }),
    ),
    [],
  )
})

test('the checker finds a forbidden arrow and a cycle in made-up trees', () => {
  const R = '/src'
  const tree = (files: Record<string, string>) => new Map(Object.entries(files).map(([k, v]) => [`${R}/${k}`, v]))
  // the store importing the query engine, the query engine importing ingestion, normalization the store
  for (const [from, to] of [
    ['store/chunk.ts', '../query/render.ts'],
    ['store/cold/raw.ts', '../../query/bytes.ts'],
    ['query/execute.ts', '../ingest/rpc.ts'],
    ['normalize/normalize.ts', '../store/types.ts'],
    ['store/chunk.ts', '../server/http.ts'],
    ['dataset/solana.ts', '../query/parse.ts'],
    ['dataset/types.ts', '../catalogue.ts'],
  ]) {
    const v = violations(R, tree({ [from]: `import { x } from '${to}'\n` }))
    assert.equal(v.length, 1, `${from} -> ${to}: ${v.join('; ')}`)
    assert.match(v[0], / -> /)
  }
  // type-only imports are arrows too, dynamic imports and re-exports as well
  assert.equal(violations(R, tree({ 'store/a.ts': "import type { Q } from '../query/q.ts'\n" })).length, 1)
  assert.equal(violations(R, tree({ 'store/a.ts': "const q = await import('../query/q.ts')\n" })).length, 1)
  assert.equal(violations(R, tree({ 'store/a.ts': "export { q } from '../query/q.ts'\n" })).length, 1)
  // allowed: down the layers
  assert.deepEqual(violations(R, tree({ 'query/a.ts': "import { s } from '../store/s.ts'\n" })), [])
  // a run-time cycle, and the same through type imports only (erased: no cycle)
  const cyc = violations(
    R,
    tree({ 'store/a.ts': "import { b } from './b.ts'\n", 'store/b.ts': "import { a } from './a.ts'\n" }),
  )
  assert.deepEqual(cyc, ['import cycle: store/a.ts -> store/b.ts -> store/a.ts'])
  assert.deepEqual(
    violations(
      R,
      tree({
        'store/a.ts': "import { b } from './b.ts'\n",
        'store/b.ts': "import { type A } from './a.ts'\nimport type { C } from './a.ts'\n",
      }),
    ),
    [],
  )
})
