/**
 * `serve --rpc URL --data-dir DIR --from-slot SLOT`: the slot a data directory was started at.
 * With an empty directory the follower starts at SLOT (rpc.ts lists and fetches the produced slots
 * from there up to the node's head, then follows it), and SLOT is recorded in `DIR/from-slot`: the
 * datasets' `start_block` stays SLOT on every later start (even when SLOT itself was skipped).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const FILE = 'from-slot'

/**
 * The recorded first slot of `dataDir`, else `fromSlot` when the directory holds no blocks yet
 * (`hasBlocks`: its cold store's), recorded; else undefined (start_block: the first block held).
 */
export function startSlotOf(dataDir: string, fromSlot: number | undefined, hasBlocks: boolean): number | undefined {
  const path = join(dataDir, FILE)
  if (existsSync(path)) {
    const n = Number(readFileSync(path, 'utf8').trim())
    if (Number.isSafeInteger(n) && n >= 0) return n
  }
  const hot = join(dataDir, 'hot')
  const empty = !hasBlocks && (!existsSync(hot) || readdirSync(hot).length === 0)
  if (fromSlot === undefined || !empty) return undefined
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(path, `${fromSlot}\n`)
  return fromSlot
}
