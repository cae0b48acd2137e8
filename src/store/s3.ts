/**
 * Datasets on S3-compatible object storage.
 *
 * Objects under `s3://BUCKET/PREFIX/` (every name but the pointer is immutable):
 *
 *     cold/chunks/<file>.spc         the chunk files, as in a dataset directory
 *     cold/catalogue/seg-<n>.bin     the catalogue's sealed segments
 *     cold/logs/<sha256>.bin         a copy of the catalogue log as it was at one publication
 *     POINTER.json                   {format, version, dataset, catalogue, log:{file,key,bytes,sha256}}
 *
 * The writer (`solportal import s3://...`) imports into a local staging directory with the usual
 * import, then publishes: the chunks, segments and log copy not in the bucket yet, then the pointer
 * last. A reader that sees a pointer therefore finds every object it names. One writer at a time
 * (deployment's duty: S3-compatible servers do not all honour conditional PUTs).
 *
 * A replica (`serve --dataset-dir s3://...`) mirrors the catalogue into a local cache directory
 * laid out like a dataset directory (segments, the log under its own name, CATALOGUE.json written
 * last), opens it with the ordinary read-only DiskColdStore, and fetches each chunk object whole on
 * its first use (temp file, sha256 checked, rename) into a disk cache bounded in bytes (least
 * recently used files evicted; files in use by a running query are kept). It reads the pointer
 * again every `pollMs`.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import type { ChunkEntry } from './cold/chunk-index/chunk-index.ts'
import { coldDir, openDatasetDir, readDatasetMeta, type DatasetDirStore, type DatasetMeta } from './dataset-dir.ts'
import { writeFileAtomic } from './durable.ts'
import { errorMessage } from '../util/errors.ts'
import { parseS3Url, plainName, s3ClientFromEnv, type S3Location } from './s3-client.ts'
import {
  DamagedObject,
  errText,
  isMissing,
  withRetry,
  type Attempt,
  type RetryOptions,
  type S3Log,
} from './s3-retry.ts'

export { isS3Url, parseS3Url, plainName, s3ClientFromEnv, type S3Location } from './s3-client.ts'
export { DEFAULT_S3_TIMEOUT_MS, type RetryOptions, type S3Log } from './s3-retry.ts'

const POINTER = 'POINTER.json'
const POINTER_FORMAT = 'solportal-s3-dataset'

interface PointerObject {
  format: typeof POINTER_FORMAT
  version: 1
  dataset: DatasetMeta
  /** the catalogue pointer (CATALOGUE.json) as written by the staging directory's store */
  catalogue: { body: { log: string; segments: { file: string; sha256: string }[] } }
  log: { file: string; key: string; bytes: number; sha256: string }
}

const SHA256 = /^[0-9a-f]{64}$/

/**
 * The names a pointer gives the replica and the import to write, delete and fetch: plain file names
 * (the log's key is `cold/logs/<plain name>`), every sha256 64 hex digits; throws naming the field.
 */
function checkPointer(ptr: PointerObject, where: string): void {
  const obj = (v: unknown, field: string) => {
    if (typeof v !== 'object' || v === null) throw new Error(`${where}: ${field} is missing or not an object`)
  }
  const hex = (v: unknown, field: string) => {
    if (typeof v !== 'string' || !SHA256.test(v)) throw new Error(`${where}: ${field} is not a sha256 (64 hex digits)`)
  }
  obj(ptr.dataset, 'dataset')
  obj(ptr.log, 'log')
  plainName(ptr.log.file, where, 'log.file')
  const key = typeof ptr.log.key === 'string' && ptr.log.key.startsWith('cold/logs/') ? ptr.log.key.slice(10) : null
  plainName(key ?? ptr.log.key, where, 'log.key (cold/logs/<name>)')
  hex(ptr.log.sha256, 'log.sha256')
  if (!Number.isSafeInteger(ptr.log.bytes) || ptr.log.bytes < 0)
    throw new Error(`${where}: log.bytes is not a byte count`)
  obj(ptr.catalogue, 'catalogue')
  obj(ptr.catalogue.body, 'catalogue.body')
  plainName(ptr.catalogue.body.log, where, 'catalogue.body.log')
  if (!Array.isArray(ptr.catalogue.body.segments)) throw new Error(`${where}: catalogue.body.segments is not a list`)
  ptr.catalogue.body.segments.forEach((seg, i) => {
    obj(seg, `catalogue.body.segments[${i}]`)
    plainName(seg.file, where, `catalogue.body.segments[${i}].file`)
    hex(seg.sha256, `catalogue.body.segments[${i}].sha256`)
  })
}

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex')
}

