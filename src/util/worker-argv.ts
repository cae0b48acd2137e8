import type { ResourceLimits } from 'node:worker_threads'

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

/** The young generation of the threads that parse and normalize blocks, MB (`parseWorkerLimits`). */
export const PARSE_YOUNG_GENERATION_MB = 96

/**
 * Resource limits of the threads that parse and normalize blocks (the import workers, the block
 * decoding workers of the live ingester): `limits` with a young generation of 96 MB unless set.
 *
 * Parsing a block one transaction at a time makes short-lived garbage fast while the records being
 * built survive until the block is done; with V8's default young generation (16 MB semi-spaces) a
 * scavenge runs every ~14 MB allocated and copies the records made so far, ~25 % of the thread's
 * CPU on a 600-transaction mainnet block. With 32 MB semi-spaces (a 96 MB young generation) the
 * parse + normalize of that block measured 49 -> 37 ms CPU (in a worker thread, same run); the
 * cost is up to 64 MB more memory per thread.
 */
export function parseWorkerLimits(limits?: ResourceLimits): ResourceLimits {
  return { maxYoungGenerationSizeMb: PARSE_YOUNG_GENERATION_MB, ...limits }
}
