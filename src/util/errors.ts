/** What a caught value says: an Error's message, anything else as a string. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e)
}

/** An Error's stack (its message when it has none), anything else as a string: for logs. */
export function errorDetail(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e)
}
