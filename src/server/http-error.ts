/** An HTTP error answer: status, plain-text message and extra headers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const badRequest = (reason: string) => new HttpError(400, `Bad request: ${reason}`)

/**
 * The path segments (percent-decoded) and query of a request target. Malformed targets (an
 * absolute URL that does not parse, a bad `%` escape) are the client's fault: 400, never a 500.
 */
export function parseTarget(raw: string | undefined): {
  pathname: string
  parts: string[]
  search: URLSearchParams
} {
  let url: URL
  try {
    url = new URL(raw ?? '/', 'http://localhost')
  } catch {
    throw badRequest('malformed request target')
  }
  const parts: string[] = []
  for (const p of url.pathname.split('/')) {
    if (p.length === 0) continue
    try {
      parts.push(decodeURIComponent(p))
    } catch {
      throw badRequest('malformed percent-escape in the path')
    }
  }
  return { pathname: url.pathname, parts, search: url.searchParams }
}
