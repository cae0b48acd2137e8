/** DuckDB for the compare bench, in a child process (bench/compare/duck-child.ts says why). */
import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'

type Reply = { id: number; rows: unknown[][]; ms: number } | { id: number; error: string }

export class DuckChild {
  private nextId = 1
  private readonly waiting = new Map<number, (r: Reply) => void>()

  private constructor(private readonly proc: ChildProcess) {
    proc.on('message', (m: Reply) => {
      const done = this.waiting.get(m.id)
      if (!done) return
      this.waiting.delete(m.id)
      done(m)
    })
    proc.on('exit', (code) => {
      for (const done of this.waiting.values()) done({ id: 0, error: `the DuckDB process exited (${code})` })
      this.waiting.clear()
    })
  }

  static async start(): Promise<DuckChild> {
    const proc = fork(join(import.meta.dirname, 'duck-child.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    await new Promise<void>((ready, fail) => {
      proc.once('message', () => ready())
      proc.once('exit', (code) => fail(new Error(`the DuckDB process exited (${code}) before it was ready`)))
    })
    return new DuckChild(proc)
  }

  private ask(sql: string, rows: boolean): Promise<{ rows: unknown[][]; ms: number }> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (r) => ('error' in r ? reject(new Error(r.error)) : resolve(r)))
      this.proc.send({ id, sql, rows })
    })
  }

  /** runs a statement */
  async run(sql: string): Promise<void> {
    await this.ask(sql, false)
  }

  /** the rows of a query (bigints as decimal strings) and the ms DuckDB took */
  rows(sql: string): Promise<{ rows: unknown[][]; ms: number }> {
    return this.ask(sql, true)
  }

  close(): void {
    this.proc.disconnect()
  }
}