/** S3 access to one dataset's objects: every request timed out when it stalls, retried, logged */
export class S3Dataset {
  /** why the last attempt to reach the store failed; null once one succeeded again */
  private failing: string | null = null

  constructor(
    readonly client: S3Client,
    readonly loc: S3Location,
    readonly retry: RetryOptions = {},
  ) {}

  key(rel: string): string {
    return this.loc.prefix ? `${this.loc.prefix}/${rel}` : rel
  }

  /** the s3:// address of `rel` */
  where(rel: string): string {
    return `s3://${this.loc.bucket}/${this.key(rel)}`
  }

  /** null while the store answers; else why its last request failed (a stall, a refused connection, a 5xx) */
  unreachable(): string | null {
    return this.failing
  }

  private run<T>(what: string, op: (a: Attempt) => Promise<T>, extraMs = 0): Promise<T> {
    return withRetry(what, op, { ...this.retry, extraMs }, (reached, why) => {
      this.failing = reached ? null : (why ?? 'unreachable')
    })
  }

  /** one GET attempt: the bytes, each chunk of the body counted as progress */
  private async getOnce(rel: string, a: Attempt): Promise<Buffer> {
    const r = await this.client.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: this.key(rel) }), {
      abortSignal: a.signal,
    })
    a.progress()
    const body = r.Body as Readable
    const stop = () => body.destroy(new Error('aborted'))
    a.signal.addEventListener('abort', stop, { once: true })
    try {
      const chunks: Buffer[] = []
      for await (const c of body) {
        chunks.push(c as Buffer)
        a.progress()
      }
      return Buffer.concat(chunks)
    } finally {
      a.signal.removeEventListener('abort', stop)
    }
  }

  /** the object's bytes, or null when there is no such key */
  async get(rel: string): Promise<Buffer | null> {
    try {
      return await this.run(`GET ${this.where(rel)}`, (a) => this.getOnce(rel, a))
    } catch (e) {
      if (isMissing(e)) return null
      throw new Error(`s3: GET ${this.where(rel)}: ${errText(e)}`)
    }
  }

  async put(rel: string, body: Uint8Array): Promise<void> {
    try {
      await this.run(
        `PUT ${this.where(rel)}`,
        (a) =>
          this.client.send(new PutObjectCommand({ Bucket: this.loc.bucket, Key: this.key(rel), Body: body }), {
            abortSignal: a.signal,
          }),
        Math.ceil(body.byteLength / 1e6) * 1000,
      )
    } catch (e) {
      throw new Error(`s3: PUT ${this.where(rel)}: ${errText(e)}`)
    }
  }

  /** names (relative to the prefix) of the objects under `rel` */
  async list(rel: string): Promise<Set<string>> {
    const out = new Set<string>()
    let token: string | undefined
    const base = this.key(rel)
    do {
      const r = await this.run(`LIST ${this.where(rel)}`, (a) =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.loc.bucket, Prefix: base, ContinuationToken: token }),
          { abortSignal: a.signal },
        ),
      ).catch((e: unknown) => {
        throw new Error(`s3: LIST ${this.where(rel)}: ${errText(e)}`)
      })
      for (const o of r.Contents ?? []) if (o.Key) out.add(o.Key.slice(base.length))
      token = r.IsTruncated ? r.NextContinuationToken : undefined
    } while (token)
    return out
  }

  async pointer(): Promise<{ text: string; ptr: PointerObject } | null> {
    const b = await this.get(POINTER)
    if (!b) return null
    const text = b.toString('utf8')
    const where = this.where(POINTER)
    let ptr: PointerObject
    try {
      ptr = JSON.parse(text) as PointerObject
    } catch (e) {
      throw new Error(`${where}: not valid JSON (${b.length} bytes, shortened?): ${errorMessage(e)}`)
    }
    if (ptr?.format !== POINTER_FORMAT || ptr.version !== 1)
      throw new Error(`${where}: not a solportal dataset pointer`)
    checkPointer(ptr, where)
    return { text, ptr }
  }

  /**
   * fetch `rel` into `path` (temp file + rename) after checking its size and sha256; an object that
   * fails the check is fetched again (a download damaged on the way), as often as a failed request
   */
  async download(rel: string, path: string, want: { sha256: string; bytes?: number }): Promise<number> {
    const where = this.where(rel)
    let b: Buffer
    try {
      b = await this.run(`GET ${where}`, async (a) => {
        const got = await this.getOnce(rel, a)
        if ((want.bytes !== undefined && got.length !== want.bytes) || sha256(got) !== want.sha256)
          throw new DamagedObject(
            `damaged: ${got.length} bytes${want.bytes !== undefined ? ` (want ${want.bytes})` : ''} or sha256 differs from the catalogue's`,
          )
        return got
      })
    } catch (e) {
      if (isMissing(e)) throw new Error(`s3: ${where}: missing (named by the pointer)`)
      throw new Error(`s3: GET ${where}: ${errText(e)}`)
    }
    await writeFileAtomic(path, b, false)
    return b.length
  }
}

