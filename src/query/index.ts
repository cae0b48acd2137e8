/**
 * The query engine: validate → plan → execute → render (docs/query.md §2–§4).
 *
 * The dataset is a declaration (src/dataset/types.ts; Solana's in src/dataset/solana.ts) carried by
 * the parsed query: no module here names a kind, a column or a filter of its own.
 *
 * - `parse.ts`    `parseQuery`: strict validation (400 reasons naming the member) into a
 *                 plan-ready `ParsedQuery` (compiled filters with Sets, relations, field selection
 *                 resolved against the declaration).
 * - `plan.ts`     the kinds the query renders (in block member order), their requests, incoming
 *                 relations and compiled writers.
 * - `chunk-run.ts` per chunk: prune requests with `mayContain`, evaluate filters column-wise into
 *                 candidate rows (`filter.ts`), run the relations on their key columns (`join.ts`),
 *                 mark selected rows in per-kind masks (`select.ts`).
 * - `emit.ts`     selected rows bound to the columns and writers they render from; a block's line
 *                 written as bytes or as a string.
 * - `execute.ts`  `executeQuery`: per chunk plan, select, emit, then the one render loop over its
 *                 blocks (one chunk held at a time; pauses timed by `slicer.ts`).
 * - `render.ts`, `render-bytes.ts`, `render-values.ts`  JSON writers compiled once per (kind,
 *                 selection) with `new Function`, writing text straight from the columns (no objects).
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
