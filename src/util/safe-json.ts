/**
 * A value from untrusted input as it may appear in a message or a log line: JSON (so control
 * characters, quotes and line breaks are escaped and cannot forge or split a line; bigints as
 * digits), cut to 200 characters.
 */
export function safeJson(v: unknown): string {
  try {
    const s = JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))
    return s === undefined ? String(v) : s.length > 200 ? s.slice(0, 200) + '…' : s
  } catch {
    return String(v)
  }
}
