/**
 * The bulk import of `solportal import` (pipeline.ts): archive and Old Faithful CAR files, or a
 * node's blocks, normalized into a dataset directory's chunk files, resumably.
 */
export { defaultWorkers } from './backend.ts'
export { runImport } from './pipeline.ts'
export { importToS3 } from './s3.ts'
export {
  ImportError,
  type EncodedBatch,
  type ImportBackend,
  type ImportInput,
  type ImportOptions,
  type ImportResult,
  type InputItem,
} from './types.ts'
