// Entry of the cold store writer thread (cold-writer-worker.ts) under tsx, which worker threads do
// not inherit when the CLI registered it programmatically (bin/solportal.js).
import { register } from 'tsx/esm/api'
register()
await import('./cold-writer-worker.ts')
