/**
 * The query engine: validate → plan → execute → render (semantics.md §2–§4).
 */
export { QueryError } from './errors.ts'
export { parseQuery, DEFAULT_LIMITS } from './parse.ts'
export type { QueryLimits, ParsedQuery, ItemRequest, CompiledFilter, Selection, SelectedField } from './parse.ts'
export { executeQuery } from './execute.ts'
export type { ExecuteOptions, OutputBlock } from './execute.ts'