/**
 * Publish a staging dataset directory: the objects the bucket lacks (chunks, segments, the log's
 * current bytes under their sha256), then the pointer. Returns how many objects were uploaded.
 */
export async function publishDataset(dir: string, ds: S3Dataset): Promise<{ uploaded: number; bytes: number }> {
  const meta = readDatasetMeta(dir)
  if (!meta) throw new Error(`${dir}: not a dataset directory`)
  const cold = coldDir(dir)
  const catText = readFileSync(join(cold, 'CATALOGUE.json'), 'utf8')
  const cat = JSON.parse(catText) as PointerObject['catalogue']
  const logBytes = readFileSync(join(cold, 'catalogue', cat.body.log))
  const logSha = sha256(logBytes)
  const have = await ds.list('cold/')
  let uploaded = 0
  let bytes = 0
  const upload = async (rel: string, body: Uint8Array) => {
    await ds.put(rel, body)
    uploaded++
    bytes += body.byteLength
  }
  for (const f of readdirSync(join(cold, 'chunks')).sort())
    if (!have.has(`chunks/${f}`)) await upload(`cold/chunks/${f}`, readFileSync(join(cold, 'chunks', f)))
  for (const s of cat.body.segments)
    if (!have.has(`catalogue/${s.file}`))
      await upload(`cold/catalogue/${s.file}`, readFileSync(join(cold, 'catalogue', s.file)))
  const logKey = `cold/logs/${logSha}.bin`
  if (!have.has(`logs/${logSha}.bin`)) await upload(logKey, logBytes)
  const ptr: PointerObject = {
    format: POINTER_FORMAT,
    version: 1,
    dataset: meta,
    catalogue: cat,
    log: { file: cat.body.log, key: logKey, bytes: logBytes.length, sha256: logSha },
  }
  await upload(POINTER, Buffer.from(JSON.stringify(ptr) + '\n'))
  return { uploaded, bytes }
}

/**
 * Make `dir` hold the catalogue the pointer names (segments and log first, CATALOGUE.json last, each
 * replaced atomically, so a reader of `dir` sees the old or the new state).
 */
