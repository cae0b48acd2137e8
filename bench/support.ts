/** Helpers shared by the benches. Field lists come from the one field catalogue. */
import { fieldsOf, SELECTOR_NAMES, type SelectorName } from '../src/catalogue.ts'

/** a selector choosing every field of `selector` (first spelling of each) */
export function allFields(selector: SelectorName): Record<string, true> {
  return Object.fromEntries(fieldsOf(selector).map((f) => [f.selectors[0], true]))
}

/** a `fields` object choosing every field of every selector */
export function everyField(): Record<string, Record<string, true>> {
  return Object.fromEntries(SELECTOR_NAMES.map((s) => [s, allFields(s)]))
}
