/**
 * Addresses and clients of S3-compatible object storage: `s3://BUCKET/PREFIX` parsed and checked,
 * plain file names from a bucket, the client from the standard environment variables.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3'
import { safeJson } from '../util/safe-json.ts'

export interface S3Location {
  bucket: string
  /** without leading or trailing slash; '' = the bucket's root */
  prefix: string
}

export function isS3Url(s: string): boolean {
  return s.startsWith('s3://')
}

/** a bucket name as S3 allows it (3-63 letters, digits, dots, hyphens, underscores; no `..`) */
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/

/**
 * `s3://BUCKET/PREFIX` with a plain bucket name and a prefix of plain path segments: no `.` or
 * `..` segment, no empty one (`a//b`), no backslash or control character, so two addresses that
 * differ name different objects and a staging directory named after one stays inside its root.
 */
export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]*)\/?(.*)$/.exec(url)
  const bad = (why: string) => new Error(`not a usable s3://BUCKET/PREFIX address (${why}): ${safeJson(url)}`)
  if (!m) throw bad('it does not start with s3://')
  if (!BUCKET.test(m[1]) || m[1].includes('..')) throw bad('the bucket is not a plain bucket name')
  const prefix = m[2].replace(/\/+$/, '')
  if (prefix) {
    for (const seg of prefix.split('/')) {
      if (seg === '' || seg === '.' || seg === '..') throw bad(`the prefix has a '${seg}' path segment`)
      if (/[\\\x00-\x1f\x7f]/.test(seg)) throw bad('the prefix has a backslash or a control character')
    }
  }
  return { bucket: m[1], prefix }
}

/** a file name from the bucket: letters, digits, `.`, `_`, `-`, not starting with a dot (no `..`) */
const PLAIN_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/

/**
 * `name` (read from object `where`, field `field`) when it is a plain file name, the only kind a
 * replica or an import writes into its directories; else an error naming the object and field.
 */
export function plainName(name: unknown, where: string, field: string): string {
  if (typeof name === 'string' && PLAIN_NAME.test(name)) return name
  throw new Error(`${where}: ${field} ${safeJson(name)} is not a plain file name (refused)`)
}

/** the client from the standard variables (AWS_REGION, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...) */
export function s3ClientFromEnv(env: NodeJS.ProcessEnv = process.env): S3Client {
  const cfg: S3ClientConfig = {
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    // one attempt per request: the retries are ours (S3Dataset), each timed out and logged
    maxAttempts: 1,
  }
  // the keys of `env` (the SDK's own chain reads process.env only)
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
    cfg.credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      sessionToken: env.AWS_SESSION_TOKEN,
    }
  if (env.AWS_ENDPOINT_URL) {
    cfg.endpoint = env.AWS_ENDPOINT_URL
    cfg.forcePathStyle = true
  }
  return new S3Client(cfg)
}
