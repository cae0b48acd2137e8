/** A real S3 server (s3rver) on loopback for the object-storage tests, and the client settings for it. */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'

export interface S3rverInstance {
  run(): Promise<AddressInfo>
  close(): Promise<void>
  httpServer: Server
}
type S3rverCtor = new (o: Record<string, unknown>) => S3rverInstance
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor

/** s3rver storing into `directory` on `port` (0: any), creating the bucket `bucket` when asked */
export async function startS3(
  directory: string,
  port = 0,
  bucket = false,
): Promise<{ s3: S3rverInstance; port: number }> {
  const s3 = new S3rver({
    address: '127.0.0.1',
    port,
    silent: true,
    directory,
    ...(bucket ? { configureBuckets: [{ name: 'bucket' }] } : {}),
  })
  const a = await s3.run()
  return { s3, port: a.port }
}

export async function stopS3(s3: S3rverInstance): Promise<void> {
  s3.httpServer.closeAllConnections()
  await s3.close()
}

/** the standard variables that point the S3 client at `port` on loopback with s3rver's keys */
export function s3Env(port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
  }
}
