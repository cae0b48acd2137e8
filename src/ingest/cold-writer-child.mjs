// Entry of the cold store writer process (cold-writer-child.ts): it registers tsx itself, as the CLI
// does (bin/solportal.js), so the process needs no node options from its parent.
import { register } from 'tsx/esm/api'
register()
const { runColdWriter } = await import('./cold-writer-child.ts')
await runColdWriter(process.argv[2])
