/**
 * The node options a worker thread inherits by default are the process's `execArgv`, which also
 * holds the options of an inline entry point (`node --input-type=module -e CODE`): a worker started
 * from a file then fails at once (`--input-type can only be used with string input`). Workers
 * started with `workerExecArgv()` get the process's options without those of the inline entry.
 */
const WITH_VALUE = new Set(['--input-type', '-e', '--eval', '-p', '--print'])

export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (WITH_VALUE.has(a)) {
      i++ // its value is the next argument
      continue
    }
    if (a.startsWith('--input-type=') || a.startsWith('--eval=') || a.startsWith('--print=')) continue
    out.push(a)
  }
  return out
}
