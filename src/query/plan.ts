/**
 * A query's plan: per kind of the dataset that the query renders, its requests, the relations
 * adding rows to it and its compiled writers; the relations to run; memory reused across chunks.
 */
import type { FieldDef, RelationDecl } from '../dataset/types.ts'
import type { ItemRequest, ParsedQuery, SelectedField } from './parse.ts'
import {
  compileByteWriter,
  compileWriter,
  selectedDefs,
  type ByteWriterFactory,
  type ColumnTake,
  type WriterFactory,
} from './render.ts'
import type { MaskMemory } from './select.ts'

export interface KindPlan {
  kind: string
  /** `,"<member>":[` */
  open: string
  requests: ItemRequest[]
  /** relations of the query that add rows of this kind */
  incoming: RelationDecl[]
  defs: FieldDef[]
  fields: readonly SelectedField[]
  writer: WriterFactory
  /** `open` as bytes */
  openBytes: Uint8Array
  /** byte writers by the way each column is taken (`takesKey`): looked up once per chunk */
  byteWriters: Map<string, ByteWriterFactory>
}

export interface Plan {
  kinds: KindPlan[]
  byKind: Map<string, KindPlan>
  relations: RelationDecl[]
  headerDefs: FieldDef[]
  headerWriter: WriterFactory
  /** the header as bytes (its values taken as they are) */
  headerBytes: ByteWriterFactory
  /** per request: candidate row buffer reused across chunks (one execution only) */
  scratch: Map<ItemRequest, Int32Array>
  /** per kind: the memory of the selection mask, reused across chunks (one chunk's at a time) */
  masks: Map<string, MaskMemory>
}

/** the plan of a query: the dataset's kinds in block member order, those the query selects rows of */
export function makePlan(q: ParsedQuery, bigintsAsNumbers: boolean): Plan {
  const relations: RelationDecl[] = []
  for (const r of q.requests) for (const rel of r.relations) if (!relations.includes(rel)) relations.push(rel)
  const kinds: KindPlan[] = []
  const byKind = new Map<string, KindPlan>()
  for (const { kind, member } of q.dataset.tables) {
    const requests = q.requests.filter((r) => r.kind === kind)
    const incoming = relations.filter((r) => r.to === kind)
    if (requests.length === 0 && incoming.length === 0) continue
    const fields = q.fields[kind]
    const open = ',' + JSON.stringify(member) + ':['
    const kp: KindPlan = {
      kind,
      open,
      requests,
      incoming,
      defs: selectedDefs(fields),
      fields,
      writer: compileWriter(fields, bigintsAsNumbers),
      openBytes: Buffer.from(open),
      byteWriters: new Map(),
    }
    kinds.push(kp)
    byKind.set(kind, kp)
  }
  const headerDefs = selectedDefs(q.fields.block)
  return {
    kinds,
    byKind,
    relations,
    headerDefs,
    headerWriter: compileWriter(q.fields.block, bigintsAsNumbers),
    headerBytes: compileByteWriter(
      q.fields.block,
      bigintsAsNumbers,
      headerDefs.map(() => false),
    ),
    scratch: new Map(),
    masks: new Map(),
  }
}

/** the plan's byte writer for columns taken as `takes` (compiled, or found in the writers' cache, once per plan) */
export function byteWriterOf(kp: KindPlan, bigintsAsNumbers: boolean, takes: readonly ColumnTake[]): ByteWriterFactory {
  let key = ''
  for (const t of takes) key += (t === false ? '-' : t === true ? '+' : t) + '\u0001'
  let w = kp.byteWriters.get(key)
  if (w === undefined) {
    w = compileByteWriter(kp.fields, bigintsAsNumbers, takes)
    kp.byteWriters.set(key, w)
  }
  return w
}
