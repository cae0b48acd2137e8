/**
 * `solportal import s3://BUCKET/PREFIX ...`: the import (pipeline.ts) into a local staging
 * directory, then published to the bucket (src/store/s3.ts).
 */
import { runImport } from './pipeline.ts'
import type { ImportOptions, ImportResult } from './types.ts'

/**
 * `solportal import s3://BUCKET/PREFIX ...`: import into a local staging directory (fetched from the
 * bucket first when it holds nothing yet), then publish the new objects and the pointer last
 * (src/store/s3.ts). An interrupted import publishes what became durable.
 */
export async function importToS3(
  url: string,
  archives: string[],
  opts: ImportOptions & {
    stagingDir?: string
    client?: import('@aws-sdk/client-s3').S3Client
    /** attempts, backoff and timeout of each object-store request */
    retry?: import('../../store/s3.ts').RetryOptions
  },
  log: (s: string) => void = (s) => process.stderr.write(s),
): Promise<ImportResult & { uploaded: number; bytes: number }> {
  const s3 = await import('../../store/s3.ts')
  const loc = s3.parseS3Url(url) // before any client or directory
  const ds = new s3.S3Dataset(opts.client ?? s3.s3ClientFromEnv(), loc, {
    ...opts.retry,
    log: (m, level) => {
      if (level !== 'debug') log(m + '\n')
    },
  })
  const dir = opts.stagingDir ?? s3.defaultStagingDir(url)
  if (await s3.pullDataset(ds, dir)) log(`fetched the dataset of ${url} into ${dir}\n`)
  const r = await runImport(dir, archives, opts, log)
  const p = await s3.publishDataset(dir, ds)
  log(`published to ${url} (staging ${dir}): ${p.uploaded} objects, ${p.bytes} bytes\n`)
  return { ...r, ...p }
}
