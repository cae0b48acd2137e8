/**
 * A small JSON-Schema-like checker for the configuration file (src/server/config.ts) and the key
 * file (src/server/access.ts): types, enums, integer ranges, patterns, required keys, no unknown
 * keys, maps and objects tagged by a `kind`. Every error names the path of the wrong value
 * (`datasets[1].source.kind`) and what was expected there.
 */

export type Schema =
  | { type: 'string'; enum?: readonly string[]; pattern?: RegExp; expect?: string }
  | { type: 'integer'; minimum?: number; maximum?: number }
  | { type: 'boolean' }
  | { type: 'array'; items: Schema; minItems?: number }
  | ObjectSchema
  /** an object whose keys are free (matching `keyPattern`) and whose values all follow `values` */
  | { type: 'map'; values: Schema; keyPattern?: RegExp; expect?: string }
  /** an object tagged by `tag`: the tag's value picks the schema of the rest */
  | { type: 'tagged'; tag: string; variants: Record<string, ObjectSchema> }
  /** the first of the schemas whose `type` matches the value's JSON type */
  | { type: 'either'; of: Schema[] }

export interface ObjectSchema {
  type: 'object'
  properties: Record<string, Schema>
  required?: readonly string[]
}

export class SchemaError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path || '(top level)'}: ${reason}`)
    this.name = 'SchemaError'
  }
}

function jsonType(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  return typeof v
}

function shown(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v)
  return s.length > 60 ? `${s.slice(0, 57)}...` : s
}

const isObject = (v: unknown): v is Record<string, unknown> => jsonType(v) === 'object'

function typeMatches(s: Schema, v: unknown): boolean {
  const t = jsonType(v)
  switch (s.type) {
    case 'string':
    case 'boolean':
    case 'array':
      return t === s.type
    case 'integer':
      return t === 'integer' || t === 'number'
    case 'either':
      return s.of.some((x) => typeMatches(x, v))
    default:
      return t === 'object'
  }
}

function typeName(s: Schema): string {
  if (s.type === 'either') return s.of.map(typeName).join(' or ')
  if (s.type === 'map' || s.type === 'tagged') return 'an object'
  return s.type === 'integer' ? 'an integer' : `a${s.type === 'object' || s.type === 'array' ? 'n' : ''} ${s.type}`
}

const at = (path: string, key: string) => (path ? `${path}.${key}` : key)

function checkObject(s: ObjectSchema, v: Record<string, unknown>, path: string, skip?: string): void {
  for (const k of Object.keys(v)) {
    if (k === skip) continue
    if (!(k in s.properties)) {
      const known = Object.keys(s.properties).filter((p) => p !== skip)
      throw new SchemaError(at(path, k), `unknown key (expected one of: ${known.join(', ')})`)
    }
    check(s.properties[k], v[k], at(path, k))
  }
  for (const k of s.required ?? []) if (!(k in v)) throw new SchemaError(at(path, k), 'is required')
}

/** throws a SchemaError naming the first wrong value's path; returns the value, typed by the caller */
export function check(s: Schema, v: unknown, path = ''): void {
  if (!typeMatches(s, v)) throw new SchemaError(path, `must be ${typeName(s)}, got ${shown(v)}`)
  switch (s.type) {
    case 'string': {
      const str = v as string
      if (s.enum && !s.enum.includes(str))
        throw new SchemaError(path, `must be one of ${s.enum.join(', ')}, got ${shown(v)}`)
      if (s.pattern && !s.pattern.test(str))
        throw new SchemaError(path, `must be ${s.expect ?? s.pattern}, got ${shown(v)}`)
      return
    }
    case 'integer': {
      const n = v as number
      const lo = s.minimum ?? 0
      const hi = s.maximum ?? Number.MAX_SAFE_INTEGER
      if (!Number.isSafeInteger(n) || n < lo || n > hi)
        throw new SchemaError(path, `must be an integer in ${lo}..${hi}, got ${shown(v)}`)
      return
    }
    case 'boolean':
      return
    case 'array': {
      const a = v as unknown[]
      if (a.length < (s.minItems ?? 0)) throw new SchemaError(path, `must have at least ${s.minItems} item(s)`)
      a.forEach((x, i) => check(s.items, x, `${path}[${i}]`))
      return
    }
    case 'object':
      return checkObject(s, v as Record<string, unknown>, path)
    case 'map':
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (s.keyPattern && !s.keyPattern.test(k))
          throw new SchemaError(at(path, k), `the key must be ${s.expect ?? s.keyPattern}`)
        check(s.values, x, at(path, k))
      }
      return
    case 'tagged': {
      const o = v as Record<string, unknown>
      const kinds = Object.keys(s.variants)
      if (!(s.tag in o)) throw new SchemaError(at(path, s.tag), `is required (one of ${kinds.join(', ')})`)
      const kind = o[s.tag]
      if (typeof kind !== 'string' || !kinds.includes(kind))
        throw new SchemaError(at(path, s.tag), `must be one of ${kinds.join(', ')}, got ${shown(kind)}`)
      return checkObject(s.variants[kind], o, path, s.tag)
    }
    case 'either':
      return check(
        s.of.find((x) => typeMatches(x, v))!,
        v,
        path,
      )
  }
}

/** `check`, then the value as `T` */
export function validate<T>(s: Schema, v: unknown): T {
  check(s, v)
  return v as T
}

export { isObject }
