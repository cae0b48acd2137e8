/** the wall clock in ms with sub-ms precision, comparable across threads (stage timings) */
export const wallNow = (): number => performance.timeOrigin + performance.now()
