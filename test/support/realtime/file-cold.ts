/**
 * A small durable ColdStore for crash tests: blocks appended to one file as length-prefixed
 * v8-serialized records (bigints exact), fsync'ed before append() resolves. A torn tail (a crash
 * in the middle of an append) is cut off on open.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs'
import v8 from 'node:v8'
import type { Block } from '../../../src/model.ts'
import type { Chunk, HeadInfo } from '../../../src/store/chunk.ts'
import { MemoryColdStore } from '../../../src/store/cold-memory.ts'
import type { ColdStore } from '../../../src/store/types.ts'

export class FileColdStore implements ColdStore {
  private readonly mem: MemoryColdStore
  private fd: number

  constructor(readonly path: string) {
    const blocks: Block[] = []
    let good = 0
    if (existsSync(path)) {
      const buf = readFileSync(path)
      let off = 0
      while (off + 4 <= buf.length) {
        const len = buf.readUInt32LE(off)
        if (off + 4 + len > buf.length) break
        blocks.push(v8.deserialize(buf.subarray(off + 4, off + 4 + len)) as Block)
        off += 4 + len
      }
      good = off
    }
    this.fd = openSync(path, existsSync(path) ? 'r+' : 'w+')
    ftruncateSync(this.fd, good)
    this.mem = new MemoryColdStore(blocks, 16)
    this.size = good
  }

  private size: number

  /** blocks stored (ascending) */
  all(): readonly Block[] {
    return this.mem.all()
  }

  firstBlock(): number | null {
    return this.mem.firstBlock()
  }

  lastBlock(): HeadInfo | null {
    return this.mem.lastBlock()
  }

  async append(blocks: Block[]): Promise<void> {
    if (!blocks.length) return
    const last = this.mem.lastBlock()
    if (last && blocks[0].header.number <= last.number)
      throw new Error(`append ${blocks[0].header.number} not above ${last.number}`)
    const parts: Buffer[] = []
    for (const b of blocks) {
      const body = v8.serialize(b)
      const len = Buffer.alloc(4)
      len.writeUInt32LE(body.length)
      parts.push(len, body)
    }
    const all = Buffer.concat(parts)
    writeSync(this.fd, all, 0, all.length, this.size)
    fsyncSync(this.fd)
    this.size += all.length
    await this.mem.append(blocks)
  }

  chunks(from: number, to: number): AsyncIterable<Chunk> {
    return this.mem.chunks(from, to)
  }

  chainBefore(n: number, limit: number): Promise<HeadInfo[]> {
    return this.mem.chainBefore(n, limit)
  }

  async close(): Promise<void> {
    closeSync(this.fd)
  }
}