async function syncCatalogue(
  ds: S3Dataset,
  dir: string,
  p: { text: string; ptr: PointerObject },
  previous: PointerObject | null,
): Promise<void> {
  const { ptr } = p
  const cold = coldDir(dir)
  const catDir = join(cold, 'catalogue')
  mkdirSync(catDir, { recursive: true })
  mkdirSync(join(cold, 'chunks'), { recursive: true })
  for (const s of ptr.catalogue.body.segments)
    if (!existsSync(join(catDir, s.file)))
      await ds.download(`cold/catalogue/${s.file}`, join(catDir, s.file), { sha256: s.sha256 })
  if (previous?.log.sha256 !== ptr.log.sha256 || !existsSync(join(catDir, ptr.log.file)))
    await ds.download(ptr.log.key, join(catDir, ptr.log.file), ptr.log)
  if (!previous || JSON.stringify(previous.dataset) !== JSON.stringify(ptr.dataset))
    await writeFileAtomic(join(dir, 'dataset.json'), JSON.stringify(ptr.dataset, null, 2) + '\n', false)
  const catText = JSON.stringify(ptr.catalogue)
  const catPath = join(cold, 'CATALOGUE.json')
  if (!existsSync(catPath) || readFileSync(catPath, 'utf8') !== catText) await writeFileAtomic(catPath, catText, false)
  // a log the pointer no longer names (the catalogue was rewritten)
  if (previous && previous.log.file !== ptr.log.file) rmSync(join(catDir, previous.log.file), { force: true })
}

/**
 * Before importing into a staging directory: when it holds no dataset but the bucket does, fetch
 * the bucket's dataset into it (catalogue and every listed chunk), so the import continues it.
 */
export async function pullDataset(ds: S3Dataset, dir: string): Promise<boolean> {
  if (existsSync(join(coldDir(dir), 'CATALOGUE.json'))) return false
  const p = await ds.pointer()
  if (!p) return false
  await syncCatalogue(ds, dir, p, null)
  const store = await openDatasetDir(dir, { verify: 'none' })
  try {
    for (const e of store.cold.entries) {
      const file = chunkName(ds, e)
      await ds.download(`cold/chunks/${file}`, join(coldDir(dir), 'chunks', file), e)
    }
  } finally {
    await store.close()
  }
  return true
}

/** a chunk's file name as the bucket's catalogue gives it, when it is a plain name */
function chunkName(ds: S3Dataset, e: ChunkEntry): string {
  return plainName(e.file, ds.where('cold/catalogue'), `the chunk of blocks ${e.firstBlock}-${e.lastBlock}: file`)
}

/** The local disk cache of chunk files: bounded in bytes, least recently used evicted first. */
class ChunkCache {
  private files = new Map<string, { bytes: number; pins: number }>()
  private loading = new Map<string, Promise<void>>()
  private total = 0
  /** closes the store's descriptor of a chunk file (set once the store reading these files is open) */
  closeFile: (path: string) => void = () => {}

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly ds: S3Dataset,
  ) {
    mkdirSync(dir, { recursive: true })
    for (const f of readdirSync(dir)) {
      if (!f.endsWith('.spc')) {
        rmSync(join(dir, f), { force: true }) // temp files of an earlier run
        continue
      }
      const bytes = statSync(join(dir, f)).size
      this.files.set(f, { bytes, pins: 0 })
      this.total += bytes
    }
  }

  get bytes(): number {
    return this.total
  }

  async acquire(e: ChunkEntry): Promise<() => void> {
    chunkName(this.ds, e)
    for (;;) {
      const f = this.files.get(e.file)
      if (f) {
        this.files.delete(e.file) // most recently used last
        this.files.set(e.file, f)
        f.pins++
        let done = false
        return () => {
          if (done) return
          done = true
          f.pins--
          this.evict()
        }
      }
      let p = this.loading.get(e.file)
      if (!p) {
        p = this.ds
          .download(`cold/chunks/${e.file}`, join(this.dir, e.file), e)
          .then((bytes) => {
            // evicted (if over budget) when its readers are done, never before they pinned it
            this.files.set(e.file, { bytes, pins: 0 })
            this.total += bytes
          })
          .finally(() => this.loading.delete(e.file))
        this.loading.set(e.file, p)
      }
      await p
    }
  }

  private evict(): void {
    if (this.total <= this.maxBytes) return
    for (const [file, f] of this.files) {
      if (this.total <= this.maxBytes) break
      if (f.pins) continue
      const path = join(this.dir, file)
      this.closeFile(path)
      rmSync(path, { force: true })
      this.files.delete(file)
      this.total -= f.bytes
    }
  }
}

