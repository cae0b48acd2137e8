/**
 * Following a Solana node over HTTP JSON-RPC.
 *
 * `RpcClient` does single calls with transport-level retries (exponential backoff with full
 * jitter): dropped connections, timeouts, stalls (no byte received for `stallTimeoutMs`), HTTP 429
 * (honouring `Retry-After`), HTTP 5xx and "node unhealthy" (-32005). JSON-RPC errors are otherwise
 * returned to the caller as `RpcError`. Answers are read as a stream and abandoned as soon as they
 * exceed `maxResponseBytes` (`ResponseTooLargeError`, not retried by the client): an answer is
 * never held whole in memory beyond the cap.
 *
 * `RpcSource` turns the node into a stream of produced blocks in slot order: it lists produced
 * slots with `getBlocks` (skipped slots are not blocks), fetches them with `getBlock` with a
 * configurable number of requests in flight, and delivers them in order; once caught up, it asks
 * for the next slot's block directly and lists only when the node has none there (yet). The node's answers for
 * a slot that is not a block:
 *   -32007 SLOT_SKIPPED                      the slot was skipped (or lost to a ledger jump) → no block
 *   -32009 LONG_TERM_STORAGE_SLOT_SKIPPED    the same, answered from long-term storage → no block
 *   -32004 BLOCK_NOT_AVAILABLE               the node has no block for the slot (yet) at this
 *                                            commitment → retry with backoff
 *   -32014 BLOCK_STATUS_NOT_AVAILABLE_YET    the slot's status is not known yet → retry with backoff
 *   -32001 BLOCK_CLEANED_UP                  below the node's first available block → error
 *   -32015 UNSUPPORTED_TRANSACTION_VERSION   the block holds a transaction of a version above the
 *                                            request's `maxSupportedTransactionVersion` (1) →
 *                                            `UnsupportedTransactionVersionError` naming the slot
 *                                            and the version: never taken for a skipped slot
 * A `null` result (older nodes, "not confirmed yet") is retried like -32004. An answer over the size
 * cap is delivered as a `malformed` event (the ingester refetches it, then gives up).
 * `checkBlockShape` is the structural check of a full `getBlock` answer that the ingester applies
 * before normalizing (a damaged answer must be refetched, never stored with fewer transactions).
 *
 * Responses are parsed with `parseJsonExact`: u64 values above 2^53 arrive as decimal strings.
 *
 * The parts (src/ingest/rpc/): errors.ts (codes, errors, waits), http.ts (one HTTP exchange),
 * client.ts (`RpcClient`), shape.ts (`checkBlockShape`), source.ts (`RpcSource`).
 */
export * from './rpc/errors.ts'
export { SHARED_BODY_MIN_BYTES } from './rpc/http.ts'
export * from './rpc/client.ts'
export * from './rpc/shape.ts'
export * from './rpc/source.ts'
