// Compiles the AssemblyScript sources of bench/tape into the WebAssembly module committed beside
// them (`npm run build:wasm`), so that nothing needs a compiler at install or run time. The build
// is deterministic: test/bench-tape.test.ts compiles the source again and checks that the bytes
// are the committed module's, so the two cannot drift apart.
import { execFileSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
/** the source, the module, and the compiler's options (SIMD: Node.js has had it since 16.4) */
export const TAPE_SOURCE = join(ROOT, 'bench/tape/assembly/reader.ts')
export const TAPE_MODULE = join(ROOT, 'bench/tape/reader.wasm')
export const TAPE_FLAGS = ['-O3', '--runtime', 'stub', '--noAssert', '--enable', 'simd']

/** compile the reader into `out` */
export function buildTape(out = TAPE_MODULE) {
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules/assemblyscript/bin/asc.js'), TAPE_SOURCE, ...TAPE_FLAGS, '-o', out],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  buildTape()
  console.log(`wrote ${TAPE_MODULE}`)
}
