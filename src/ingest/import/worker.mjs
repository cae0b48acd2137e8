// Entry of an import worker thread (worker.ts) under tsx, which worker threads do not inherit
// when the CLI registered it programmatically (bin/solportal.js).
import { register } from 'tsx/esm/api'
register()
await import('./worker.ts')
