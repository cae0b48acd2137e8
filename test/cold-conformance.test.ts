// The backend-agnostic query conformance suite on the on-disk cold store (via a dataset directory).
import { runConformance } from './support/conformance.ts'
import { datasetOf } from './support/cold/util.ts'

// small chunks so that ranges and relations cross chunk boundaries; mixed append sizes leave
// sealed chunks, merged tails and small unsealed chunks
runConformance('DiskColdStore (chunks of 7, appends of 1..10)', (blocks) =>
  datasetOf(blocks, { targetBlocks: 7, fanout: 3 }, [1, 3, 10, 2]),
)
runConformance('DiskColdStore (one bulk append, compressed)', (blocks) =>
  datasetOf(blocks, { targetBlocks: 64, compress: true }),
)
