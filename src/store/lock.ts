/**
 * The single-writer lock of a store directory: a file `LOCK` holding "<pid> <random token>".
 *
 * - Taken by creating the file with its content already in place: the id is written to a temp
 *   file which is then hard-linked to `LOCK` (link fails when `LOCK` exists), so nobody ever reads
 *   an empty or half-written lock.
 * - A lock whose process is gone (crash, kill -9) is stale and may be taken over. Removing it is
 *   guarded by a claim file `LOCK~<hash of the stale id>`, also created by link: only the process
 *   that created the claim removes `LOCK`, and only after re-reading that `LOCK` still holds that
 *   same stale id. So two processes that find the same stale lock cannot both remove it (the
 *   second would otherwise delete the first one's fresh lock), and each lock id is taken over at
 *   most once. A claim whose own process died is itself taken over the same way (`~` again).
 * - A process knows which of the ids carrying its own pid are live (a lock of a previous process
 *   that had the same pid is stale).
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { link, rm, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'

export class LockError extends Error {}

/** ids (locks and claims) held by this process */
const LIVE = new Set<string>()
/** resolved directory → id of the lock this process holds there */
const HELD = new Map<string, string>()

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException)?.code
}

function newId(): string {
  return `${process.pid} ${randomBytes(8).toString('hex')}`
}

function pidOf(id: string): number {
  const pid = Number(id.split(' ')[0])
  return Number.isInteger(pid) && pid > 0 ? pid : NaN
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (e) {
    return errno(e) === 'EPERM'
  }
  // a process that has exited but is not reaped yet (a zombie: an orphan whose new parent, such
  // as a container's first process, does not reap it) still takes signal 0; Linux tells its state
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.[0]
    return state !== 'Z' && state !== 'X'
  } catch {
    return true // no /proc (not Linux): signal 0 is the answer
  }
}

/** is the holder of `id` running? (an id of this process: only if this process holds it now) */
function alive(id: string): boolean {
  const pid = pidOf(id)
  if (Number.isNaN(pid)) return false // damaged: nobody can be holding it
  if (pid === process.pid) return LIVE.has(id)
  return processAlive(pid)
}

/** the content of `path`, null when it does not exist */
function readId(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch (e) {
    if (errno(e) === 'ENOENT') return null
    throw e
  }
}

/** create `path` holding `id`, atomically with its content; false when it exists already */
async function createWith(path: string, id: string): Promise<boolean> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`
  await writeFile(tmp, id, { flag: 'wx' })
  try {
    await link(tmp, path)
    return true
  } catch (e) {
    if (errno(e) === 'EEXIST') return false
    throw e
  } finally {
    await rm(tmp, { force: true })
  }
}

const claimOf = (path: string, id: string) => `${path}~${createHash('sha256').update(id).digest('hex').slice(0, 12)}`

/** Remove `path`, which holds the stale `id`, unless it no longer does. Throws when a live process is doing it. */
async function removeStale(path: string, id: string, depth = 0): Promise<void> {
  if (depth > 8) throw new LockError(`${path}: too many abandoned lock takeovers`)
  const claim = claimOf(path, id)
  for (let attempt = 0; attempt < 20; attempt++) {
    const me = newId()
    LIVE.add(me)
    try {
      if (await createWith(claim, me)) {
        try {
          // the claim is ours: nobody else removes `path` while it holds `id`
          if (readId(path) === id) await rm(path)
        } finally {
          await rm(claim, { force: true })
        }
        return
      }
    } finally {
      LIVE.delete(me)
    }
    const holder = readId(claim)
    if (holder === null) continue // released meanwhile
    if (alive(holder)) throw new LockError(`${path}: process ${pidOf(holder)} is taking over the same stale lock`)
    await removeStale(claim, holder, depth + 1)
  }
  throw new LockError(`${path}: cannot take over the stale lock`)
}

/**
 * Take the lock file `path` (for directory `key`); throws LockError naming the holder when a live
 * process has it. Returns the lock's id.
 */
export async function takeLock(path: string, what: string): Promise<string> {
  const key = resolve(path)
  if (HELD.has(key)) throw new LockError(`${what} is already open for writing in this process`)
  for (let attempt = 0; attempt < 20; attempt++) {
    const id = newId()
    LIVE.add(id)
    if (await createWith(path, id)) {
      HELD.set(key, id)
      return id
    }
    LIVE.delete(id)
    const holder = readId(path)
    if (holder === null) continue // released meanwhile
    if (alive(holder)) throw new LockError(`${what} is being written by process ${pidOf(holder)} (${path})`)
    await removeStale(path, holder)
  }
  throw new LockError(`${what}: cannot take the writer lock ${path}`)
}

/** Release the lock this process took on `path` (no-op when it holds none there). */
export async function releaseLock(path: string): Promise<void> {
  const key = resolve(path)
  const id = HELD.get(key)
  if (id === undefined) return
  HELD.delete(key)
  try {
    if (readId(path) === id) await rm(path, { force: true })
  } finally {
    LIVE.delete(id)
  }
}
