/**
 * A cheap byte scan of a request body before JSON.parse: how deep it nests and how many values it
 * holds. JSON.parse of an 8 MB body of `[[[[…` or of `[[],[],…]` holds the event loop for seconds
 * (it allocates one array per bracket); a query nests a handful of levels and holds one container
 * per item request and filter list, so bodies far outside that shape are refused with a 400 naming
 * the limit before any parsing. One pass over the characters, no allocation.
 */

export interface JsonShapeLimits {
  /** deepest nesting of arrays and objects */
  maxDepth: number
  /** arrays and objects in all */
  maxContainers: number
  /** values in all (array elements and object members, containers included) */
  maxValues: number
}

/** A query nests 5 levels at most (query, item requests, a request, a filter list, ...). */
export const MAX_JSON_DEPTH = 32

/**
 * The limits for a server's query limits: each item request is an object holding a few filter
 * lists (at most ~20 fields), each list at most `maxFilterValues` values.
 */
export function jsonShapeLimits(o: { maxItemRequests: number; maxFilterValues: number }): JsonShapeLimits {
  return {
    maxDepth: MAX_JSON_DEPTH,
    maxContainers: Math.max(10_000, o.maxItemRequests * 64),
    maxValues: Math.max(1_000_000, o.maxFilterValues * 4 + o.maxItemRequests * 64),
  }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c

/**
 * The reason `text` is refused (nesting deeper than `maxDepth`, more containers or values than
 * allowed), or null. Not a validator: a body that passes may still be invalid JSON for JSON.parse.
 */
export function jsonShapeError(text: string, lim: JsonShapeLimits): string | null {
  let depth = 0
  let containers = 0
  let values = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // skip the string (an escape takes the next character with it)
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i)
        if (d === BACKSLASH) i++
        else if (d === QUOTE) break
      }
    } else if (c === 0x5b || c === 0x7b) {
      // [ or {
      if (++depth > lim.maxDepth)
        return `request body nests JSON deeper than ${lim.maxDepth} levels (JSON nesting limit)`
      if (++containers > lim.maxContainers)
        return `request body holds more than ${lim.maxContainers} JSON arrays and objects (limit: 64 per item request, at least 10000; see --max-item-requests)`
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    } else if (c === COMMA) {
      if (++values > lim.maxValues)
        return `request body holds more than ${lim.maxValues} JSON values (limit: 4 per filter value allowed, at least 1000000; see --max-filter-values)`
    }
  }
  return null
}
