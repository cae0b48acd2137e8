// Runs the test files named on the command line with node's test runner, two at a time, in the
// order given (`node --test FILE...` sorts its files by name), printing the spec reporter's output;
// exits 1 when a test failed (a failing `todo` test does not count, as with `node --test`).
// Started by scripts/run-tests.mjs as `node --import tsx scripts/test-files.mjs FILE...`: each
// test file's process gets the same `--import tsx`.
import { run } from 'node:test'
import { spec } from 'node:test/reporters'

let failed = 0
const stream = run({ files: process.argv.slice(2), concurrency: 2 })
stream.on('test:fail', (t) => {
  if (!t.todo && !t.skip) failed++
})
stream.on('end', () => {
  process.exitCode = failed > 0 ? 1 : 0
})
stream.compose(spec).pipe(process.stdout)
