/**
 * What a node's JSON-RPC answers mean to the client and the source: the error codes of a slot that
 * is not a block, the errors thrown (JSON-RPC errors, an unsupported transaction version, an
 * answer over the size cap, transient failures) and the abortable waits between retries.
 */

export type Commitment = 'processed' | 'confirmed' | 'finalized'

export const RPC_BLOCK_CLEANED_UP = -32001
export const RPC_BLOCK_NOT_AVAILABLE = -32004
export const RPC_NODE_UNHEALTHY = -32005
export const RPC_SLOT_SKIPPED = -32007
export const RPC_LONG_TERM_STORAGE_SLOT_SKIPPED = -32009
export const RPC_BLOCK_STATUS_NOT_AVAILABLE_YET = -32014
export const RPC_UNSUPPORTED_TRANSACTION_VERSION = -32015

/** A JSON-RPC error object returned by the node. */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
    readonly data?: unknown,
  ) {
    super(`${method}: JSON-RPC error ${code}: ${rpcMessage}`)
    this.name = 'RpcError'
  }
}

/**
 * The version of transaction this client asks for (`maxSupportedTransactionVersion`): legacy, v0
 * and v1 (SIMD-0385, on mainnet since epoch 1035).
 */
export const MAX_SUPPORTED_TRANSACTION_VERSION = 1

/**
 * The node answered -32015 for a block: it holds a transaction of a version this client does not
 * ask for. The block cannot be read whole, so the source stops (a block lost quietly is worse
 * than a visible stop); `version` is the one the node reported (null when its message names none).
 */
export class UnsupportedTransactionVersionError extends Error {
  constructor(
    readonly slot: number,
    readonly version: number | null,
    readonly rpcMessage: string,
  ) {
    super(
      `slot ${slot}: the node holds a transaction of version ${version ?? '(not named)'}, above the ` +
        `maxSupportedTransactionVersion ${MAX_SUPPORTED_TRANSACTION_VERSION} this version of solportal reads ` +
        `(JSON-RPC error ${RPC_UNSUPPORTED_TRANSACTION_VERSION}: ${rpcMessage}); stopped rather than skip the block`,
    )
    this.name = 'UnsupportedTransactionVersionError'
  }

  /** from the node's -32015 error for `slot` ("Transaction version (N) is not supported ...") */
  static of(slot: number, e: RpcError): UnsupportedTransactionVersionError {
    const m = /version \((\d+)\)/.exec(e.rpcMessage)
    return new UnsupportedTransactionVersionError(slot, m ? Number(m[1]) : null, e.rpcMessage)
  }
}

/** An answer larger than the client's `maxResponseBytes`: abandoned while reading, not retried. */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly method: string,
    readonly limit: number,
  ) {
    super(`${method}: answer larger than the ${Math.round(limit / 1024 / 1024)} MiB cap (abandoned while reading)`)
    this.name = 'ResponseTooLargeError'
  }
}

/** A transport failure that is worth retrying (connection, timeout, 429, 5xx). */
export class TransientRpcError extends Error {
  constructor(
    message: string,
    /** server-requested delay (Retry-After), ms */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'TransientRpcError'
  }
}

/** what a call is about, for logs: `getBlock slot 123`, `getBlocks 10..20`, `getSlot` */
export function describeCall(method: string, params: unknown[]): string {
  if (method === 'getBlock' && typeof params[0] === 'number') return `getBlock slot ${params[0]}`
  if (method === 'getBlocks' && typeof params[0] === 'number') return `getBlocks ${params[0]}..${params[1]}`
  return method
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal))
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      reject(abortError(signal!))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export function abortError(signal: AbortSignal): Error {
  const r = signal.reason
  if (r instanceof Error) return r
  const e = new Error('aborted')
  e.name = 'AbortError'
  return e
}

export function isAbortError(e: unknown): boolean {
  return e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError')
}
