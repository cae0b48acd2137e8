/**
 * Live ingest: a Solana node followed into the real-time dataset (src/store/realtime-store.ts: a
 * finalized ColdStore below a fork-aware HotStore).
 *
 *  - `RealtimeIngester`: RpcSource → normalize → HotStore (EXTEND/REPLACE, fork resolution against
 *    the node) → finalization (hot → cold, in order) with start()/stop().
 *  - `createRealtimeDataset(...)`: everything wired, for the server's `--rpc URL`;
 *    `createDemoDataset(...)`: the same over an in-process fake node, for `--demo`.
 *
 * Decisions where the specs are silent: forks are resolved by walking the node's parent links
 * (getBlock headers) down to a block we store, then re-fetching above it, so a fork is one atomic
 * REPLACE (the old branch stays readable until the new one attaches); a fork reaching at or below
 * the finalized block is refused and retried (logged), never applied; finality reports are
 * verified by fetching the finalized header at the stored block's slot; finalized blocks live only
 * in the cold store, so `finalizedHead()` is the cold store's last block.
 *
 * The parts (src/ingest/realtime/): types.ts (logger, block source, options), ingester.ts
 * (`RealtimeIngester`), dataset.ts (`createRealtimeDataset`), demo.ts (`createDemoDataset`).
 */
export * from './realtime/types.ts'
export { RealtimeIngester } from './realtime/ingester.ts'
export * from './realtime/dataset.ts'
export * from './realtime/demo.ts'
