/**
 * The query engine: validate → plan → execute → render (docs/query.md §2–§4).
 *
 * - `spec.ts`     the Solana dataset as a declaration: item requests with their filters, and the
 *                 relation table {from kind, flag, to kind, join}; nothing else names a filter or
 *                 a relation.
 * - `parse.ts`    `parseQuery`: strict validation (400 reasons naming the member) into a
 *                 plan-ready `ParsedQuery` (compiled filters with Sets, relations, field selection
 *                 resolved against the catalogue).
 * - `execute.ts`  `executeQuery`: per chunk, clip to the range with `blockOffsets`, prune requests
 *                 with `mayContain`, evaluate filters column-wise into candidate row lists, run the
 *                 relations with one generic join planner, mark selected rows in per-kind masks,
 *                 then render block by block (one chunk held at a time).
 * - `render.ts`   JSON writers compiled once per (kind, selection) with `new Function`, writing
 *                 text straight from the columns (no objects).
 *
 * Decisions where the spec is silent (docs/query.md §6):
 * - An absent `fields` selects nothing: every record, the header included, renders as `{}`
 *   (the reference's default field selection; the defaults some Portal documents declare are not applied).
 * - `null` is accepted as "absent" for the optional members the reference types as optional
 *   (`toBlock`, `parentBlockHash`, every filter list, `isCommitted`); elsewhere it is a type error.
 * - A request with an empty filter list matches nothing (its relations add nothing).
 * - `OutputBlock.empty` (extra member): true when the block holds no selected row and is output
 *   only as a range boundary (never with `includeAllBlocks`).
 */
export { QueryError } from './errors.ts'
export { parseQuery, DEFAULT_LIMITS } from './parse.ts'
export type { QueryLimits, ParsedQuery, ItemRequest, CompiledFilter, Selection, SelectedField } from './parse.ts'
export { executeQuery } from './execute.ts'
export type { ExecuteOptions, OutputBlock } from './execute.ts'
