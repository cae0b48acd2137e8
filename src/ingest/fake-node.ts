/**
 * A fake Solana node for tests and the demo: real JSON-RPC over HTTP on loopback, serving recorded
 * real blocks re-slotted into a longer chain.
 *
 * Templates are archive files (one `{"slot","hash","height","block"}` line per block, optionally
 * gzip; docs/query.md §1). Each produced block takes a template (round robin), optionally a window
 * of `txPerBlock` of its transactions, and gets its own slot, parentSlot, blockhash,
 * previousBlockhash, blockHeight and blockTime; every transaction's signatures are rewritten so
 * that they are unique per use. Templates are kept as raw JSON text and spliced, so every number
 * (u64 balances included) is served exactly as recorded.
 *
 * The chain grows by one produced block every `intervalMs` (slots may be skipped at `skipRate`),
 * finalization lags the confirmed head by `finalityLag` slots, forks replace the newest confirmed
 * (never finalized) blocks by another branch, and faults (HTTP 429, dropped connections, transient
 * "not available yet" answers) are injected at configurable rates. `injectBlockFault` damages the
 * next full `getBlock` answers of one slot: junk transactions under a valid header, `transactions`
 * not a list, transactions without `meta`, instructions that cannot be normalized, an oversize
 * body, or a stall (headers and a few bytes, then nothing).
 *
 * Methods: getSlot, getBlocks, getBlocksWithLimit, getBlock, getBlockHeight, getBlockTime, getHealth,
 * getVersion, getFirstAvailableBlock, getGenesisHash, getLatestBlockhash, minimumLedgerSlot;
 * JSON-RPC batches; errors as JSON-RPC error objects with the node's codes.
 *
 * The parts (src/ingest/fake-node/): templates.ts (template blocks as raw JSON), chain.ts (the chain
 * model: production, skips, finality, forks), render.ts (block answers), methods.ts (the JSON-RPC
 * methods), http.ts (the server side and HTTP faults), faults.ts (damaged getBlock answers),
 * node.ts (`FakeSolanaNode`, the whole).
 */
export { FakeSolanaNode } from './fake-node/node.ts'
export { DEFAULT_TEMPLATE, SAMPLE_TEMPLATE, demoTemplates, readArchiveLines } from './fake-node/templates.ts'
export type { BlockFault, FakeBlockInfo, FakeNodeOptions } from './fake-node/types.ts'
