/**
 * A throwaway PostgreSQL cluster for the comparison bench: the Debian package (installed when missing),
 * `initdb` into a directory owned by `postgres`, started on 127.0.0.1 on a free port, driven by `psql`
 * over pipes (COPY FROM STDIN for the load; one long-lived session for the queries, so that its
 * backend's peak RSS can be read after each query), stopped at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'

export const PG_SETTINGS: [string, string, string][] = [
  ['listen_addresses', "'127.0.0.1'", 'loopback only'],
  ['shared_buffers', "'6GB'", '1/4 of the 24 GiB box'],
  ['effective_cache_size', "'16GB'", 'the OS page cache holds the rest'],
  ['work_mem', "'256MB'", 'sorts / hash joins / json_agg groups of one query in memory'],
  ['maintenance_work_mem', "'2GB'", 'index builds'],
  ['max_wal_size', "'16GB'", 'no checkpoints during the load'],
  ['fsync', 'off', 'bench data is throwaway (load speed)'],
  ['synchronous_commit', 'off', 'idem'],
  ['full_page_writes', 'off', 'idem'],
  ['wal_level', 'minimal', 'idem (tables are UNLOGGED anyway)'],
  ['max_wal_senders', '0', 'required by wal_level=minimal'],
  ['max_parallel_workers_per_gather', '2', '2 cores (PostgreSQL may use both; solportal uses one)'],
  ['max_parallel_maintenance_workers', '2', 'parallel index builds'],
  ['cursor_tuple_fraction', '1.0', 'psql FETCH_COUNT uses a cursor: plan for the whole result'],
  ['jit', 'off', 'no LLVM compile time per query (not measured both ways)'],
  ['autovacuum', 'off', 'explicit ANALYZE after the load'],
]

export function pgBinDir(log: (s: string) => void): string {
  const find = () => {
    const base = '/usr/lib/postgresql'
    if (!existsSync(base)) return null
    const v = readdirSync(base)
      .filter((d) => existsSync(join(base, d, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a))[0]
    return v ? join(base, v, 'bin') : null
  }
  let bin = find()
  if (!bin) {
    log('postgres not found: apt-get update && apt-get install -y postgresql\n')
    for (const args of [['update'], ['install', '-y', 'postgresql']]) {
      const r = spawnSync('apt-get', args, {
        stdio: 'inherit',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      })
      if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (${r.status})`)
    }
    bin = find()
    if (!bin) throw new Error('postgresql installed but no /usr/lib/postgresql/*/bin/postgres')
  }
  return bin
}

function uidGid(user: string): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(user + ':'))
  if (!line) throw new Error(`no user ${user}`)
  const p = line.split(':')
  return [Number(p[2]), Number(p[3])]
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

function run(cmd: string, args: string[], what: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr || r.stdout}`)
  return r.stdout
}

export class PgCluster {
  private constructor(
    readonly bin: string,
    readonly dataDir: string,
    readonly port: number,
  ) {}

  /**
   * A new cluster in `root` (what was there is removed); with `reuse`, the cluster an earlier start left
   * there (stopped cleanly: its UNLOGGED tables are kept) is started again with its database.
   */
  static async start(root: string, log: (s: string) => void, opts: { reuse?: boolean } = {}): Promise<PgCluster> {
    const bin = pgBinDir(log)
    const [uid, gid] = uidGid('postgres')
    const dataDir = join(root, 'data')
    const reuse = opts.reuse === true && existsSync(join(dataDir, 'PG_VERSION'))
    if (!reuse) {
      rmSync(root, { recursive: true, force: true })
      mkdirSync(root, { recursive: true })
      chownSync(root, uid, gid)
      run(
        'runuser',
        [
          '-u',
          'postgres',
          '--',
          join(bin, 'initdb'),
          '-D',
          dataDir,
          '--no-locale',
          '-E',
          'UTF8',
          '--auth=trust',
          '-U',
          'postgres',
        ],
        'initdb',
      )
    }
    const port = await freePort()
    const conf =
      PG_SETTINGS.map(([k, v]) => `${k} = ${v}`).join('\n') + `\nport = ${port}\nunix_socket_directories = '${root}'\n`
    writeFileSync(join(dataDir, 'postgresql.auto.conf'), conf)
    chownSync(join(dataDir, 'postgresql.auto.conf'), uid, gid)
    run(
      'runuser',
      [
        '-u',
        'postgres',
        '--',
        join(bin, 'pg_ctl'),
        '-D',
        dataDir,
        '-l',
        join(root, 'server.log'),
        '-w',
        '-t',
        '60',
        'start',
      ],
      'pg_ctl start',
    )
    const pg = new PgCluster(bin, dataDir, port)
    if (!reuse) pg.psql(['-d', 'postgres', '-c', 'CREATE DATABASE bench'])
    return pg
  }

  stop(): void {
    spawnSync(
      'runuser',
      ['-u', 'postgres', '--', join(this.bin, 'pg_ctl'), '-D', this.dataDir, '-m', 'fast', '-w', 'stop'],
      { stdio: 'ignore' },
    )
  }

  version(): string {
    return this.psql(['-At', '-c', 'SHOW server_version']).trim()
  }

  /** psql arguments connecting to the bench database */
  args(extra: string[] = []): string[] {
    return [
      '-X',
      '-q',
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      'postgres',
      '-d',
      'bench',
      '-v',
      'ON_ERROR_STOP=1',
      ...extra,
    ]
  }

  /** run psql to completion; returns stdout (throws on failure) */
  psql(extra: string[]): string {
    const args = this.args()
    const i = extra.indexOf('-d')
    if (i >= 0) {
      args.splice(args.indexOf('-d'), 2)
    }
    return run(join(this.bin, 'psql'), [...args, ...extra], `psql ${extra.join(' ').slice(0, 200)}`)
  }

  /** a `COPY table FROM STDIN` stream */
  copyIn(table: string): { proc: ChildProcess; done: Promise<void> } {
    const proc = spawn(join(this.bin, 'psql'), this.args(['-c', `COPY ${table} FROM STDIN`]), {
      stdio: ['pipe', 'ignore', 'pipe'],
    })
    let err = ''
    proc.stderr!.on('data', (d) => (err += d))
    const done = new Promise<void>((resolve, reject) => {
      proc.on('error', reject)
      proc.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`COPY ${table}: psql exited ${code}: ${err}`)),
      )
    })
    return { proc, done }
  }

  postmasterPid(): number {
    return Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  }

  /** the postmaster and its children */
  pids(): number[] {
    const pm = this.postmasterPid()
    const out = [pm]
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue
      try {
        const st = readFileSync(`/proc/${d}/status`, 'utf8')
        const m = /\nPPid:\s+(\d+)/.exec(st)
        if (m && Number(m[1]) === pm) out.push(Number(d))
      } catch {
        /* gone */
      }
    }
    return out
  }
}

// ------------------------------------------------------------------------------ /proc memory
export function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const m = new RegExp(`\\n${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) : 0
  } catch {
    return 0
  }
}

