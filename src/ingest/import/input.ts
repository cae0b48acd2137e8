/**
 * The files of `solportal import DIR ARCHIVE...` as the import's input (types.ts `ImportInput`):
 * archive files (JSON lines, gzip or not) and Old Faithful CAR files (local, or `http(s)://` URLs
 * read with Range requests and resumed; recognized by their first bytes), read one after the other
 * as lines and CAR blocks, and the order they are taken in.
 */
import { open, stat } from 'node:fs/promises'
import { listArchiveFiles, orderArchiveFiles, readLinePieces } from '../archive.ts'
import { errorMessage } from '../../util/errors.ts'
import { CarError, Chain, carBlocks } from '../car/blocks.ts'
import { isCarInput, isUrl, sourceSize } from '../car/source.ts'
import { ImportError, type ImportInput, type InputItem } from './types.ts'

/** archive files and Old Faithful CAR files (or URLs), read in the order given */
export class FilesInput implements ImportInput {
  private read = 0
  /** parent hashes across CAR files (set once the dataset's last block is known) */
  chain: Chain | null = null
  constructor(
    private readonly files: string[],
    private readonly bytes: number,
    private readonly car: { verify?: boolean; onResume?: (offset: number, reason: string) => void },
  ) {}
  async *lines(): AsyncIterable<InputItem> {
    const isCar = await Promise.all(this.files.map((f) => isCarInput(f)))
    for (const [fi, file] of this.files.entries()) {
      if (isCar[fi]) {
        const base = this.read
        try {
          for await (const b of carBlocks(file, this.chain ?? new Chain(null), this.car)) {
            this.read = base + b.read
            yield {
              pieces: [],
              where: `${file} (block ${b.slot} at byte ${b.offset})`,
              car: { slot: b.slot, hash: b.hash, bundle: b.bundle },
            }
          }
        } catch (e) {
          throw e instanceof CarError ? new ImportError(`${file}: ${e.message}`) : e
        }
        continue
      }
      const carNext = isCar.indexOf(true, fi + 1) > fi
      let lineNo = 0
      for await (const pieces of readLinePieces(file)) {
        lineNo++
        for (const p of pieces) this.read += p.length
        this.read++
        yield { pieces, where: `${file}:${lineNo}`, carNext }
      }
    }
  }
  done(): number {
    return this.read
  }
  total(): number {
    return this.bytes
  }
}

/** Uncompressed size of an input file: its size, or a gzip file's ISIZE trailer (mod 2^32). */
async function inputSize(path: string): Promise<number> {
  const st = await stat(path)
  const fh = await open(path, 'r')
  try {
    const head = Buffer.alloc(2)
    await fh.read(head, 0, 2, 0)
    if (head[0] !== 0x1f || head[1] !== 0x8b || st.size < 18) return st.size
    const tail = Buffer.alloc(4)
    await fh.read(tail, 0, 4, st.size - 4)
    const isize = tail.readUInt32LE(0)
    // ISIZE is mod 2^32 and only covers the last member: fall back to a typical JSON ratio
    return isize >= st.size ? isize : st.size * 8
  } finally {
    await fh.close()
  }
}

/**
 * The input of the files and directories `archives` (a directory: its archive files and Old
 * Faithful CAR files, recursively, sorted by path). With a CAR file or URL among them, in
 * command-line order (its first block is not on a first line); else the archive files in the order
 * of their first blocks (read from each file's first line), as serve --archive does: files given
 * newest first are not read whole before the order is refused.
 */
export async function openFilesInput(
  archives: readonly string[],
  car: { verify?: boolean; onResume?: (offset: number, reason: string) => void },
): Promise<FilesInput> {
  let files: string[]
  try {
    const listed: string[] = []
    for (const a of archives) listed.push(...(isUrl(a) ? [a] : await listArchiveFiles(a, isCarInput)))
    let carOrUrl = false
    for (const f of listed) if (isUrl(f) || (await isCarInput(f))) carOrUrl = true
    files = carOrUrl ? listed : (await orderArchiveFiles(listed)).map((f) => f.file)
  } catch (e) {
    throw new ImportError(errorMessage(e))
  }
  if (files.length === 0)
    throw new ImportError('no archive blocks found (.jsonl / .jsonl.gz files, Old Faithful CAR files)')
  let totalBytes = 0
  for (const f of files) totalBytes += isUrl(f) ? ((await sourceSize(f)) ?? 0) : await inputSize(f)
  return new FilesInput(files, totalBytes, car)
}
