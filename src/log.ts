/**
 * Structured logs: one JSON object per line (pino), level from `LOG_LEVEL` (trace, debug, info,
 * warn, error, fatal, silent; default info).
 *
 * Where the lines go: `solportal serve` logs to stdout (a server's own output, what container
 * runtimes and process managers collect); every other use (commands that print data on stdout,
 * such as `normalize` and `gen`, and library code used without a configured logger) logs to
 * stderr, so data output never gets log lines mixed in.
 */
import { pino, type DestinationStream, type Level, type Logger } from 'pino'

export type { Logger } from 'pino'

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])

/** the level named by LOG_LEVEL (case-insensitive), else `fallback` */
export function levelFromEnv(fallback: Level | 'silent' = 'info'): Level | 'silent' {
  const v = process.env.LOG_LEVEL?.trim().toLowerCase()
  if (v && LEVELS.has(v)) return v as Level | 'silent'
  return fallback
}

export interface LoggerOptions {
  /** default: LOG_LEVEL, else info */
  level?: Level | 'silent'
  /** 'stdout', 'stderr' (default) or a stream receiving the JSON lines (tests) */
  destination?: 'stdout' | 'stderr' | DestinationStream
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const d = opts.destination ?? 'stderr'
  const dest = d === 'stdout' ? pino.destination(1) : d === 'stderr' ? pino.destination(2) : d
  return pino(
    {
      level: opts.level ?? levelFromEnv(),
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  )
}

let fallback: Logger | null = null

/** the logger of code used without one (stderr, LOG_LEVEL) */
export function defaultLogger(): Logger {
  return (fallback ??= createLogger())
}

/** `info/warn/error(msg)` functions of a logger (the shape the ingester takes) */
export interface MessageLogger {
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}

export function messageLogger(log: Logger): MessageLogger {
  return {
    info: (m) => log.info(m),
    warn: (m) => log.warn(m),
    error: (m) => log.error(m),
  }
}
