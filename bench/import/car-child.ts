/**
 * One input's import for `npm run bench -- import`'s CAR section, in a process of its own (an
 * import runs one kind of input per process: the normalizer and the chunk builders then see one
 * shape of objects, as a user's import does; in a process that imports a CAR file and archive
 * lines in turn, their shared code sees both, and both run slower).
 *
 * argv: dataset directory, the archive line of the block before, the input, warm-up rounds.
 * Each round (the warm-ups, then the measured one) starts from a fresh dataset holding only the
 * block before, then imports the input with `--workers 1`. Sends the parent
 * `{ cpu, imported }`: the process's CPU (all threads) of the measured import, in seconds. The
 * measured round's dataset is left in place for the parent to read back.
 */
import { rmSync } from 'node:fs'
import { runImport } from '../../src/ingest/import/index.ts'

const [ds, first, input, warm] = process.argv.slice(2)
const cpuNow = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}
let cpu = 0
let imported = 0
for (let round = 0; round <= Number(warm); round++) {
  rmSync(ds, { recursive: true, force: true })
  await runImport(ds, [first], { progress: 'none', workers: 1 })
  const c = cpuNow()
  imported = (await runImport(ds, [input], { progress: 'none', workers: 1 })).imported
  cpu = cpuNow() - c
}
process.send!({ cpu, imported })
