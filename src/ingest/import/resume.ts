/**
 * What `solportal import` does with an archive block at or below the dataset's last block: the
 * dataset's chunks are append-only, so such a block can only be one the dataset already holds.
 *
 * - present with the same hash: skipped (a re-run resuming an interrupted import), counted;
 * - present with another hash: an error (the archive and the dataset disagree);
 * - absent (below the dataset's first block, or in its range but not held): the import is refused
 *   with one line naming the dataset's range and the archive's blocks concerned, before anything
 *   is written (input ascends, so these blocks come before any block that would be appended).
 *
 * `Admission` applies these rules, and the ascending order across all the input, to each block.
 */
import { joinPieces, lineStart, toArchiveLine } from '../archive.ts'
import { parseJsonExact } from '../../rpc/json.ts'
import type { DiskColdStore } from '../../store/cold/disk-store.ts'
import { errorMessage } from '../../util/errors.ts'
import { lowerBound } from '../../util/search.ts'
import { ImportError } from './types.ts'

/** `"hash"` right after `"slot"` (what `formatArchiveLine` and the recorders write) */
const SLOT_HASH_PREFIX = /^\s*\{\s*"slot"\s*:\s*\d{1,15}\s*,\s*"hash"\s*:\s*"([^"\\]*)"/

/**
 * The block hash of an archive line: read from its head (`lineHead`), else by parsing the line
 * (its bytes in pieces).
 */
export function archiveLineHash(head: string, pieces: readonly Buffer[]): string {
  const m = SLOT_HASH_PREFIX.exec(head)
  return m ? m[1] : toArchiveLine(parseJsonExact(joinPieces(pieces).toString('utf8'))).hash! // toArchiveLine fills it in
}

/**
 * The first bytes of an archive line as text (Latin-1: one character per byte), where its slot and
 * hash are read from without decoding the line: what they match there is ASCII, so the same as in
 * the UTF-8 text; a line they do not match within these bytes is parsed whole.
 */
export function lineHead(pieces: readonly Buffer[]): string {
  return lineStart(pieces, LINE_HEAD_BYTES).toString('latin1')
}

const LINE_HEAD_BYTES = 256

/** Looks up the hash of a held block, reading one chunk's header columns at a time. */
export class PresentBlocks {
  private cur: { first: number; last: number; numbers: ArrayLike<number>; hashes: ArrayLike<string> } | null = null

  constructor(private readonly store: DiskColdStore) {}

  /** the hash of the block at `slot`, or null when the dataset does not hold one */
  async hashAt(slot: number): Promise<string | null> {
    if (!this.cur || slot < this.cur.first || slot > this.cur.last) {
      this.cur = null
      // the first chunk whose last block is >= slot, whole
      for await (const c of this.store.chunks(slot, Number.MAX_SAFE_INTEGER)) {
        this.cur = { first: c.firstBlock, last: c.lastBlock, numbers: c.header('number'), hashes: c.header('hash') }
        break
      }
      if (!this.cur || slot < this.cur.first) return null
    }
    const { numbers, hashes } = this.cur
    const i = lowerBound(numbers, slot)
    return i < numbers.length && numbers[i] === slot ? hashes[i] : null
  }
}

/** Archive blocks at or below the dataset's last block that the dataset does not hold. */
export class MissingBlocks {
  first = -1
  last = -1
  count = 0
  where = ''

  add(slot: number, where: string): void {
    if (this.count++ === 0) {
      this.first = slot
      this.where = where
    }
    this.last = slot
  }

  /** the refusal, naming the dataset's range [first, last] and the archive's blocks concerned */
  message(first: number, last: number): string {
    const range = this.first === this.last ? `block ${this.first}` : `blocks ${this.first}..${this.last}`
    const place = this.last < first ? 'below it' : this.first < first ? 'below it and inside it' : 'inside its range'
    const n = this.count === 1 ? '1 block' : `${this.count} blocks`
    return (
      `${this.where}: the dataset holds blocks ${first}..${last}; the archive's ${range} (${n} not in the dataset) are ${place}: ` +
      `blocks can only be appended above ${last} (import older blocks into a new dataset directory, in ascending order)`
    )
  }
}

/**
 * The ordering and resume checks of the blocks of an import, in input order: each is to be sent,
 * skipped (held already with the same hash, or refused once the input's blocks concerned are
 * known: `missing`), or the import stops (blocks missing before it).
 */
export class Admission {
  private prev = -1
  private prevWhere = ''
  private readonly present: PresentBlocks
  readonly missing = new MissingBlocks()

  constructor(
    store: DiskColdStore,
    /** the dataset's last block (-1: none) */
    private readonly resumeAfter: number,
    /** a block skipped as held already with the same hash */
    private readonly onSkipped: () => void,
  ) {
    this.present = new PresentBlocks(store)
  }

  async admit(slot: number, where: string, hashOf: () => string): Promise<'send' | 'skip' | 'stop'> {
    if (slot <= this.prev) {
      throw new ImportError(
        `${where}: block ${slot} comes after block ${this.prev} (${this.prevWhere}): archives must ascend inside each file and must not overlap`,
      )
    }
    this.prev = slot
    this.prevWhere = where
    if (slot <= this.resumeAfter) {
      const have = await this.present.hashAt(slot)
      if (have === null) this.missing.add(slot, where)
      if (this.missing.count) return 'skip' // refused below, once the archive's blocks concerned are known
      let hash: string
      try {
        hash = hashOf()
      } catch (e) {
        throw new ImportError(`${where}: ${errorMessage(e)}`)
      }
      if (hash !== have) {
        throw new ImportError(
          `${where}: block ${slot} has hash ${hash}, but the dataset holds block ${slot} with hash ${have}`,
        )
      }
      this.onSkipped()
      return 'skip'
    }
    return this.missing.count ? 'stop' : 'send'
  }
}
