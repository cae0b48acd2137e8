#!/usr/bin/env bash
# Whirlpool swaps with their transactions, streamed from a Portal dataset with nothing but curl
# and jq, written from the interface spec alone:
#   - POST a DataQuery to {dataset}/stream; the answer is JSON lines, one block per line;
#   - the server may end a response early: resume from the last block's number + 1, passing its
#     hash as parentBlockHash (a 409 means the chain changed under us);
#   - the range is complete when the block `toBlock` arrives, or on an empty 200.
#
# usage: examples/whirlpool-swaps.sh [DATASET_URL] [FROM] [TO]
#   DATASET_URL defaults to http://localhost:3000/datasets/solana-mainnet
# prints one tab-separated line per swap: slot, signature, instruction address, accounts[0..2]
set -euo pipefail
BASE=${1:-http://localhost:3000/datasets/solana-mainnet}
FROM=${2:-$(curl -sf "$BASE/metadata" | jq -r .start_block)}
TO=${3:-$(curl -sf "$BASE/head" | jq -r .number)}
WHIRLPOOL=whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc
SWAP=0xf8c69e91e17587c8   # Anchor discriminator of Whirlpool `swap`
PARENT=""
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT

while [ "$FROM" -le "$TO" ]; do
  QUERY=$(jq -cn --argjson from "$FROM" --argjson to "$TO" --arg parent "$PARENT" \
    --arg program "$WHIRLPOOL" --arg d8 "$SWAP" '{
      type: "solana", fromBlock: $from, toBlock: $to,
      fields: {
        block: {number: true, hash: true},
        transaction: {transactionIndex: true, signatures: true},
        instruction: {transactionIndex: true, instructionAddress: true, accounts: true}
      },
      instructions: [{programId: [$program], d8: [$d8], isCommitted: true, transaction: true}]
    } + (if $parent == "" then {} else {parentBlockHash: $parent} end)')
  STATUS=$(curl -s --compressed -o "$TMP" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "$QUERY" "$BASE/stream")
  case "$STATUS" in
    200) ;;
    204) break ;;                        # nothing above the head yet
    409) echo "fork at $FROM: $(cat "$TMP")" >&2; exit 3 ;;
    *) echo "HTTP $STATUS: $(cat "$TMP")" >&2; exit 2 ;;
  esac
  [ -s "$TMP" ] || break                 # empty 200: the range holds no more blocks
  # each swap with its transaction's first signature
  jq -r '.header.number as $slot
    | (.transactions // []) as $txs
    | (.instructions // [])[]
    | . as $ix
    | ($txs[] | select(.transactionIndex == $ix.transactionIndex) | .signatures[0]) as $sig
    | [$slot, $sig, ($ix.instructionAddress | map(tostring) | join(".")), ($ix.accounts[0:3] | join(","))]
    | @tsv' "$TMP"
  LAST=$(tail -n 1 "$TMP")
  FROM=$(( $(jq -r .header.number <<<"$LAST") + 1 ))
  PARENT=$(jq -r .header.hash <<<"$LAST")
done
