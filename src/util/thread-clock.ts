/**
 * The calling thread's own scheduler times (Linux `/proc/thread-self/schedstat`), for the stage
 * timings of the live tail (bench/tail.bench.ts): how long a thread ran on a core and how long it
 * was runnable but waiting for one. On a loaded machine a decoding step that takes long in wall
 * time either ran long (its own CPU, garbage collection included) or waited for a core; these two
 * figures tell which. Null where the file is not readable (not Linux).
 */
import { readFileSync } from 'node:fs'

export interface ThreadTimes {
  /** ms this thread ran on a core */
  run: number
  /** ms this thread was runnable but waiting for a core */
  wait: number
}

let readable = true

export function threadTimes(): ThreadTimes | null {
  if (!readable) return null
  try {
    const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')
    return { run: Number(run) / 1e6, wait: Number(wait) / 1e6 }
  } catch {
    readable = false
    return null
  }
}