/** reset the peak RSS (VmHWM) of a process to its current RSS (proc(5): clear_refs "5") */
export function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {
    /* gone or not permitted */
  }
}

/**
 * A long-lived psql session: `query(sql, onChunk)` streams the unaligned, tuples-only output (one JSON
 * line per result row) to `onChunk` and resolves when a marker echoed after the statement arrives.
 */
export class PsqlSession {
  private readonly proc: ChildProcess
  private carry = Buffer.alloc(0)
  private current: {
    marker: Buffer
    onChunk: (b: Buffer) => void
    resolve: () => void
    reject: (e: Error) => void
  } | null = null
  private stderr = ''
  private seq = 0
  backendPid = 0

  constructor(pg: PgCluster, fetchCount = 1000) {
    this.proc = spawn(
      join(pg.bin, 'psql'),
      pg.args(['-A', '-t', '-v', 'ON_ERROR_STOP=0', '-v', `FETCH_COUNT=${fetchCount}`, '-P', 'pager=off']),
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    this.proc.stderr!.on('data', (d) => (this.stderr += d))
    this.proc.stdout!.on('data', (d: Buffer) => this.data(d))
    this.proc.on('close', (code) => this.current?.reject(new Error(`psql session ended (${code}): ${this.stderr}`)))
  }

  private data(d: Buffer): void {
    const cur = this.current
    if (!cur) return
    const buf = this.carry.length ? Buffer.concat([this.carry, d]) : d
    const at = buf.indexOf(cur.marker)
    if (at >= 0) {
      if (at > 0) cur.onChunk(buf.subarray(0, at))
      this.carry = Buffer.alloc(0)
      this.current = null
      if (this.stderr.trim()) {
        const e = this.stderr
        this.stderr = ''
        cur.reject(new Error(e.trim()))
      } else cur.resolve()
      return
    }
    // keep a tail that may hold the start of the marker
    const keep = Math.min(buf.length, cur.marker.length - 1)
    if (buf.length > keep) cur.onChunk(buf.subarray(0, buf.length - keep))
    this.carry = Buffer.from(buf.subarray(buf.length - keep))
  }

  query(sql: string, onChunk: (b: Buffer) => void): Promise<void> {
    if (this.current) throw new Error('one query at a time')
    const marker = `__bench_end_${++this.seq}_${process.pid}__`
    return new Promise<void>((resolve, reject) => {
      this.current = { marker: Buffer.from(marker + '\n'), onChunk, resolve, reject }
      this.proc.stdin!.write(`${sql.trim().replace(/;$/, '')};\n\\echo ${marker}\n`)
    })
  }

  async text(sql: string): Promise<string> {
    const parts: Buffer[] = []
    await this.query(sql, (b) => parts.push(Buffer.from(b)))
    return Buffer.concat(parts).toString('utf8')
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.proc.once('close', () => resolve())
      this.proc.stdin!.end('\\q\n')
    })
  }
}
