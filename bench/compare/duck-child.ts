/**
 * DuckDB in a process of its own, for the compare bench (bench/compare/duck.ts drives it over IPC).
 *
 * Why not in the bench's process: that process is also the HTTP client that times solportal, and a
 * loaded DuckDB library slows it. Measured on the 2-core box with a fresh server answering the
 * one-account query (10.7 MB) 75 times: best 6.6 and median ~7 ms from a plain client process,
 * best 7.5-8.4 and median 13-15 ms from the same client with a DuckDB instance created in it (even
 * one that ran no query). PostgreSQL's client, psql, is a process of its own anyway.
 *
 * In: `{ id, sql, rows }`; out: `{ id, rows, ms }` (rows as arrays of JSON values, bigints as
 * decimal strings; `ms` the time DuckDB took) or `{ id, error }`.
 */
import { DuckDBInstance } from '@duckdb/node-api'

const duck = await DuckDBInstance.create(':memory:')
const con = await duck.connect()
await con.run('SET threads = 1')

const json = (v: unknown): unknown =>
  typeof v === 'bigint' ? v.toString() : Array.isArray(v) ? v.map(json) : v === undefined ? null : v

process.on('message', (m: { id: number; sql: string; rows: boolean }) => {
  void (async () => {
    try {
      const t0 = performance.now()
      const rows = m.rows ? (await con.runAndReadAll(m.sql)).getRows().map((r) => r.map((v) => json(v))) : []
      if (!m.rows) await con.run(m.sql)
      process.send!({ id: m.id, rows, ms: performance.now() - t0 })
    } catch (e) {
      process.send!({ id: m.id, error: e instanceof Error ? e.message : String(e) })
    }
  })()
})
process.on('disconnect', () => process.exit(0))
process.send!({ ready: true })