export interface S3ReplicaOptions {
  /** local cache directory (default a new temporary directory) */
  cacheDir?: string
  /** disk budget of the chunk files kept (default 10 GiB) */
  cacheDiskBytes?: number
  /** how often the pointer is read again (default 5 s) */
  pollMs?: number
  /** the store's in-memory cache (serve --cache-mb) */
  cacheBytes?: number
  client?: S3Client
  log?: S3Log
  retry?: RetryOptions
}

export interface S3Replica {
  store: DatasetDirStore
  cacheDir: string
  /** null while the object store answers, else why it does not (see S3Dataset.unreachable) */
  unreachable(): string | null
  /** read the pointer now (the poll calls this); true when it changed */
  poll(): Promise<boolean>
  close(): Promise<void>
}

/** A read replica of `s3://BUCKET/PREFIX` (see the top of this file). */
export async function openS3Replica(url: string, o: S3ReplicaOptions = {}): Promise<S3Replica> {
  const log: S3Log =
    o.log ??
    ((m, level) => {
      if (level !== 'debug') process.stderr.write(m + '\n')
    })
  const loc = parseS3Url(url)
  const ds = new S3Dataset(o.client ?? s3ClientFromEnv(), loc, { log, ...o.retry })
  const dir = o.cacheDir ?? (await mkdtemp(join(tmpdir(), 'solportal-s3-cache-')))
  const first = await ds.pointer()
  if (!first) throw new Error(`${url}: no dataset here (no ${POINTER})`)
  // the catalogue files are rewritten from the bucket; chunk files already cached are kept
  rmSync(join(coldDir(dir), 'catalogue'), { recursive: true, force: true })
  rmSync(join(coldDir(dir), 'CATALOGUE.json'), { force: true })
  await syncCatalogue(ds, dir, first, null)
  let current = first.ptr
  let currentText = first.text
  const cache = new ChunkCache(join(coldDir(dir), 'chunks'), o.cacheDiskBytes ?? 10 * 1024 ** 3, ds)
  const store = await openDatasetDir(dir, {
    cacheBytes: o.cacheBytes,
    verify: 'none',
    acquireChunk: (e) => cache.acquire(e),
  })
  cache.closeFile = (path) => store.cold.io.close(path)
  let closed = false
  let running: Promise<boolean> | null = null
  const poll = (): Promise<boolean> => {
    running ??= (async () => {
      const p = await ds.pointer()
      if (!p || p.text === currentText || closed) return false
      await syncCatalogue(ds, dir, p, current)
      current = p.ptr
      currentText = p.text
      return true
    })().finally(() => (running = null))
    return running
  }
  const pollMs = o.pollMs ?? 5000
  let timer: NodeJS.Timeout | null = null
  const schedule = () => {
    if (closed) return
    timer = setTimeout(() => {
      poll()
        .catch((e) => log(`s3: polling ${url} failed: ${errorMessage(e)}`))
        .finally(schedule)
    }, pollMs)
    timer.unref()
  }
  schedule()
  return {
    store,
    cacheDir: dir,
    unreachable: () => ds.unreachable(),
    poll,
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => {})
      await store.close()
    },
  }
}

/** a staging directory name for `url` when none is given */
export function defaultStagingDir(url: string): string {
  const { bucket, prefix } = parseS3Url(url)
  return join(tmpdir(), 'solportal-s3-staging', bucket, prefix || '_root')
}
