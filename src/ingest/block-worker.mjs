// Entry of a block decoding worker thread (block-worker.ts) under tsx, which worker threads do not
// inherit when the CLI registered it programmatically (bin/solportal.js).
import { register } from 'tsx/esm/api'
register()
await import('./block-worker.ts')
