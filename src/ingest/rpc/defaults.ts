/**
 * Defaults of the JSON-RPC client's limits: here so that `serve`
 * shows them in its help and checks its flags without loading the client.
 */

/** answers above this size are abandoned while reading (bytes) */
export const DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024
/** a request that receives no byte for this long is abandoned and retried (ms) */
export const DEFAULT_STALL_TIMEOUT_MS = 10_000
