import { StaticStore } from '../src/store/static.ts'
import { runConformance } from './support/conformance.ts'

// small chunks so that ranges and relations cross chunk boundaries
runConformance('StaticStore (chunks of 5)', async (blocks) => new StaticStore(blocks, 5))
runConformance('StaticStore (chunks of 64)', async (blocks) => new StaticStore(blocks, 64))
